#!/usr/bin/env python3
"""Oracle archives for the serialize tests (run by ctest as a fixture; see extra.cmake).

Usage: gen_archives.py OUTDIR [WILD_DIR]

Saves a few modules with torch.jit.save into OUTDIR and writes OUTDIR/manifest.json with, per
archive, every named_parameters()/named_buffers() entry: name, shape, dtype, and a checksum of
the tensor's bytes in row-major order (sum of byte[i] * (i % 251 + 1), mod 2**64; quantized
tensors use their int_repr bytes). Writes into a temporary folder and renames it at the end, so
readers never see a half-written set.
"""
import enum
import json
import os
import shutil
import sys
from typing import Dict, List, Tuple

import numpy as np
import torch
import torch.nn as nn


def checksum(t: torch.Tensor) -> int:
    t = t.detach()
    if t.is_quantized:
        t = t.int_repr()
    b = t.contiguous().reshape(-1).view(torch.uint8).numpy().astype(np.uint64)
    w = (np.arange(b.size, dtype=np.uint64) % np.uint64(251)) + np.uint64(1)
    return int(np.sum(b * w, dtype=np.uint64))


def dtype_name(t: torch.Tensor) -> str:
    return str(t.dtype).replace("torch.", "")


def describe(m) -> Dict:
    out = {"parameters": [], "buffers": []}
    for kind, items in (("parameters", m.named_parameters()), ("buffers", m.named_buffers())):
        for name, t in items:
            out[kind].append({"name": name, "shape": list(t.shape), "dtype": dtype_name(t),
                              "checksum": str(checksum(t)), "requires_grad": bool(t.requires_grad)})
    return out


class Sub(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(3, 2)
        self.register_buffer("buf", torch.arange(6, dtype=torch.float32).reshape(2, 3))

    def forward(self, x):
        return self.lin(x) + self.buf.sum()


class Scripted(nn.Module):
    count: int
    ratio: float
    name: str
    sizes: List[int]
    names: List[str]
    table: Dict[str, int]
    pair: Tuple[int, str]

    def __init__(self):
        super().__init__()
        self.p = nn.Parameter(torch.randn(2, 3))
        base = torch.arange(24, dtype=torch.float32).reshape(4, 6)
        self.register_buffer("view_t", base.t()[1:3])            # non-contiguous view, offset
        shared = torch.linspace(0, 1, 10, dtype=torch.float64)
        self.register_buffer("shared_a", shared[2:6])             # two views, one storage
        self.register_buffer("shared_b", shared.view(2, 5))
        self.register_buffer("scalar", torch.tensor(3.5))         # 0-dim
        self.register_buffer("empty", torch.zeros(0, 4))          # zero elements
        self.sub = Sub()
        self.subs = nn.ModuleList([nn.Linear(2, 2), nn.ReLU()])
        self.count = 7
        self.ratio = 0.25
        self.name = "héllo"
        self.sizes = [1, 2, 3]
        self.names = ["a", "b"]
        self.table = {"x": 1, "y": 2}
        self.pair = (4, "four")

    def forward(self, x):
        y = self.sub(x) + self.p.sum() + self.view_t.sum() + self.count
        for m in self.subs:
            y = m(y)
        return y


class Shared(nn.Module):
    def __init__(self):
        super().__init__()
        self.a = nn.Linear(4, 4)
        self.b = nn.Linear(4, 4)
        self.b.weight = self.a.weight  # one Parameter under two names

    def forward(self, x):
        return self.b(self.a(x))


class AllDtypes(nn.Module):
    def __init__(self):
        super().__init__()
        g = torch.Generator().manual_seed(0)
        base = torch.randn(2, 3, generator=g) * 10
        for dt in (torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64, torch.float16,
                   torch.bfloat16, torch.float32, torch.float64, torch.complex64,
                   torch.complex128, torch.bool):
            self.register_buffer("t_" + str(dt).replace("torch.", ""), base.to(dt))
        self.register_buffer("q_tensor", torch.quantize_per_tensor(base.abs(), 0.1, 3, torch.quint8))
        self.register_buffer("q_channel", torch.quantize_per_channel(
            base, torch.tensor([0.1, 0.2], dtype=torch.float64), torch.tensor([0, 1]), 0, torch.qint8))

    def forward(self, x):
        return x + self.t_float32


class Color(enum.Enum):
    RED = 1
    GREEN = 2


class Odd(nn.Module):
    def __init__(self):
        super().__init__()
        self.dev = torch.device("cpu")
        self.z = complex(1.0, -2.0)
        self.color = Color.GREEN
        self.w = nn.Parameter(torch.ones(2))

    def forward(self, x):
        if self.color == Color.GREEN:
            return x * self.w
        return x


class WithState(nn.Module):
    def __init__(self):
        super().__init__()
        self.t = torch.ones(3)
        self.k = 7

    @torch.jit.export
    def __getstate__(self):
        return (self.t, self.k, self.training)

    @torch.jit.export
    def __setstate__(self, state: Tuple[torch.Tensor, int, bool]):
        self.t = state[0]
        self.k = state[1]
        self.training = state[2]

    def forward(self, x):
        return x + self.t


class TracedConst(nn.Module):
    def forward(self, x):
        return x + torch.tensor([1.0, 2.0, 3.0]) + torch.arange(3).float()


class Gelu(nn.Module):
    def forward(self, x):
        return torch.nn.functional.gelu(x)


def main():
    out = sys.argv[1]
    tmp = out + ".tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    os.makedirs(tmp)
    torch.manual_seed(0)
    manifest = {"torch": torch.__version__, "archives": {}}

    def save(name, m, extra=None, expect=None):
        path = os.path.join(tmp, name + ".pt")
        torch.jit.save(m, path, _extra_files=extra or {})
        entry = describe(m)
        entry["file"] = name + ".pt"
        entry["expect"] = expect or {}
        manifest["archives"][name] = entry

    save("scripted", torch.jit.script(Scripted()), extra={"meta.txt": "hello"},
         expect={"count": 7, "ratio": 0.25, "name": "héllo", "sizes": [1, 2, 3],
                 "names": ["a", "b"], "table": {"x": 1, "y": 2}, "pair": [4, "four"]})
    save("shared", torch.jit.script(Shared()))
    save("dtypes", torch.jit.script(AllDtypes()))
    save("odd", torch.jit.script(Odd()))
    save("withstate", torch.jit.script(WithState()))
    save("traced_const", torch.jit.trace(TracedConst(), torch.zeros(3)))
    save("gelu", torch.jit.script(Gelu()))

    import torchvision
    r = torchvision.models.resnet18(weights=None).eval()
    save("resnet18", torch.jit.trace(r, torch.randn(1, 3, 64, 64)))

    # PyTorch's view of the real archives in shared/wild (argv[2]), loaded onto the CPU.
    if len(sys.argv) > 2 and os.path.isdir(sys.argv[2]):
        manifest["wild"] = {}
        for name in sorted(os.listdir(sys.argv[2])):
            path = os.path.join(sys.argv[2], name, "model.pt")
            if not os.path.exists(path):
                continue
            try:
                manifest["wild"][name] = describe(torch.jit.load(path, map_location="cpu"))
            except Exception as e:  # noqa: BLE001 - recorded, the C++ test skips it
                manifest["wild"][name] = {"error": str(e).splitlines()[0] if str(e) else repr(e)}

    # Seeds for the fuzz targets: every pickle of the small archives, and the archives.
    import zipfile
    for sub in ("unpickler", "archive"):
        os.makedirs(os.path.join(tmp, "fuzz_seeds", sub))
    for name, entry in manifest["archives"].items():
        path = os.path.join(tmp, entry["file"])
        if os.path.getsize(path) > 64 * 1024:
            continue
        shutil.copy(path, os.path.join(tmp, "fuzz_seeds", "archive", name + ".pt"))
        with zipfile.ZipFile(path) as z:
            for n in z.namelist():
                if n.endswith(".pkl"):
                    seed = name + "_" + n.replace("/", "_")
                    with open(os.path.join(tmp, "fuzz_seeds", "unpickler", seed), "wb") as f:
                        f.write(z.read(n))

    with open(os.path.join(tmp, "manifest.json"), "w") as f:
        json.dump(manifest, f, indent=1)
    shutil.rmtree(out, ignore_errors=True)
    os.rename(tmp, out)


if __name__ == "__main__":
    main()
