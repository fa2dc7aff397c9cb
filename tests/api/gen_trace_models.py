#!/usr/bin/python3
"""Models and PyTorch's own tracing results for the TraceOracle suite (tests/api/trace_test.cpp).

usage: gen_trace_models.py OUT_DIR
       gen_trace_models.py check ARCHIVE INPUT.npy EXPECTED.npy RTOL ATOL

The first form writes, with real PyTorch 1.13, the TorchScript documentation's tracing examples
(https://pytorch.org/docs/1.13/jit.html, "Tracer Warnings" and "Mixing Tracing and Scripting")
as scripted or traced archives, their inputs, PyTorch's outputs, and what torch.jit.trace says
about them (for reference in the test's messages):

  loop.pt              the docs' loop_in_traced_fn, scripted; loop_x.npy [3, 4, 5] and the check
                       inputs loop_c1.npy [4, 5, 6], loop_c2.npy [2, 3, 4];
                       loop_pytorch_error.txt: torch.jit.trace(fn, x, check_inputs=...) raises
                       TracingCheckError "Graphs differed across invocations!"
  fill_row.pt          the docs' fill_row_zero made deterministic (x[0] = x[1] * 2), scripted;
  fill_cat.pt          its out-of-place version with torch.cat; fill_x.npy [3, 4] and PyTorch's
                       outputs fill_row_expected.npy, fill_cat_expected.npy;
                       fill_pytorch_warnings.txt: PyTorch's TracerWarnings for both (the in-place
                       one needs _force_outplace=True in 1.13)
  size_view.pt         x.view(x.size(0), -1) * len(x), scripted; size_view_x2.npy [2, 3, 4],
                       size_view_x5.npy [5, 3, 4], size_view_expected5.npy
  branch.pt            `if x.sum() > 0: x + 1 else x - 1`, scripted; branch_pos.npy and
                       branch_neg.npy (= -pos); branch_pytorch_error.txt: PyTorch's warnings and
                       TracingCheckError with check_inputs=[neg]
  data_dependent.pt    a loop count from int(tensor) and a factor from .item(), scripted;
                       data_dependent_x.npy, data_dependent_expected.npy,
                       data_dependent_pytorch_warnings.txt (PyTorch's TracerWarnings)
  script_calls_trace.pt  a scripted module calling a traced function
  trace_calls_script.pt  a traced module calling a scripted function (PyTorch keeps the call:
                       trace_calls_script_graph.txt); mix_x.npy, *_expected.npy
  resnet18_scripted.pt torchvision resnet18 (random weights, eval), scripted; resnet_x.npy
                       [1, 3, 64, 64], resnet_expected.npy; resnet18_trace_kinds.json: node
                       kinds (prim::Constant excluded) of torch.jit.trace(model, x).inlined_graph

The second form loads ARCHIVE with torch.jit.load, runs forward on INPUT and compares with
EXPECTED (exit 0 when close): the test runs it on the archives `torchless trace` writes.
Run by the ctest fixture api.gen_trace_models; nothing it writes is committed.
"""
import collections
import json
import os
import sys
import warnings

import numpy as np
import torch
import torch.nn as nn


class Loop(nn.Module):
    def forward(self, x):
        result = x[0]
        for i in range(x.size(0)):
            result = result * x[i]
        return result


class FillRow(nn.Module):
    def forward(self, x):
        x[0] = x[1] * 2
        return x


class FillCat(nn.Module):
    def forward(self, x):
        x = torch.cat((x[1:2] * 2, x[1:]), dim=0)
        return x


class SizeView(nn.Module):
    def forward(self, x):
        return x.view(x.size(0), -1) * len(x)


class DataBranch(nn.Module):
    def forward(self, x):
        if x.sum() > 0:
            return x + 1
        return x - 1


class DataDependent(nn.Module):
    def forward(self, x):
        y = x
        for _ in range(int(x.abs().max() * 3) + 1):
            y = y + 1
        return y * x[0, 0].item()


def foo(x, y):
    return 2 * x + y


@torch.jit.script
def scripted_branch(x):
    if x.max() > x.min():
        r = x * 2
    else:
        r = x + 1
    return r


traced_foo = torch.jit.trace(foo, (torch.rand(3), torch.rand(3)))


class ScriptCallsTrace(nn.Module):
    def forward(self, x):
        return traced_foo(x, x) + 1


class TraceCallsScript(nn.Module):
    def forward(self, x):
        return scripted_branch(x) * 2 + x.size(0)


def save_npy(out, name, t):
    np.save(os.path.join(out, name), t.detach().numpy())


def trace_messages(fn, x, **kwargs):
    """The TracerWarnings torch.jit.trace gives, one per line."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        torch.jit.trace(fn, (x.clone(),), **kwargs)
    return "".join(f"{w.category.__name__}: {w.message}\n" for w in caught)


def generate(out):
    os.makedirs(out, exist_ok=True)
    torch.manual_seed(0)

    # Loop over x.size(0): PyTorch's trace check fails on other shapes.
    loop = Loop()
    torch.jit.script(loop).save(os.path.join(out, "loop.pt"))
    x, c1, c2 = torch.rand(3, 4, 5), torch.rand(4, 5, 6), torch.rand(2, 3, 4)
    save_npy(out, "loop_x.npy", x)
    save_npy(out, "loop_c1.npy", c1)
    save_npy(out, "loop_c2.npy", c2)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            torch.jit.trace(loop, (x,), check_inputs=[(c1,), (c2,)])
        raise SystemExit("expected torch.jit.trace to raise TracingCheckError for loop")
    except torch.jit.TracingCheckError as e:
        with open(os.path.join(out, "loop_pytorch_error.txt"), "w") as f:
            f.write(str(e))

    # In-place row write vs torch.cat.
    fx = torch.rand(3, 4)
    save_npy(out, "fill_x.npy", fx)
    for name, cls in (("fill_row", FillRow), ("fill_cat", FillCat)):
        torch.jit.script(cls()).save(os.path.join(out, name + ".pt"))
        save_npy(out, name + "_expected.npy", cls()(fx.clone()))
    with open(os.path.join(out, "fill_pytorch_warnings.txt"), "w") as f:
        f.write("# torch.jit.trace(FillRow(), x, _force_outplace=True)\n")
        f.write(trace_messages(FillRow(), fx, _force_outplace=True, check_trace=False))
        f.write("# torch.jit.trace(FillCat(), x)\n")
        f.write(trace_messages(FillCat(), fx))

    # Sizes stay symbolic: a trace on batch 2 runs on batch 5.
    sv = SizeView()
    torch.jit.script(sv).save(os.path.join(out, "size_view.pt"))
    s2, s5 = torch.rand(2, 3, 4), torch.rand(5, 3, 4)
    save_npy(out, "size_view_x2.npy", s2)
    save_npy(out, "size_view_x5.npy", s5)
    save_npy(out, "size_view_expected5.npy", sv(s5))

    # Branch on data: another input takes the other branch (graphs and outputs differ).
    torch.jit.script(DataBranch()).save(os.path.join(out, "branch.pt"))
    pos = torch.rand(2, 3) + 0.1
    save_npy(out, "branch_pos.npy", pos)
    save_npy(out, "branch_neg.npy", -pos)
    with open(os.path.join(out, "branch_pytorch_error.txt"), "w") as f:
        try:
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                torch.jit.trace(DataBranch(), (pos,), check_inputs=[(-pos,)])
            raise SystemExit("expected torch.jit.trace to raise TracingCheckError for branch")
        except torch.jit.TracingCheckError as e:
            for w in caught:
                f.write(f"{w.category.__name__}: {w.message}\n")
            f.write(str(e))

    # Tensor data read as Python numbers (int(), .item()).
    dd = DataDependent()
    torch.jit.script(dd).save(os.path.join(out, "data_dependent.pt"))
    dx = torch.rand(2, 3)
    save_npy(out, "data_dependent_x.npy", dx)
    save_npy(out, "data_dependent_expected.npy", dd(dx))
    with open(os.path.join(out, "data_dependent_pytorch_warnings.txt"), "w") as f:
        f.write(trace_messages(dd, dx))

    # Mixing tracing and scripting.
    mx = torch.rand(4, 3)
    save_npy(out, "mix_x.npy", mx)
    sct = torch.jit.script(ScriptCallsTrace())
    sct.save(os.path.join(out, "script_calls_trace.pt"))
    save_npy(out, "script_calls_trace_expected.npy", sct(mx))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        tcs = torch.jit.trace(TraceCallsScript(), (mx,))
    tcs.save(os.path.join(out, "trace_calls_script.pt"))
    save_npy(out, "trace_calls_script_expected.npy", TraceCallsScript()(mx))
    with open(os.path.join(out, "trace_calls_script_graph.txt"), "w") as f:
        f.write(str(tcs.graph))

    # resnet18: scripted archive in, PyTorch's traced graph's node kinds for comparison.
    import torchvision

    model = torchvision.models.resnet18(weights=None).eval()
    rx = torch.randn(1, 3, 64, 64)
    save_npy(out, "resnet_x.npy", rx)
    with torch.no_grad():
        save_npy(out, "resnet_expected.npy", model(rx))
        torch.jit.script(model).save(os.path.join(out, "resnet18_scripted.pt"))
        traced = torch.jit.trace(model, rx)
    kinds = collections.Counter(n.kind() for n in traced.inlined_graph.nodes()
                                if n.kind() != "prim::Constant")
    with open(os.path.join(out, "resnet18_trace_kinds.json"), "w") as f:
        json.dump(dict(sorted(kinds.items())), f, indent=1)


def check(archive, inp, expected, rtol, atol):
    m = torch.jit.load(archive)
    with torch.no_grad():
        out = m(torch.from_numpy(np.load(inp))).numpy()
    want = np.load(expected)
    if out.shape != want.shape or not np.allclose(out, want, rtol=float(rtol), atol=float(atol)):
        diff = np.abs(out - want).max() if out.shape == want.shape else "shape"
        print(f"{archive}: mismatch with {expected}: {out.shape} vs {want.shape}, max abs diff {diff}",
              file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    if len(sys.argv) == 7 and sys.argv[1] == "check":
        sys.exit(check(*sys.argv[2:]))
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    generate(sys.argv[1])
