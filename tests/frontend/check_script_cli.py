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


def cli_arg(d, i, x):
    """One `torchless run` argument for Python value x (None when the CLI cannot express it)."""
    if isinstance(x, torch.Tensor):
        path = os.path.join(d, f"in{i}.npy")
        np.save(path, x.numpy())
        return path
    if isinstance(x, bool):
        return "true" if x else "false"
    if isinstance(x, (int, float, str)):
        return str(x)
    if isinstance(x, list) and x and all(isinstance(t, torch.Tensor) for t in x):
        paths = []
        for k, t in enumerate(x):
            paths.append(os.path.join(d, f"in{i}_{k}.npy"))
            np.save(paths[-1], t.numpy())
        return "@list:" + ",".join(paths)
    return None


def compare_cli_outputs(d, expected, what):
    """out<k>.npy / out<k>.txt of `torchless run` against a flat tuple of PyTorch's results."""
    leaves = list(expected) if isinstance(expected, tuple) else [expected]
    for k, e in enumerate(leaves):
        if isinstance(e, str):
            with open(os.path.join(d, f"out{k}.txt")) as f:
                check(f.read().rstrip("\n") == e, f"{what} out{k}: {e!r}")
            continue
        got = torch.from_numpy(np.load(os.path.join(d, f"out{k}.npy")))
        if isinstance(e, torch.Tensor):
            check(got.dtype == e.dtype, f"{what} out{k}: dtype {got.dtype}, expected {e.dtype}")
            same(e, got.reshape(e.shape), f"{what} out{k}")
        else:
            same(e, type(e)(got.item()), f"{what} out{k}")


def check_module_features(binary, out):
    """Class-level forms: the file's only module is found without --class (the interface
    does not count), and forward / describe give PyTorch's results."""
    src = load_source("module_features")
    pt = compile_case(binary, out, "module_features")
    if not pt:
        return
    ours = torch.jit.load(pt)
    theirs = torch.jit.script(src.M())
    x = torch.randn(4)
    same(theirs(x).detach(), ours(x).detach(), "module_features forward")
    for c in (1, 2):
        same(theirs.describe(c), ours.describe(c), f"module_features describe({c})")
    run_cli(binary, pt, out, [x], [theirs(x).detach()], "module_features_run")


def check_random_init(binary, out):
    """torch.manual_seed + torch.randn / torch.rand in __init__ (script_cases/random_init.py):
    the archive's parameters and buffers are PyTorch's numbers, bit for bit."""
    src = load_source("random_init")
    pt = compile_case(binary, out, "random_init")
    if not pt:
        return
    ours = torch.jit.load(pt)
    theirs = src.M()
    for name, t in list(theirs.named_parameters()) + list(theirs.named_buffers()):
        got = dict(list(ours.named_parameters()) + list(ours.named_buffers()))[name]
        check(torch.equal(t.detach(), got.detach()), f"random_init {name}: {got} vs PyTorch's {t}")


def check_language(binary, out):
    """The Python forms of user files (script_cases/language.py): each function scripted by
    PyTorch and by torchless; the archive runs in PyTorch (torch.jit.load) and in
    `torchless run`, both compared with PyTorch's own scripting."""
    src = load_source("language")
    x = torch.randn(3, 4)
    calls = {
        "reflected": [(x,)],
        "augmented": [(x, 5)],
        "chained": [(1, 2, 3), (3, 2, 1), (2, 2, 5)],
        "formatting": [(x, "box", 7)],
        "checked": [(x, 0.5)],
        "imports": [(x,)],
        "casts": [(x * 10,)],
        "unique_values": [(torch.tensor([3, 1, 3, 2, 1]),)],
        "unions": [(x,), ([x, x[:2]],)],
        "named": [(1.0, 3.5)],
        "optional_default": [(x,), (x, 2.0)],
        "comprehensions": [([1, 2, 3, 4],)],
    }
    for name, arglists in calls.items():
        pt = compile_case(binary, out, "language", "--function", name)
        if not pt:
            continue
        mine = os.path.join(out, f"language_{name}.pt")
        os.replace(pt, mine)
        ours = torch.jit.load(mine)
        theirs = torch.jit.script(getattr(src, name))
        for n, args in enumerate(arglists):
            expected = theirs(*args)
            same(expected, ours(*args), f"language {name} #{n} (torch.jit.load)")
            d = os.path.join(out, f"language_{name}_{n}")
            os.makedirs(d, exist_ok=True)
            cli = [cli_arg(d, i, a) for i, a in enumerate(args)]
            flat = all(isinstance(v, (torch.Tensor, int, float, bool, str))
                       for v in (expected if isinstance(expected, tuple) else (expected,)))
            if None in cli or not flat:
                continue
            rc, _, se = run_tool(binary, "run", mine, *cli, "--output-dir", d)
            if check(rc == 0, f"torchless run language {name} #{n}: exit {rc}: {se}"):
                compare_cli_outputs(d, expected, f"language {name} #{n} (torchless run)")


def torchvision_source(path):
    """torchvision's standalone scriptable box functions, as a user would copy them into one
    file: the installed package's own source (inspect.getsource), behind the imports they use.
    Three helpers of torchvision that only log or check the C++ extension become stubs, and
    `torchvision._is_tracing()` (torchvision's module, not in the file) the stub beside them."""
    import inspect
    import torchvision.ops._box_convert as C
    import torchvision.ops._utils as U
    import torchvision.ops.boxes as B
    funcs = [U._upcast, U._upcast_non_float, U._cat, U.convert_boxes_to_roi_format,
             U.check_roi_boxes_shape, U._loss_inter_union, C._box_cxcywh_to_xyxy,
             C._box_xyxy_to_cxcywh, C._box_xywh_to_xyxy, C._box_xyxy_to_xywh, B.box_area,
             B._box_inter_union, B.box_iou, B.generalized_box_iou, B._box_diou_iou,
             B.complete_box_iou, B.distance_box_iou, B.clip_boxes_to_image,
             B.remove_small_boxes, B.box_convert, B.masks_to_boxes, B.nms,
             B._batched_nms_coordinate_trick, B._batched_nms_vanilla, B.batched_nms]
    header = (
        "import torch\nimport torchvision\nfrom torch import Tensor\n"
        "from typing import List, Optional, Tuple, Union\n\n\n"
        "def _log_api_usage_once(obj: str) -> None:\n    pass\n\n\n"
        "def _is_tracing() -> bool:\n    return False\n\n\n"
        "def _assert_has_ops() -> None:\n    pass\n\n\n")
    body = "\n\n".join(inspect.getsource(f) for f in funcs)
    with open(path, "w") as f:
        f.write(header + body.replace("torchvision._is_tracing()", "_is_tracing()"))
    return {f.__name__: f for f in funcs}


def check_torchvision(binary, out):
    """torchvision.ops box functions: `torchless script` of their installed source against
    torch.jit.script of the functions themselves."""
    path = os.path.join(out, "tv_boxes.py")
    funcs = torchvision_source(path)
    g = torch.Generator().manual_seed(3)
    xy = torch.rand(6, 2, generator=g) * 50
    boxes = torch.cat([xy, xy + torch.rand(6, 2, generator=g) * 30 + 1], 1)
    other = boxes[:4].flip(0) + 3
    scores = torch.rand(6, generator=g)
    idxs = torch.tensor([0, 1, 0, 1, 1, 0])
    masks = torch.zeros(2, 8, 9)
    masks[0, 2:5, 3:7] = 1
    masks[1, 0:8, 1:2] = 1
    calls = {
        "box_area": [(boxes,)],
        "box_iou": [(boxes, other)],
        "generalized_box_iou": [(boxes, other)],
        "complete_box_iou": [(boxes, other)],
        "distance_box_iou": [(boxes, other)],
        "clip_boxes_to_image": [(boxes, (40, 60))],
        "remove_small_boxes": [(boxes, 20.0)],
        "box_convert": [(boxes, "xyxy", "cxcywh"), (boxes, "xywh", "xyxy"),
                        (boxes, "cxcywh", "xywh")],
        "masks_to_boxes": [(masks,)],
        "nms": [(boxes, scores, 0.3)],
        "batched_nms": [(boxes, scores, idxs, 0.3)],
        "_batched_nms_vanilla": [(boxes, scores, idxs, 0.3)],
        "_batched_nms_coordinate_trick": [(boxes, scores, idxs, 0.3)],
        "_upcast": [(idxs,), (boxes.half(),)],
        "_cat": [([boxes, other],)],
        "convert_boxes_to_roi_format": [([boxes, other],)],
        "_loss_inter_union": [(boxes[:4], other)],
    }
    for name, arglists in calls.items():
        pt = os.path.join(out, f"tv_{name}.pt")
        rc, _, se = run_tool(binary, "script", path, "--function", name, "-o", pt)
        if not check(rc == 0, f"torchless script torchvision {name}: exit {rc}: {se}"):
            continue
        ours = torch.jit.load(pt)
        theirs = torch.jit.script(funcs[name])
        for n, args in enumerate(arglists):
            expected = theirs(*args)
            same(expected, ours(*args), f"torchvision {name} #{n} (torch.jit.load)")
            d = os.path.join(out, f"tv_{name}_{n}")
            os.makedirs(d, exist_ok=True)
            cli = []
            for i, a in enumerate(args):
                cli += [cli_arg(d, f"{i}_{k}", v) for k, v in enumerate(a)] \
                    if isinstance(a, tuple) else [cli_arg(d, i, a)]
            if None in cli:
                continue
            rc, _, se = run_tool(binary, "run", pt, *cli, "--output-dir", d)
            if check(rc == 0, f"torchless run torchvision {name} #{n}: exit {rc}: {se}"):
                compare_cli_outputs(d, expected, f"torchvision {name} #{n} (torchless run)")


def check_output_formats(binary, out):
    """`run --output-format npz|json` keeps the result's structure (issue #17 part 8); a
    List[str] is one .txt; --print shows numbers as Python prints them."""
    pt = os.path.join(out, "language_comprehensions.pt")
    if not os.path.exists(pt):
        return check(False, "language_comprehensions.pt was not compiled")
    theirs = torch.jit.load(pt)([1, 2, 3, 4])  # ([1, 4, 9, 16], {"1": 1, ...}, 10)
    d = os.path.join(out, "formats")
    os.makedirs(d, exist_ok=True)
    rc, so, se = run_tool(binary, "run", pt, "@list:1,2,3,4", "--output-dir", d,
                          "--output-format", "json", "--print")
    if check(rc == 0, f"run --output-format json: exit {rc}: {se}"):
        import json
        with open(os.path.join(d, "outputs.json")) as f:
            got = json.load(f)
        check(got[0] == [1, 4, 9, 16] and got[1] == theirs[1] and got[2] == 10,
              f"json: {got!r} vs {theirs!r}")
        check(so.splitlines()[-1] == "10", f"--print of an int: {so!r}")
    rc, _, se = run_tool(binary, "run", pt, "@list:1,2,3,4", "--output-dir", d,
                         "--output-format", "npz")
    if check(rc == 0, f"run --output-format npz: exit {rc}: {se}"):
        z = np.load(os.path.join(d, "outputs.npz"))
        check(sorted(z.files) == sorted(["0/0", "0/1", "0/2", "0/3", "1/1", "1/2", "1/3", "1/4", "2"]),
              f"npz keys {z.files}")
        check(int(z["0/2"]) == 9 and int(z["1/4"]) == 4 and int(z["2"]) == 10, "npz values")
    fmt_pt = os.path.join(out, "language_formatting.pt")
    x = os.path.join(d, "x.npy")
    np.save(x, np.zeros((3, 4), np.float32))
    rc, _, se = run_tool(binary, "run", fmt_pt, x, "box", "7", "--output-dir", d,
                         "--output-format", "npz")
    if check(rc == 0, f"run --output-format npz (strings): exit {rc}: {se}"):
        z = np.load(os.path.join(d, "outputs.npz"))
        check(str(z["1"]) == "box: 7 of 2", f"npz string: {z['1']!r}")


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
    check_language(binary, out)
    check_module_features(binary, out)
    check_random_init(binary, out)
    check_torchvision(binary, out)
    check_output_formats(binary, out)
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
