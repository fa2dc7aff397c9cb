"""Issue #18 regression tests: each hostile file is generated here, and `torchless` must give
its stated exit code and message within a memory limit and a timeout (hostile.run_limited).

    hostile_test.py TORCHLESS_BIN WORK_DIR [CASE_SUBSTRING]

Prints one line per case and exits 1 when any case fails.
"""
import os
import sys
import traceback

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hostile  # noqa: E402
from hostile import (module_pickle, module_source, run_limited, shared_lists,  # noqa: E402
                     shared_tuples, write_archive)

CASES = []


def case(fn):
    CASES.append(fn)
    return fn


class Ctx:
    def __init__(self, bin_, work):
        self.bin = bin_
        self.work = work

    def path(self, name):
        return os.path.join(self.work, name)

    def cli(self, *args, **kw):
        return run_limited([self.bin, *args], **kw)

    def expect(self, args, status, message=None, stdout=None, **kw):
        """Runs the CLI; checks the status, that `message` is in stderr's first line, and that
        `stdout` (if given) is in stdout."""
        r, out, err = self.cli(*args, **kw)
        first = err.split("\n", 1)[0]
        what = " ".join(os.path.basename(a) for a in args)
        if r != status:
            raise AssertionError(f"`{what}`: status {r}, expected {status}; stderr: {err[-600:]}")
        if message is not None and message not in first:
            raise AssertionError(f"`{what}`: first stderr line {first!r} lacks {message!r}")
        if stdout is not None and stdout not in out:
            raise AssertionError(f"`{what}`: stdout lacks {stdout!r}: {out[-600:]}")
        return out, err


FORWARD = "  def forward(self: __torch__.M, x: Tensor) -> Tensor:\n    return x\n"


def npy_ones(ctx):
    """A 2x3 float32 .npy, written by hand (no numpy needed)."""
    p = ctx.path("x.npy")
    header = "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }"
    header += " " * (63 - len(header) % 64) + "\n"
    import struct
    with open(p, "wb") as f:
        f.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header.encode())
        f.write(struct.pack("<6f", *([1.0] * 6)))
    return p


# ---- part 1: shared pickle values ------------------------------------------------------------

def bomb_archive(ctx, name, emit, annotation="Any", training=True, body=FORWARD):
    p = ctx.path(name)
    data = module_pickle("M", [("v", emit(100))])
    if not training:
        data = data.replace(b"training\x88", b"training\x89", 1)
    write_archive(p, {"__torch__.py": module_source("M", [("v", annotation)], body)}, data)
    return p


@case
def shared_tuple_attribute(ctx):
    """2^100 leaves as a tuple DAG in an `Any` attribute: every command is linear in the DAG."""
    p = bomb_archive(ctx, "bomb_tuple.pt", shared_tuples)
    ctx.expect(["info", p], 0, stdout="__torch__.M")
    ctx.expect(["code", p], 0, stdout="v : Any")
    ctx.expect(["graph", p], 0, stdout="graph(")
    x = npy_ones(ctx)
    ctx.expect(["run", p, x, "--output-dir", ctx.path("out_tuple")], 0)
    q = bomb_archive(ctx, "bomb_tuple_eval.pt", shared_tuples, training=False)
    ctx.expect(["freeze", q, "-o", ctx.path("frozen_tuple.pt")], 0)


@case
def shared_list_attribute(ctx):
    """The same with lists."""
    p = bomb_archive(ctx, "bomb_list.pt", shared_lists)
    ctx.expect(["info", p], 0, stdout="__torch__.M")
    ctx.expect(["code", p], 0)
    ctx.expect(["graph", p], 0)
    x = npy_ones(ctx)
    ctx.expect(["run", p, x, "--output-dir", ctx.path("out_list")], 0)
    q = bomb_archive(ctx, "bomb_list_eval.pt", shared_lists, training=False)
    ctx.expect(["freeze", q, "-o", ctx.path("frozen_list.pt")], 0)


@case
def shared_tuple_dict_key(ctx):
    """The shared tuple as a dict key: hashing and comparing it is linear in the DAG."""
    def emit(levels):
        def e(p):
            p.op(b"}(")  # EMPTY_DICT MARK
            shared_tuples(levels)(p)
            p.int_(1)
            shared_tuples(levels, memo_base=5000)(p)  # an equal key built apart: compared
            p.int_(2)
            p.op(b"u")  # SETITEMS
        return e
    p = bomb_archive(ctx, "bomb_dict.pt", emit)
    ctx.expect(["info", p], 0, stdout="__torch__.M")
    x = npy_ones(ctx)
    ctx.expect(["run", p, x, "--output-dir", ctx.path("out_dict")], 0, stdout="out0.npy")


def main():
    bin_, work = sys.argv[1], sys.argv[2]
    only = sys.argv[3] if len(sys.argv) > 3 else ""
    os.makedirs(work, exist_ok=True)
    ctx = Ctx(bin_, work)
    failed = 0
    for fn in CASES:
        if only and only not in fn.__name__:
            continue
        try:
            fn(ctx)
            print(f"PASS {fn.__name__}")
        except Exception as e:  # noqa: BLE001 - report every case
            failed += 1
            print(f"FAIL {fn.__name__}: {e}")
            if not isinstance(e, AssertionError):
                traceback.print_exc()
    print(f"{failed} failed" if failed else "all passed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
