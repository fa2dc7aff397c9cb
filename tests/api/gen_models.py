#!/usr/bin/python3
"""Writes small TorchScript archives with real PyTorch, plus inputs and PyTorch's outputs, for
the ApiOracle tests (tests/api/load_oracle_test.cpp).

usage: gen_models.py OUT_DIR

For each case OUT_DIR/<name>/ holds model.pt, the inputs (in0.npy ...), PyTorch's outputs
flattened as cli.md says (out0.npy ...; strings as outN.txt), every parameter and buffer
(param0.npy, buffer0.npy ...) and meta.json:
  {"method": "forward", "args": ["in0.npy", "3", "@dict:a=in1_a.npy"], "outputs": ["out0.npy"],
   "parameters": [["fc.weight", "param0.npy"], ...], "buffers": [...], "rtol": 1e-4, "atol": 1e-4}
Several cases may share one module with other inputs or methods.
"""
import json
import os
import sys
from enum import Enum
from typing import Dict, List, NamedTuple, Optional, Tuple

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
np.random.seed(0)


# ---- models -----------------------------------------------------------------------------------

class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(8, 16)
        self.fc2 = nn.Linear(16, 4)

    def forward(self, x):
        return self.fc2(F.relu(self.fc1(x)))


class ConvNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3, padding=1)
        self.bn = nn.BatchNorm2d(8)
        self.pool = nn.MaxPool2d(2)
        self.fc = nn.Linear(8 * 8 * 8, 5)

    def forward(self, x):
        y = self.pool(F.relu(self.bn(self.conv(x))))
        return self.fc(torch.flatten(y, 1))


class ControlFlow(nn.Module):
    def __init__(self):
        super().__init__()
        self.w = nn.Parameter(torch.randn(4))

    def forward(self, x: torch.Tensor, y: Optional[torch.Tensor] = None, n: int = 2):
        out = x * self.w
        for i in range(n):
            out = out + i
        if y is not None:
            out = out - y
        else:
            out = out * 0.5
        while out.sum() > 100.0:
            out = out / 2
        return out


class Block(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.lin = nn.Linear(d, d)
        self.register_buffer("scale", torch.full((d,), 0.5))

    def forward(self, x):
        return torch.tanh(self.lin(x)) * self.scale + x


class Stack(nn.Module):
    def __init__(self):
        super().__init__()
        self.blocks = nn.ModuleList([Block(6) for _ in range(3)])
        self.head = nn.Sequential(nn.Linear(6, 3), nn.Sigmoid())

    def forward(self, x):
        for b in self.blocks:
            x = b(x)
        return self.head(x)


class Pair(NamedTuple):
    total: torch.Tensor
    count: int


class WithNamedTuple(nn.Module):
    def forward(self, x: torch.Tensor) -> Pair:
        return Pair(x.sum(dim=0), x.size(0))


@torch.jit.script
class Accumulator(object):
    def __init__(self, start: torch.Tensor):
        self.total = start
        self.steps = 0

    def add(self, x: torch.Tensor):
        self.total = self.total + x
        self.steps += 1


class WithScriptClass(nn.Module):
    def forward(self, x: torch.Tensor) -> Tuple[torch.Tensor, int]:
        acc = Accumulator(torch.zeros_like(x[0]))
        for i in range(x.size(0)):
            acc.add(x[i])
        return acc.total, acc.steps


class DictIO(nn.Module):
    def forward(self, d: Dict[str, torch.Tensor]) -> Dict[str, torch.Tensor]:
        out: Dict[str, torch.Tensor] = {}
        for k, v in d.items():
            out[k + "_sq"] = v * v
        out["sum"] = d["a"] + d["b"]
        return out


class TwoMethods(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(3, 3)

    def forward(self, x):
        return self.lin(x)

    @torch.jit.export
    def scaled(self, x: torch.Tensor, k: float) -> torch.Tensor:
        return self.forward(x) * k


def helper(x: torch.Tensor, k: int) -> torch.Tensor:
    return x + k


class WithHelper(nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("running", torch.arange(4.0))

    def forward(self, x):
        return helper(x, 3) + self.running


class Color(Enum):
    RED = 1
    GREEN = 2


class WithEnum(nn.Module):
    def forward(self, x: torch.Tensor, red: bool):
        c = Color.RED if red else Color.GREEN
        if c == Color.RED:
            return x + 1
        return x - 1


@torch.jit.interface
class ScaleIface(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        pass


class Doubler(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * 2


class WithInterface(nn.Module):
    sub: ScaleIface

    def __init__(self):
        super().__init__()
        self.sub = Doubler()

    def forward(self, x):
        return self.sub.forward(x) + 1


class WithState(nn.Module):
    def __init__(self):
        super().__init__()
        self.t = torch.randn(3)
        self.k = 7

    @torch.jit.export
    def __getstate__(self) -> Tuple[torch.Tensor, int, bool]:
        return (self.t, self.k, self.training)

    @torch.jit.export
    def __setstate__(self, state: Tuple[torch.Tensor, int, bool]):
        self.t = state[0] * 2
        self.k = state[1]
        self.training = state[2]

    def forward(self, x):
        return x + self.t * self.k


class Lstm(nn.Module):
    def __init__(self):
        super().__init__()
        self.lstm = nn.LSTM(4, 5, batch_first=True)

    def forward(self, x):
        out, (h, c) = self.lstm(x)
        return out, h


# ---- writing ----------------------------------------------------------------------------------

def flatten(v, out):
    """cli.md's output order."""
    if isinstance(v, torch.Tensor):
        out.append(v.detach())
    elif isinstance(v, (tuple, list)):
        for e in v:
            flatten(e, out)
    elif isinstance(v, dict):
        for k in sorted(v):
            flatten(v[k], out)
    elif isinstance(v, bool):
        out.append(torch.tensor(v))
    elif isinstance(v, int):
        out.append(torch.tensor(v, dtype=torch.int64))
    elif isinstance(v, float):
        out.append(torch.tensor(v, dtype=torch.float64))
    elif isinstance(v, str):
        out.append(v)
    elif v is None:
        pass
    else:
        raise TypeError(f"cannot flatten {type(v)}")


def write_case(root, name, module, args, method="forward", rtol=1e-4, atol=1e-4):
    d = os.path.join(root, name)
    os.makedirs(d, exist_ok=True)
    path = os.path.join(d, "model.pt")
    torch.jit.save(module, path)
    loaded = torch.jit.load(path)  # what a user of the file gets
    words, call_args = [], []
    for i, a in enumerate(args):
        if isinstance(a, torch.Tensor):
            np.save(os.path.join(d, f"in{i}.npy"), a.numpy())
            words.append(f"in{i}.npy")
        elif isinstance(a, dict):
            parts = []
            for k, v in a.items():
                np.save(os.path.join(d, f"in{i}_{k}.npy"), v.numpy())
                parts.append(f"{k}=in{i}_{k}.npy")
            words.append("@dict:" + ",".join(parts))
        elif a is None:
            words.append("none")
        elif isinstance(a, bool):
            words.append("true" if a else "false")
        else:
            words.append(repr(a))
        call_args.append(a)
    with torch.no_grad():
        result = getattr(loaded, method)(*call_args)
    flat = []
    flatten(result, flat)
    outputs = []
    for i, o in enumerate(flat):
        if isinstance(o, str):
            fn = f"out{i}.txt"
            with open(os.path.join(d, fn), "w") as f:
                f.write(o)
        else:
            fn = f"out{i}.npy"
            np.save(os.path.join(d, fn), o.numpy())
        outputs.append(fn)
    params, buffers = [], []
    for i, (n, p) in enumerate(loaded.named_parameters()):
        np.save(os.path.join(d, f"param{i}.npy"), p.detach().numpy())
        params.append([n, f"param{i}.npy"])
    for i, (n, b) in enumerate(loaded.named_buffers()):
        np.save(os.path.join(d, f"buffer{i}.npy"), b.detach().numpy())
        buffers.append([n, f"buffer{i}.npy"])
    meta = {"method": method, "args": words, "outputs": outputs, "parameters": params,
            "buffers": buffers, "rtol": rtol, "atol": atol}
    with open(os.path.join(d, "meta.json"), "w") as f:
        json.dump(meta, f, indent=1)


def main():
    root = sys.argv[1]
    os.makedirs(root, exist_ok=True)
    r = torch.randn

    write_case(root, "mlp_scripted", torch.jit.script(MLP().eval()), [r(4, 8)])
    write_case(root, "mlp_traced", torch.jit.trace(MLP().eval(), r(4, 8)), [r(4, 8)])
    conv = ConvNet().eval()
    conv.bn.running_mean.uniform_(-0.5, 0.5)
    conv.bn.running_var.uniform_(0.5, 1.5)
    write_case(root, "convnet_scripted", torch.jit.script(conv), [r(2, 3, 16, 16)])
    write_case(root, "convnet_traced", torch.jit.trace(conv, r(2, 3, 16, 16)), [r(2, 3, 16, 16)])
    cf = torch.jit.script(ControlFlow())
    write_case(root, "control_flow", cf, [r(4), r(4), 3])
    write_case(root, "control_flow_none", cf, [r(4) * 100, None])
    write_case(root, "modulelist_scripted", torch.jit.script(Stack().eval()), [r(2, 6)])
    write_case(root, "modulelist_traced", torch.jit.trace(Stack().eval(), r(2, 6)), [r(2, 6)])
    write_case(root, "namedtuple_out", torch.jit.script(WithNamedTuple()), [r(3, 2)])
    write_case(root, "script_class", torch.jit.script(WithScriptClass()), [r(3, 4)])
    write_case(root, "dict_io", torch.jit.script(DictIO()), [{"a": r(2), "b": r(2)}])
    tm = torch.jit.script(TwoMethods())
    write_case(root, "two_methods_forward", tm, [r(2, 3)])
    write_case(root, "two_methods_scaled", tm, [r(2, 3), 2.5], method="scaled")
    write_case(root, "free_function_buffer", torch.jit.script(WithHelper()), [r(4)])
    write_case(root, "enum", torch.jit.script(WithEnum()), [r(3), True])
    write_case(root, "interface", torch.jit.script(WithInterface()), [r(3)])
    write_case(root, "setstate", torch.jit.script(WithState()), [r(3)])
    write_case(root, "lstm_scripted", torch.jit.script(Lstm().eval()), [r(2, 5, 4)])
    import torchvision
    rn = torchvision.models.resnet18(num_classes=10).eval()
    write_case(root, "resnet18_traced", torch.jit.trace(rn, r(1, 3, 64, 64)), [r(1, 3, 64, 64)],
               rtol=1e-3, atol=1e-3)
    write_case(root, "resnet18_scripted", torch.jit.script(rn), [r(1, 3, 64, 64)],
               rtol=1e-3, atol=1e-3)


if __name__ == "__main__":
    main()
