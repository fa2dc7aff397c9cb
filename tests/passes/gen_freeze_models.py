"""Writes the freeze oracle's models, inputs and PyTorch's outputs (tests/passes/extra.cmake).

Usage: gen_freeze_models.py OUT_DIR

For each model NAME: NAME.pt (torch.jit.script of the eval-mode module, random weights from
torch.manual_seed), NAME_in.npy, NAME_eager.npy (eager output), NAME_frozen.npy
(torch.jit.freeze) and NAME_optimized.npy (torch.jit.optimize_for_inference). Also:
small_features_frozen.npy (the exported method `features` of the frozen module preserving
it), mutating_frozen1/2.npy (two calls of a fresh frozen module that counts its calls),
small_train.pt (a module left in training mode), resnet18/small_torch_frozen_kinds.json (node
kinds of PyTorch's frozen graphs).
"""
import collections
import json
import os
import sys

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
import torchvision


class Small(nn.Module):
    """conv+bn, conv+add/mul constants, dropout, `if self.training`, linear+bn, attributes."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3, padding=1)
        self.bn = nn.BatchNorm2d(8)
        self.conv2 = nn.Conv2d(8, 8, 3, bias=False)
        self.bn2 = nn.BatchNorm2d(8, affine=False)
        self.conv3 = nn.Conv1d(8, 4, 1)
        self.drop = nn.Dropout(0.5)
        self.fc = nn.Linear(4 * 4, 6)
        self.bn1d = nn.BatchNorm1d(6)
        self.scale = 0.5
        self.offsets = [1, 2]
        self.register_buffer("shift", torch.randn(1, 8, 1, 1))

    def forward(self, x):
        y = F.relu(self.bn(self.conv(x)))
        y = self.bn2(self.conv2(y))
        y = y * self.scale + self.shift
        if self.training:
            y = y * 100.0
        y = self.drop(y)
        y = F.dropout(y, 0.3, self.training)
        y = F.adaptive_avg_pool2d(y, 4).flatten(2)  # [N, 8, 16]
        y = self.conv3(y) - self.offsets[1]  # [N, 4, 16]
        y = F.avg_pool1d(y, 4).flatten(1)  # [N, 16]
        return self.bn1d(self.fc(y))

    @torch.jit.export
    def features(self, x):
        return self.bn(self.conv(x)) + self.offsets[0]


class Mutating(nn.Module):
    """Writes its attributes: PyTorch's freeze keeps `count` and `n`."""

    def __init__(self):
        super().__init__()
        self.count = 0
        self.register_buffer("n", torch.zeros(1))
        self.lin = nn.Linear(4, 4)

    def forward(self, x):
        self.count += 1
        self.n.add_(1.0)
        return self.lin(x) * self.n + self.count


@torch.jit.interface
class AddOneInterface(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        pass


class AddOne(nn.Module):
    def forward(self, x):
        return x + 1


class WithInterface(nn.Module):
    """An interface-typed submodule: the frozen archive must define the interface and the
    class of the object behind it (CLI test)."""

    impl: AddOneInterface

    def __init__(self):
        super().__init__()
        self.impl = AddOne()

    def forward(self, x):
        return self.impl(x) * 2


def randomize_bn(module):
    """Non-trivial running statistics, so that folding batch_norm is really tested."""
    for m in module.modules():
        if isinstance(m, (nn.BatchNorm1d, nn.BatchNorm2d)):
            if m.running_mean is not None:
                m.running_mean.uniform_(-0.5, 0.5)
                m.running_var.uniform_(0.5, 2.0)
            if m.weight is not None:
                with torch.no_grad():
                    m.weight.uniform_(0.5, 1.5)
                    m.bias.uniform_(-0.5, 0.5)


def save(out, name, arr):
    np.save(os.path.join(out, name), arr)


def run(m, x, method="forward"):
    with torch.no_grad():
        return getattr(m, method)(x).numpy()


def write_model(out, name, module, x):
    module.eval()
    scripted = torch.jit.script(module)
    scripted.save(os.path.join(out, name + ".pt"))
    save(out, name + "_in.npy", x.numpy())
    save(out, name + "_eager.npy", run(module, x))
    frozen = torch.jit.freeze(torch.jit.script(module).eval())
    save(out, name + "_frozen.npy", run(frozen, x))
    optimized = torch.jit.optimize_for_inference(torch.jit.script(module).eval())
    save(out, name + "_optimized.npy", run(optimized, x))
    return frozen


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    torch.manual_seed(0)

    resnet = torchvision.models.resnet18()
    randomize_bn(resnet)
    frozen = write_model(out, "resnet18", resnet, torch.randn(1, 3, 64, 64))
    kinds = collections.Counter(n.kind() for n in frozen.graph.nodes())
    with open(os.path.join(out, "resnet18_torch_frozen_kinds.json"), "w") as f:
        json.dump(dict(sorted(kinds.items())), f, indent=1)

    mobilenet = torchvision.models.mobilenet_v2()
    randomize_bn(mobilenet)
    write_model(out, "mobilenet_v2", mobilenet, torch.randn(1, 3, 64, 64))

    small = Small()
    randomize_bn(small)
    x = torch.randn(2, 3, 10, 10)
    frozen = write_model(out, "small", small, x)
    kinds = collections.Counter(n.kind() for n in frozen.graph.nodes())
    with open(os.path.join(out, "small_torch_frozen_kinds.json"), "w") as f:
        json.dump(dict(sorted(kinds.items())), f, indent=1)
    frozen = torch.jit.freeze(torch.jit.script(small).eval(), preserved_attrs=["features"])
    save(out, "small_features_frozen.npy", run(frozen, x, "features"))
    torch.jit.script(Small().train()).save(os.path.join(out, "small_train.pt"))

    mutating = Mutating().eval()
    xm = torch.randn(2, 4)
    torch.jit.script(mutating).save(os.path.join(out, "mutating.pt"))
    save(out, "mutating_in.npy", xm.numpy())
    ref = torch.jit.freeze(torch.jit.load(os.path.join(out, "mutating.pt")).eval())
    save(out, "mutating_frozen1.npy", run(ref, xm))
    save(out, "mutating_frozen2.npy", run(ref, xm))
    with open(os.path.join(out, "mutating_torch_frozen_code.txt"), "w") as f:
        f.write(ref.code)
    torch.jit.script(WithInterface().eval()).save(os.path.join(out, "with_interface.pt"))
    xi = torch.randn(2, 3)
    save(out, "with_interface_in.npy", xi.numpy())
    save(out, "with_interface_frozen.npy",
         run(torch.jit.freeze(torch.jit.load(os.path.join(out, "with_interface.pt")).eval()), xi))
    with open(os.path.join(out, "done"), "w") as f:
        f.write("ok\n")


if __name__ == "__main__":
    main()
