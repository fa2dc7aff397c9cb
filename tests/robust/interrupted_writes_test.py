"""Issue #18 part 8: a write killed mid-way leaves nothing behind (Note [Atomic writes],
src/core/atomic_file.h).

    interrupted_writes_test.py TORCHLESS_BIN WORK_DIR

Writes a TorchScript module with ~200 MB of parameters (real PyTorch), then runs `torchless
freeze` and `torchless export` (plain and with external data) into a directory of their own,
and sends SIGINT, SIGTERM or SIGKILL as soon as the process holds an open file in that
directory (the unnamed O_TMPFILE file, or the named fallback `NAME.tmpPID`). Afterwards the
directory must hold exactly what it held before: nothing, or the old target with its old bytes.
The fallback (TORCHLESS_NO_O_TMPFILE=1) is checked for SIGINT and SIGTERM (its handler unlinks
the temporary; only SIGKILL can leave it there, as the Note says).

A trial whose process finished before the signal landed does not count; each (command, mode,
signal) must be interrupted at least once in a few tries, or the test fails.
"""
import hashlib
import os
import resource
import shutil
import signal
import subprocess
import sys
import time

MEMORY = 4 << 30
TRIES = 4


def make_model(path):
    import torch

    class Big(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.layers = torch.nn.ModuleList([torch.nn.Linear(4096, 4096) for _ in range(3)])

        def forward(self, x):
            for layer in self.layers:
                x = layer(x)
            return x

    m = torch.jit.script(Big().eval())
    m.save(path)
    import numpy as np
    x = os.path.join(os.path.dirname(path), "x.npy")
    np.save(x, np.ones((1, 4096), dtype=np.float32))
    return x


def digest(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def snapshot(d):
    return {n: digest(os.path.join(d, n)) for n in sorted(os.listdir(d))}


def holds_file_in(pid, d):
    """Whether process `pid` has a file in directory `d` open (unnamed ones read '#N (deleted)')."""
    try:
        fds = os.listdir(f"/proc/{pid}/fd")
    except OSError:
        return False
    for fd in fds:
        try:
            target = os.readlink(f"/proc/{pid}/fd/{fd}")
        except OSError:
            continue
        if target.startswith(d + "/"):
            return True
    return False


def trial(args, out_dir, sig, env):
    """Runs args, sends `sig` once it writes into out_dir. Returns True if the signal ended it."""
    e = dict(os.environ, OMP_NUM_THREADS="1", **env)
    p = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=e,
                         preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_AS, (MEMORY, MEMORY)))
    deadline = time.time() + 120
    sent = False
    while p.poll() is None and time.time() < deadline:
        if holds_file_in(p.pid, out_dir):
            p.send_signal(sig)
            sent = True
            break
        time.sleep(0.0005)
    try:
        _, err = p.communicate(timeout=120)
    except subprocess.TimeoutExpired:
        p.kill()
        raise AssertionError(f"{' '.join(args)}: hung after {sig.name}")
    if p.returncode == -sig:
        return True
    if p.returncode != 0:
        raise AssertionError(f"{os.path.basename(args[0])} {args[1]}: status {p.returncode} "
                             f"(signal sent: {sent}); stderr: {err.decode(errors='replace')[-500:]}")
    return False


def main():
    bin_, work = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    model = os.path.join(work, "big.pt")
    x = make_model(model)
    out_dir = os.path.join(work, "out")
    commands = {
        "freeze": lambda out: [bin_, "freeze", model, "-o", out],
        "export": lambda out: [bin_, "export", model, x, "-o", out],
        "export-external": lambda out: [bin_, "export", model, x, "-o", out,
                                        "--external-data-threshold", "1000000"],
    }
    names = {"freeze": "frozen.pt", "export": "m.onnx", "export-external": "m.onnx"}
    failed = 0
    for cmd, make in commands.items():
        for mode, env, trials in (
                ("unnamed", {}, ((signal.SIGINT, False), (signal.SIGTERM, True),
                                 (signal.SIGKILL, False), (signal.SIGKILL, True))),
                ("named", {"TORCHLESS_NO_O_TMPFILE": "1"},
                 ((signal.SIGINT, True), (signal.SIGTERM, False)))):
            for sig, old in trials:
                shutil.rmtree(out_dir, ignore_errors=True)
                os.makedirs(out_dir)
                out = os.path.join(out_dir, names[cmd])
                if old:
                    with open(out, "wb") as f:
                        f.write(b"the old target\n")
                    if cmd == "export-external":
                        with open(out + ".data", "wb") as f:
                            f.write(b"the old data\n")
                before = snapshot(out_dir)
                what = f"{cmd} ({mode} temporary, {'over an old target' if old else 'new'}) {sig.name}"
                interrupted = False
                for _ in range(TRIES):
                    if trial(make(out), out_dir, sig, env):
                        interrupted = True
                        after = snapshot(out_dir)
                        if after != before:
                            failed += 1
                            print(f"FAIL {what}: directory was {sorted(before)}, is {sorted(after)}"
                                  f"{' (old target changed)' if set(after) == set(before) else ''}")
                        else:
                            print(f"PASS {what}", flush=True)
                        break
                    # It finished first: the output must be complete, then try again.
                    shutil.rmtree(out_dir)
                    os.makedirs(out_dir)
                    if old:
                        for n in before:
                            with open(os.path.join(out_dir, n), "wb") as f:
                                f.write(b"the old target\n" if not n.endswith(".data") else b"the old data\n")
                if not interrupted:
                    failed += 1
                    print(f"FAIL {what}: finished before the signal in {TRIES} tries")
    # A completed write still works and leaves only its outputs.
    shutil.rmtree(out_dir)
    os.makedirs(out_dir)
    r = subprocess.run([bin_, "export", model, x, "-o", os.path.join(out_dir, "m.onnx"),
                        "--external-data-threshold", "1000000"], capture_output=True)
    if r.returncode != 0 or sorted(os.listdir(out_dir)) != ["m.onnx", "m.onnx.data"]:
        failed += 1
        print(f"FAIL completed export: status {r.returncode}, files {os.listdir(out_dir)}")
    print(f"{failed} failed" if failed else "all passed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
