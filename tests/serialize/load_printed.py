"""For each archive listed in LIST (one path a line): torch.jit.load it and write the forward
graph to <archive without .pt>.graph.txt, or the error to .error.txt. Always exits 0 unless
the list cannot be read; tests/serialize/python_print_test.cpp reads the files."""
import os
import sys

import torch


def main():
    with open(sys.argv[1]) as f:
        paths = [line.strip() for line in f if line.strip()]
    for path in paths:
        stem = path[:-3]
        try:
            m = torch.jit.load(path)
            with open(stem + ".graph.txt", "w") as out:
                out.write(str(m.forward.graph))
            if os.path.exists(stem + ".error.txt"):
                os.remove(stem + ".error.txt")
        except Exception as e:  # noqa: BLE001 - reported to the gtest
            with open(stem + ".error.txt", "w") as out:
                out.write(str(e))
    return 0


if __name__ == "__main__":
    sys.exit(main())
