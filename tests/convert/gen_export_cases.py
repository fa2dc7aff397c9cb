"""Writes the ONNX export oracle cases (tests/convert/export_oracle_test.cpp reads them).

Usage: gen_export_cases.py OUT_DIR

Per case, OUT_DIR/<case>/ holds
  graph.txt      an inlined graph whose parameters are extra graph inputs: the prim::GetAttr
                 chains of a scripted module's (or a trace's) inlined graph are replaced by new
                 inputs after the real ones, bool/int/float attributes by constants;
  meta.json      {"inputs": N, "params": [names in input order], "rtol", "atol",
                  "torch_onnx_ops": {op: count} from torch.onnx.export (opset 13) or null};
  model.pt       the scripted (or traced) module, for `torchless export`;
  in<i>.npy      the example inputs, p<j>.npy the parameter values,
  out<k>.npy     PyTorch's eager outputs for the inputs.
"""
import json
import os
import re
import sys
import tempfile

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
import torchvision

torch.manual_seed(0)
OUT = sys.argv[1]


def lift_params(module, graph):
    """GetAttr chains from self -> new graph inputs (tensors) or constants (scalars)."""
    self_v = list(graph.inputs())[0]
    objs = {self_v: module}
    params = []
    by_path = {}
    getattrs = graph.findAllNodes("prim::GetAttr", True)
    for node in getattrs:
        src = node.input()
        if src not in objs:
            raise RuntimeError("GetAttr on something other than self: " + str(node))
        obj = getattr(objs[src], node.s("name"))
        out = node.output()
        path = (objs.get(("path", src), "") + "." if ("path", src) in objs else "") + node.s("name")
        objs[("path", out)] = path
        if isinstance(obj, torch.Tensor):
            if path not in by_path:
                inp = graph.addInput()
                inp.setDebugName("p%d" % len(params))
                inp.setType(out.type())
                by_path[path] = (inp, obj)
                params.append((path, obj.detach().clone()))
            out.replaceAllUsesWith(by_path[path][0])
        elif isinstance(obj, (bool, int, float)) or obj is None:
            c = graph.create("prim::Constant")
            if isinstance(obj, bool):
                c.i_("value", int(obj))
                c.output().setType(torch._C.BoolType.get())
            elif isinstance(obj, int):
                c.i_("value", obj)
                c.output().setType(torch._C.IntType.get())
            elif isinstance(obj, float):
                c.f_("value", obj)
                c.output().setType(torch._C.FloatType.get())
            else:
                c.output().setType(torch._C.NoneType.get())
            c.insertBefore(node)
            out.replaceAllUsesWith(c.output())
        else:
            objs[out] = obj
    for node in reversed(getattrs):
        node.destroy()
    graph.eraseInput(0)
    torch._C._jit_pass_dce(graph)
    return params


def torch_onnx_ops(model, inputs):
    try:
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "m.onnx")
            torch.onnx.export(model, tuple(inputs), path, opset_version=13)
            # Count node op types without the onnx package: the C++ test can parse the file,
            # so keep it beside the case.
            with open(path, "rb") as f:
                return f.read()
    except Exception as e:  # noqa: BLE001 - recorded, not fatal
        print("torch.onnx.export failed:", type(e).__name__, str(e).splitlines()[0], file=sys.stderr)
        return None


def randomize_norms(model):
    """Non-trivial batch-norm statistics, so that deep nets do not output near-constants."""
    with torch.no_grad():
        for mod in model.modules():
            if isinstance(mod, nn.BatchNorm2d):
                mod.running_mean.uniform_(-0.2, 0.2)
                mod.running_var.uniform_(0.5, 1.5)
                mod.weight.uniform_(0.5, 1.5)
                mod.bias.uniform_(-0.2, 0.2)


def write_case(name, model, inputs, traced=False, rtol=1e-4, atol=1e-4):
    model.eval()
    randomize_norms(model)
    d = os.path.join(OUT, name)
    os.makedirs(d, exist_ok=True)
    with torch.no_grad():
        expected = model(*inputs)
        if traced:
            m = torch.jit.trace(model, tuple(inputs))
        else:
            m = torch.jit.script(model)
        # The archive, for `torchless export` itself (ExportOracle.CommandLine).
        torch.jit.save(m, os.path.join(d, "model.pt"))
        g = m.graph.copy()
        torch._C._jit_pass_inline(g)
        params = lift_params(m, g)
    # Trace scopes (", scope: __module.conv") are dropped: torchless's IR parser does not read
    # them yet.
    text = re.sub(r", scope: [^ #\n]*", "", str(g))
    with open(os.path.join(d, "graph.txt"), "w") as f:
        f.write(text)
    for i, x in enumerate(inputs):
        np.save(os.path.join(d, "in%d.npy" % i), x.numpy())
    for j, (_, p) in enumerate(params):
        np.save(os.path.join(d, "p%d.npy" % j), p.numpy())
    outs = expected if isinstance(expected, (tuple, list)) else [expected]
    for k, y in enumerate(outs):
        np.save(os.path.join(d, "out%d.npy" % k), y.detach().numpy())
    blob = torch_onnx_ops(model, inputs)
    if blob is not None:
        with open(os.path.join(d, "torch.onnx"), "wb") as f:
            f.write(blob)
    meta = {"inputs": len(inputs), "params": [p for p, _ in params], "rtol": rtol, "atol": atol,
            "traced": traced, "torch_onnx": blob is not None}
    with open(os.path.join(d, "meta.json"), "w") as f:
        json.dump(meta, f, indent=1)
    print("wrote", name, "(%d params)" % len(params))


class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(16, 32)
        self.fc2 = nn.Linear(32, 4)

    def forward(self, x):
        return self.fc2(torch.relu(self.fc1(x)))


class ConvBnRelu(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3, padding=1)
        self.bn = nn.BatchNorm2d(8)
        self.relu = nn.ReLU(inplace=True)

    def forward(self, x):
        return self.relu(self.bn(self.conv(x)))


class ViewNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 4, 3, stride=2)
        self.fc = nn.Linear(4 * 3 * 3, 5)

    def forward(self, x):
        y = self.conv(x)
        y = y.view(y.size(0), -1)
        z = torch.flatten(x, 1).sum(1, keepdim=True)
        return self.fc(y) + z


class Softmaxes(nn.Module):
    def forward(self, x):
        return torch.softmax(x, dim=1), torch.log_softmax(x * 2.0, dim=-1)


class Pools(nn.Module):
    def forward(self, x):
        a = F.max_pool2d(x, 3, 2, ceil_mode=True)
        b = F.avg_pool2d(x, 2, 2, ceil_mode=False)
        c = F.max_pool1d(x.flatten(2), 4, 3, ceil_mode=True)
        return a, b, c


class LayerNormNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.ln = nn.LayerNorm(16)
        self.fc = nn.Linear(16, 16)

    def forward(self, x):
        return F.gelu(self.fc(self.ln(x)))


class EmbeddingNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(20, 8)

    def forward(self, idx):
        return self.emb(idx).mean(1)


class Elementwise(nn.Module):
    def forward(self, x, y):
        a = torch.clamp(x, -0.5, 0.5) + torch.abs(y) * 2 - torch.neg(x) / 3
        b = torch.where(x > y, torch.exp(x), torch.sigmoid(y))
        c = F.leaky_relu(x, 0.2) + F.elu(y) + F.hardswish(x) + F.relu6(y) + F.silu(x)
        d = torch.cat([a, b], 1).transpose(0, 1).contiguous()
        e = torch.tanh(x).pow(2) + torch.sin(y) + torch.cos(x)
        return d, c + e, torch.max(x, y), torch.sqrt(torch.abs(x) + 1)


def main():
    os.makedirs(OUT, exist_ok=True)
    write_case("mlp", MLP(), [torch.randn(2, 16)])
    write_case("conv_bn_relu", ConvBnRelu(), [torch.randn(1, 3, 8, 8)])
    write_case("view_traced", ViewNet(), [torch.randn(2, 3, 7, 7)], traced=True)
    write_case("softmax", Softmaxes(), [torch.randn(3, 5)])
    write_case("pool_ceil", Pools(), [torch.randn(1, 2, 10, 10)])
    write_case("layer_norm", LayerNormNet(), [torch.randn(2, 3, 16)])
    write_case("embedding", EmbeddingNet(), [torch.randint(0, 20, (2, 5))])
    write_case("elementwise", Elementwise(), [torch.randn(3, 4), torch.randn(3, 4)])
    write_case("resnet18", torchvision.models.resnet18(), [torch.randn(1, 3, 64, 64)], rtol=1e-3, atol=1e-3)
    write_case("mobilenet_v2_traced", torchvision.models.mobilenet_v2(), [torch.randn(1, 3, 64, 64)],
               traced=True, rtol=1e-3, atol=1e-3)


if __name__ == "__main__":
    main()
