"""Models for the `torchless serve` tests (issue 20), written by real PyTorch.

    gen_serve_models.py OUT

OUT/repo is a Triton-style model repository (NAME/VERSION/model.pt, NAME/config.json):
  classifier   a small CNN, batchable: x [N,3,8,8] -> logits [N,4]; 2 instances, dynamic batching
               (version 1 is an older copy: the server must serve version 2)
  compiled     the classifier, compiled at load (torchless compile, profiles from its dims)
  multi        forward(x: Tensor, idx: Tensor, scale: float) -> (x * scale, x.index_select(1, idx))
  words        forward(words: List[str]) -> List[str] (upper-cased, then the count as text);
               raises ValueError for an empty list; no config.json
  raiser       forward(x: Tensor, flag: int) raises RuntimeError("bad flag 2") when flag == 2
  slow         forward(x: Tensor, iters: int): iters matrix products (for queueing tests);
               1 instance, 1 thread
  wide         a one-conv net on x [N,3,64,64] (inputs of 48 KiB a row: the tensor allocator's
               cached sizes), dynamic batching up to 8; wide_plain the same without batching
               (for the memory test)
  wino         3x3 convolutions of 64 channels (the engine's Winograd kernels) on x [N,64,8,8],
               dynamic batching up to 4: every batch size is planned on the loading thread and
               run on the instance's worker (Note [Plan scratchpads] in layer_exec.cpp)
OUT/loading    a repository of its own: slowwarm, whose warm-up at load (forward's default of
               20,000 matrix products on zeros) keeps the server not ready for a while
OUT/cases.npz  inputs and PyTorch's outputs.
"""
import json
import os
import sys
from typing import List, Tuple

import numpy as np
import torch

torch.manual_seed(0)
out = sys.argv[1]
repo = os.path.join(out, "repo")


def save(name, version, module, config=None):
    d = os.path.join(repo, name, str(version))
    os.makedirs(d, exist_ok=True)
    torch.jit.save(module, os.path.join(d, "model.pt"))
    if config is not None:
        with open(os.path.join(repo, name, "config.json"), "w") as f:
            json.dump(config, f, indent=2)


class Classifier(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 8, 3, padding=1)
        self.bn = torch.nn.BatchNorm2d(8)
        self.fc = torch.nn.Linear(8, 4)

    def forward(self, x):
        y = torch.relu(self.bn(self.conv(x)))
        return self.fc(y.mean(dim=(2, 3)))


class Multi(torch.nn.Module):
    def forward(self, x: torch.Tensor, idx: torch.Tensor, scale: float) -> Tuple[torch.Tensor, torch.Tensor]:
        return x * scale, x.index_select(1, idx)


class Words(torch.nn.Module):
    def forward(self, words: List[str]) -> List[str]:
        if len(words) == 0:
            raise ValueError("no words")
        out: List[str] = []
        for w in words:
            out.append(w.upper())
        out.append(str(len(words)))
        return out


class Raiser(torch.nn.Module):
    def forward(self, x: torch.Tensor, flag: int) -> torch.Tensor:
        if flag == 2:
            raise RuntimeError("bad flag 2")
        return x + flag


class Slow(torch.nn.Module):
    def forward(self, x: torch.Tensor, iters: int) -> torch.Tensor:
        y = x
        for _ in range(iters):
            y = torch.tanh(y @ x)
        return y


class Wide(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 4, 3, padding=1)

    def forward(self, x):
        return torch.relu(self.conv(x)).mean(dim=(2, 3))


class Wino(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.a = torch.nn.Conv2d(64, 64, 3, padding=1)
        self.b = torch.nn.Conv2d(64, 64, 3, padding=1)

    def forward(self, x):
        return torch.relu(self.b(torch.relu(self.a(x)))).mean(dim=(2, 3))


clf = Classifier().eval()
with torch.no_grad():
    clf.bn.running_mean.uniform_(-0.5, 0.5)
    clf.bn.running_var.uniform_(0.5, 1.5)
old = Classifier().eval()
save("classifier", 1, torch.jit.script(old))
save("classifier", 2, torch.jit.script(clf), {
    "max_batch_size": 8,
    "input": [{"name": "x", "data_type": "TYPE_FP32", "dims": [3, 8, 8]}],
    "output": [{"name": "logits", "data_type": "TYPE_FP32", "dims": [4]}],
    "instance_group": [{"count": 2}],
    "dynamic_batching": {"max_queue_delay_microseconds": 2000},
    "threads": 1,
})
save("compiled", 1, torch.jit.script(clf), {
    "max_batch_size": 4,
    "input": [{"name": "x", "data_type": "TYPE_FP32", "dims": [3, 8, 8]}],
    "compile": {"precision": "fp32", "min_block_size": 1},
})
save("multi", 1, torch.jit.script(Multi()), {
    "input": [{"name": "x", "data_type": "FP32", "dims": [2, 3]},
              {"name": "idx", "data_type": "INT64", "dims": [-1]},
              {"name": "scale", "data_type": "FP64", "dims": [1]}],
    "output": [{"name": "scaled"}, {"name": "picked"}],
})
save("words", 1, torch.jit.script(Words()))
save("raiser", 1, torch.jit.script(Raiser()))
save("slow", 1, torch.jit.script(Slow()), {"threads": 1, "max_queue_size": 2})
wide = {"max_batch_size": 8, "input": [{"name": "x", "data_type": "TYPE_FP32", "dims": [3, 64, 64]}], "threads": 1}
save("wide", 1, torch.jit.script(Wide().eval()), {**wide, "dynamic_batching": {"max_queue_delay_microseconds": 500}})
save("wide_plain", 1, torch.jit.script(Wide().eval()), wide)
wino = Wino().eval()
save("wino", 1, torch.jit.script(wino), {
    "max_batch_size": 4, "input": [{"name": "x", "data_type": "TYPE_FP32", "dims": [64, 8, 8]}],
    "dynamic_batching": {"max_queue_delay_microseconds": 100}, "threads": 1})

class SlowWarm(torch.nn.Module):
    def forward(self, x: torch.Tensor, iters: int = 20000) -> torch.Tensor:
        y = x
        for _ in range(iters):
            y = torch.tanh(y @ x)
        return y


d = os.path.join(out, "loading", "slowwarm")
os.makedirs(os.path.join(d, "1"), exist_ok=True)
torch.jit.save(torch.jit.script(SlowWarm()), os.path.join(d, "1", "model.pt"))
with open(os.path.join(d, "config.json"), "w") as f:
    json.dump({"input": [{"name": "x", "data_type": "TYPE_FP32", "dims": [64, 64]}], "threads": 1}, f)

x = torch.randn(3, 3, 8, 8)
mx = torch.randn(2, 3)
idx = torch.tensor([2, 0], dtype=torch.int64)
wx = torch.randn(3, 64, 8, 8)
with torch.no_grad():
    wy = wino(wx)
    logits = clf(x)
    scaled, picked = Multi()(mx, idx, 2.5)
np.savez(os.path.join(out, "cases.npz"), x=x.numpy(), logits=logits.numpy(), mx=mx.numpy(),
         idx=idx.numpy(), scaled=scaled.numpy(), picked=picked.numpy(), wx=wx.numpy(), wy=wy.numpy())
np.save(os.path.join(out, "x.npy"), x.numpy())
# PyTorch's answers for the string model (TorchScript's str.upper() changes ASCII letters only).
words = torch.jit.script(Words())
with open(os.path.join(out, "words.json"), "w") as f:
    json.dump({"torch less": words(["torch", "less"]), "abc été": words(["abc", "été"])}, f, ensure_ascii=False)
print("wrote", out)
