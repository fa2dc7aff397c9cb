#!/usr/bin/python3
"""`torchless script` against PyTorch 1.13 scripting the same source.

usage: check_script_cli.py TORCHLESS OUT_DIR

For each source in script_cases/: `torchless script` writes OUT_DIR/<case>.pt; torch.jit.load
must accept it, and its methods must give the outputs of torch.jit.script over the same file
(imported as a Python module) on the same inputs. `torchless run`, `graph` and `code` must
work on the archive too (run's outputs compared with PyTorch's). The error cases must exit 1
with `file:line:col: message` first and the source line with a caret after. Exits non-zero
with a list of failures.
"""
import importlib.util
import os
import re
import shutil
import subprocess
import sys

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
CASES = os.path.join(HERE, "script_cases")
failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL:", what)
    return cond


def load_source(name):
    path = os.path.join(CASES, name + ".py")
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    return mod


def run_tool(binary, *args):
    p = subprocess.run([binary, *args], capture_output=True, text=True)
    return p.returncode, p.stdout, p.stderr


def same(a, b, what):
    if isinstance(a, torch.Tensor):
        return check(isinstance(b, torch.Tensor) and a.shape == b.shape and
                     torch.allclose(a, b, rtol=1e-5, atol=1e-6, equal_nan=True), f"{what}: {a} vs {b}")
    if isinstance(a, (tuple, list)):
        if not check(isinstance(b, (tuple, list)) and len(a) == len(b), f"{what}: {a} vs {b}"):
            return False
        return all(same(x, y, f"{what}[{i}]") for i, (x, y) in enumerate(zip(a, b)))
    if isinstance(a, float):
        return check(abs(a - b) <= 1e-5 * max(1.0, abs(a)), f"{what}: {a} vs {b}")
    return check(a == b, f"{what}: {a!r} vs {b!r}")


def compile_case(binary, out, name, *select):
    pt = os.path.join(out, name + ".pt")
    rc, so, se = run_tool(binary, "script", os.path.join(CASES, name + ".py"), *select, "-o", pt)
    if not check(rc == 0, f"torchless script {name}: exit {rc}: {se}"):
        return None
    print(so.strip())
    for cmd in (["graph", pt], ["code", pt], ["graph", pt, "--inline"]):
        rc, _, se = run_tool(binary, *cmd)
        check(rc == 0, f"torchless {' '.join(cmd)}: exit {rc}: {se}")
    return pt


def run_cli(binary, pt, out, inputs, expected, what):
    """`torchless run` with .npy tensor inputs; compares out*.npy with `expected` tensors."""
    d = os.path.join(out, what)
    os.makedirs(d, exist_ok=True)
    args = []
    for i, x in enumerate(inputs):
        if isinstance(x, torch.Tensor):
            np.save(os.path.join(d, f"in{i}.npy"), x.numpy())
            args.append(os.path.join(d, f"in{i}.npy"))
        else:
            args.append(str(x))
    rc, _, se = run_tool(binary, "run", pt, *args, "--output-dir", d)
    if not check(rc == 0, f"torchless run {what}: exit {rc}: {se}"):
        return
    for i, e in enumerate(expected):
        got = torch.from_numpy(np.load(os.path.join(d, f"out{i}.npy")))
        same(e, got.reshape(e.shape) if isinstance(e, torch.Tensor) else got.item(),
             f"{what} out{i}")


def check_module(binary, out):
    src = load_source("scaled_mlp")
    pt = compile_case(binary, out, "scaled_mlp", "--class", "ScaledMLP")
    if not pt:
        return
    ours = torch.jit.load(pt)
    theirs = torch.jit.script(src.ScaledMLP())
    check(sorted(n for n, _ in ours.named_parameters()) == ["b1", "w1"], "parameters")
    check([n for n, _ in ours.named_buffers()] == ["offset"], "buffers")
    x = torch.randn(2, 3)
    for mode in ("relu", "tanh"):
        same(theirs(x, mode), ours(x, mode), f"scaled_mlp forward {mode}")
    same(theirs.describe(4), ours.describe(4), "scaled_mlp describe")
    y, m = theirs(x, "relu")
    run_cli(binary, pt, out, [x, "relu"], [y, m], "scaled_mlp_run")


def check_function(binary, out):
    src = load_source("functions")
    pt = compile_case(binary, out, "functions", "--function", "pairwise")
    if not pt:
        return
    ours = torch.jit.load(pt)
    theirs = torch.jit.script(src.pairwise)
    x, y = torch.randn(3, 4), torch.randn(5, 4)
    same(theirs(x, y), ours(x, y), "pairwise")
    same(theirs(x, y, 0.5), ours(x, y, 0.5), "pairwise eps")
    d, sizes = theirs(x, y)
    run_cli(binary, pt, out, [x, y], [d] + [torch.tensor(s) for s in sizes], "pairwise_run")


def check_control_flow(binary, out):
    """Returns inside loops, break and continue, folded `-inf` and is_scripting()."""
    src = load_source("control_flow")
    x = torch.randn(2, 5)
    calls = {
        "find_first": [([3, 1, 4], 4), ([3, 1, 4], 7), ([], 1)],
        "grow": [(0,), (2,), (5,), (11,)],
        "nested": [([1, 2, 3, -1], [2, 3, -1, 9]), ([5, 6], [1, 5]), ([], [1])],
        "skip_and_stop": [([1, -2, 3, 200, 4],), ([],)],
        "masked": [(x, 0), (x, 3), (x * 500, 2)],
        "run_all": [(x,)],
    }
    for name, arglists in calls.items():
        pt = compile_case(binary, out, "control_flow", "--function", name)
        if not pt:
            continue
        os.replace(pt, os.path.join(out, f"control_flow_{name}.pt"))
        ours = torch.jit.load(os.path.join(out, f"control_flow_{name}.pt"))
        theirs = torch.jit.script(getattr(src, name))
        for args in arglists:
            same(theirs(*args), ours(*args), f"{name}{args if name != 'masked' else ''}")


def check_error(binary, out, name, line, col, message, select=("--function", "f")):
    path = os.path.join(CASES, name + ".py")
    rc, _, se = run_tool(binary, "script", path, *select, "-o", os.path.join(out, name + ".pt"))
    check(rc == 1, f"{name}: exit {rc}, expected 1")
    lines = se.splitlines()
    first = lines[0] if lines else ""
    check(first.startswith(f"{path}:{line}:{col}: ") and message in first,
          f"{name}: first line {first!r}, expected {path}:{line}:{col}: ...{message}...")
    check(any(re.search(r"~+ <--- HERE", l) for l in lines), f"{name}: no caret in {se!r}")
    check(not os.path.exists(os.path.join(out, name + ".pt")), f"{name}: an archive was written")


def check_usage(binary, out):
    path = os.path.join(CASES, "functions.py")
    rc, _, se = run_tool(binary, "script", path, "--function", "missing", "-o",
                         os.path.join(out, "x.pt"))
    check(rc == 1 and "no function 'missing' at the top level (functions: norm2, pairwise)" in se,
          f"missing function: {rc} {se!r}")
    rc, _, se = run_tool(binary, "script", path, "-o", os.path.join(out, "x.pt"))
    check(rc == 1 and "defines 0 torch.nn.Module classes" in se, f"no module: {rc} {se!r}")
    rc, _, _ = run_tool(binary, "script", path, "--class", "A", "--function", "b", "-o", "x.pt")
    check(rc == 2, f"--class with --function: exit {rc}, expected 2")


def main(argv):
    if len(argv) != 3:
        sys.stderr.write(__doc__)
        return 2
    binary, out = argv[1], argv[2]
    shutil.rmtree(out, ignore_errors=True)
    os.makedirs(out)
    torch.manual_seed(0)
    check_module(binary, out)
    check_function(binary, out)
    check_control_flow(binary, out)
    check_error(binary, out, "syntax_error", 5, 12, "expected an expression but found newline")
    check_error(binary, out, "type_error", 6, 12, "Arguments for call are not valid.")
    check_error(binary, out, "submodule_error", 6, 19,
                "a submodule (torch.nn.Linear) cannot be built in a script file's __init__",
                select=("--class", "M"))
    check_usage(binary, out)
    if failures:
        print(f"{len(failures)} failures")
        return 1
    print("all script checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
