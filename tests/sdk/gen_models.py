"""Models for the SDK tests (tests/sdk/extra.cmake), written by real PyTorch.

    gen_models.py OUT_DIR

Each archive is what a libtorch user would load from C++: the PyTorch C++ export tutorial's
traced resnet18, a scripted classifier, a module with tuple / list / dict outputs, an exported
method and attributes, a BERT-like model over int64 token ids, a tuple input, a detection head
for hand-written post-processing, a model that raises, and random ops after manual_seed. The C API test also reads the
inputs and outputs saved next to them (.npy).
"""
import sys
from pathlib import Path
from typing import Dict, List, Tuple

import numpy as np
import torch
import torch.nn as nn
import torchvision

out = Path(sys.argv[1])
out.mkdir(parents=True, exist_ok=True)
torch.manual_seed(0)


def save(m, name):
    m.save(str(out / name))


# 1. The tutorial: traced resnet18 (random weights), input ones(1, 3, 224, 224).
r18 = torchvision.models.resnet18().eval()
with torch.no_grad():
    save(torch.jit.trace(r18, torch.ones(1, 3, 224, 224)), "resnet18_traced.pt")


# 2. A scripted image classifier (3x32x32 -> 10 logits).
class Classifier(nn.Module):
    def __init__(self):
        super().__init__()
        self.features = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(),
                                      nn.MaxPool2d(2), nn.Conv2d(8, 16, 3, padding=1), nn.ReLU(),
                                      nn.AdaptiveAvgPool2d(1))
        self.head = nn.Linear(16, 10)

    def forward(self, x):
        return self.head(torch.flatten(self.features(x), 1))


clf = Classifier().eval()
save(torch.jit.script(clf), "classifier.pt")
x = torch.linspace(-1, 1, 3 * 32 * 32).reshape(1, 3, 32, 32)
np.save(out / "classifier_in.npy", x.numpy())
with torch.no_grad():
    np.save(out / "classifier_out.npy", clf(x).numpy())


# 3. Tuple, list and dict outputs; an exported method; attributes.
class MultiOut(nn.Module):
    scale: float
    name: str
    steps: int

    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 3)
        self.register_buffer("offset", torch.tensor([0.5, -0.5, 1.0]))
        self.scale = 0.5
        self.name = "multi"
        self.steps = 3

    def forward(self, x: torch.Tensor) -> Tuple[torch.Tensor, List[torch.Tensor], Dict[str, torch.Tensor]]:
        y = self.lin(x) + self.offset
        parts = [y * self.scale, y.relu(), y.sum(1)]
        named = {"max": y.max(1)[0], "argmax": y.argmax(1), "mean": y.mean(1)}
        return y, parts, named

    @torch.jit.export
    def scale_by(self, x: torch.Tensor, k: float) -> torch.Tensor:
        return x * k + self.steps


multi = MultiOut().eval()
save(torch.jit.script(multi), "multi_out.pt")
mx = torch.arange(8, dtype=torch.float32).reshape(2, 4) / 4
np.save(out / "multi_in.npy", mx.numpy())
with torch.no_grad():
    y, parts, named = multi(mx)
    np.save(out / "multi_out0.npy", y.numpy())
    for i, p in enumerate(parts):
        np.save(out / f"multi_parts{i}.npy", p.numpy())
    np.save(out / "multi_scale_by.npy", multi.scale_by(mx, 2.0).numpy())


# 4. BERT-like: int64 token ids -> (hidden states, pooled).
class BertLike(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(1000, 16)
        self.pos = nn.Embedding(32, 16)
        layer = nn.TransformerEncoderLayer(16, 2, 32, dropout=0.0, batch_first=True)
        self.enc = nn.TransformerEncoder(layer, 1)
        self.pool = nn.Linear(16, 16)

    def forward(self, ids: torch.Tensor) -> Tuple[torch.Tensor, torch.Tensor]:
        pos = torch.arange(ids.size(1), device=ids.device).unsqueeze(0)
        h = self.enc(self.emb(ids) + self.pos(pos))
        return h, torch.tanh(self.pool(h[:, 0]))


save(torch.jit.script(BertLike().eval()), "bert_like.pt")


# 5. A tuple input.
class TupleIn(nn.Module):
    def forward(self, xs: Tuple[torch.Tensor, torch.Tensor]) -> torch.Tensor:
        a, b = xs
        return a * 2 + b


save(torch.jit.script(TupleIn()), "tuple_in.pt")


# 6. A detection head: [1, 3, 32, 32] -> [1, 64, 6] boxes (cx, cy, w, h, objectness, class score).
class Detector(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 6, 4, stride=4)

    def forward(self, x):
        y = self.conv(x).sigmoid()          # [1, 6, 8, 8]
        y = y.flatten(2).permute(0, 2, 1)   # [1, 64, 6]
        return y * torch.tensor([32.0, 32.0, 12.0, 12.0, 1.0, 1.0])


save(torch.jit.script(Detector().eval()), "detector.pt")


# 7. A model that raises on a bad input.
class Raises(nn.Module):
    def forward(self, x):
        if x.dim() != 4:
            raise ValueError("expected a 4-d input")
        return x + 1


save(torch.jit.script(Raises()), "raises.pt")


# 8. Random ops in TorchScript after torch.manual_seed (PyTorch's generator and transforms),
# with the outputs for a few seeds.
class RandomOps(nn.Module):
    def forward(self, seed: int) -> List[torch.Tensor]:
        torch.manual_seed(seed)
        out = [torch.rand(5), torch.randn(7), torch.randn(40), torch.randn(3, dtype=torch.float64),
               torch.randn(20, dtype=torch.float64), torch.randn(16), torch.rand(3, dtype=torch.float64)]
        a = torch.empty(10)
        a.uniform_(-2.0, 3.0)
        b = torch.empty(33)
        b.normal_(2.0, 3.0)
        c = torch.empty(5)
        c.normal_(2.0, 3.0)
        d = torch.empty(4, dtype=torch.float64)
        d.normal_(-1.0, 0.5)
        e = torch.empty(4, 6).t()
        e.normal_()
        f = torch.empty(6, 4)[:, 1:3]
        f.uniform_()
        g = torch.empty(6, dtype=torch.int32)
        g.random_()
        h = torch.empty(6, dtype=torch.float64)
        h.random_()
        out += [a, b, c, d, e, f, g, h]
        out += [torch.randint(10, (8,)), torch.randint(-5, 5, (2, 3)), torch.randint(0, 1099511627776, (3,)),
                torch.randint(10, (4,), dtype=None), torch.randperm(10), torch.bernoulli(torch.empty(12), 0.3),
                torch.bernoulli(torch.full((9,), 0.5)), torch.rand_like(torch.empty(2, 3)),
                torch.randn_like(torch.empty(17, dtype=torch.float64)), torch.randn(1000)]
        return out

    @torch.jit.export
    def bad_normal(self) -> torch.Tensor:
        return torch.empty(3, dtype=torch.int64).normal_()


# 9. Noise drawn inside forward from the caller's seed (tests/sdk/project/programs/random.cpp).
class Noisy(nn.Module):
    def forward(self, x: torch.Tensor) -> Tuple[torch.Tensor, torch.Tensor]:
        return x + torch.rand_like(x) * 0.1, torch.randn(2, 20)


save(torch.jit.script(Noisy()), "noisy.pt")
rnd = torch.jit.script(RandomOps())
save(rnd, "random_ops.pt")
for seed in (0, 12345, 2**40 + 7):
    for i, t in enumerate(rnd(seed)):
        np.save(out / f"random_{seed}_{i}.npy", t.numpy())
print("sdk models written to", out)
