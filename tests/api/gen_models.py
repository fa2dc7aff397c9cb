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
import torchvision

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


class LayerScaleMlp(nn.Module):
    """A CaiT / DeiT III residual MLP: x + gamma * mlp(x), and the scale divided out again
    (fold_linear_mul folds both into the linears' weights)."""

    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(8, 16)
        self.fc2 = nn.Linear(16, 8)
        self.gamma = nn.Parameter(torch.rand(8) + 0.5)
        self.fc3 = nn.Linear(8, 8)

    def forward(self, x):
        h = x + self.gamma * self.fc2(F.gelu(self.fc1(x)))
        return self.fc3(h) / self.gamma


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


class SelfRenamed(nn.Module):
    """Methods whose receiver is not called self (valid Python and TorchScript)."""

    def other(s, x: torch.Tensor) -> torch.Tensor:
        return x * 2

    def forward(s, x):
        return s.other(x) + 1


def helper(x: torch.Tensor, k: int) -> torch.Tensor:
    return x + k


class WithHelper(nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("running", torch.arange(4.0))

    def forward(self, x):
        return helper(x, 3) + self.running


class InterpolateOverloads(nn.Module):
    """F.interpolate called with a size list, a float scale and a list of scales: three
    overloads of one name in the archive (functional.py, ___torch_mangle_0.py, _1.py), which
    must stay three functions (their constants once pooled into one)."""

    def forward(self, x, both: bool = False):
        a = F.interpolate(x, size=(8, 8), mode="bilinear", align_corners=False)
        b = F.interpolate(x, scale_factor=2.0, mode="nearest")
        c = F.interpolate(x, scale_factor=(1.5, 2.0), mode="bilinear", recompute_scale_factor=True)
        if both:  # PyTorch refuses a size and a scale factor together (load_oracle_test.cpp)
            c = F.interpolate(x, size=(8, 8), scale_factor=2.0)
        return a, b, c


class LibraryBranches(nn.Module):
    """Library functions whose scripted bodies name overloads in branches this call does not
    take (torch.norm's dtype overloads, F.binary_cross_entropy's weight), F.pad's circular mode,
    and nn.MultiheadAttention without weights, whose second result is None (PyTorch's undefined
    tensor) on both its paths."""

    def __init__(self):
        super().__init__()
        self.mha = nn.MultiheadAttention(8, 2, batch_first=True)

    def forward(self, x):
        n = torch.norm(x, p=2, dim=-1)
        p = F.pad(x.unsqueeze(1), (2, -1, 1, 1), mode="circular")
        y, w = self.mha(x, x, x, need_weights=False)
        # F.binary_cross_entropy's scripted body calls _infer_size in its weight branch
        bce = F.binary_cross_entropy(torch.sigmoid(x), torch.sigmoid(x.flip(0)))
        return n, p, y, w is None, bce


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


# ---- the issue-6 corpus: models `torchless run` must run with PyTorch's numbers ---------------

class DCGANGenerator(nn.Module):
    def __init__(self, nz=16, ngf=8, nc=3):
        super().__init__()
        layers = []
        chans = [nz, ngf * 8, ngf * 4, ngf * 2, ngf]
        for i in range(4):
            layers += [nn.ConvTranspose2d(chans[i], chans[i + 1], 4, 1 if i == 0 else 2,
                                          0 if i == 0 else 1, bias=False),
                       nn.BatchNorm2d(chans[i + 1]), nn.ReLU(True)]
        layers += [nn.ConvTranspose2d(ngf, nc, 4, 2, 1, bias=False), nn.Tanh()]
        self.main = nn.Sequential(*layers)

    def forward(self, x):
        return self.main(x)


class DCGANDiscriminator(nn.Module):
    def __init__(self, ndf=8, nc=3):
        super().__init__()
        self.main = nn.Sequential(
            nn.Conv2d(nc, ndf, 4, 2, 1, bias=False), nn.LeakyReLU(0.2, inplace=True),
            nn.Conv2d(ndf, ndf * 2, 4, 2, 1, bias=False), nn.BatchNorm2d(ndf * 2),
            nn.LeakyReLU(0.2, inplace=True),
            nn.Conv2d(ndf * 2, ndf * 4, 4, 2, 1, bias=False), nn.BatchNorm2d(ndf * 4),
            nn.LeakyReLU(0.2, inplace=True),
            nn.Conv2d(ndf * 4, 1, 4, 1, 0, bias=False), nn.Sigmoid())

    def forward(self, x):
        return self.main(x).view(-1, 1).squeeze(1)


class SuperResolutionNet(nn.Module):
    """The torch.onnx tutorial's super-resolution model (pixel_shuffle)."""

    def __init__(self, upscale_factor=3):
        super().__init__()
        self.relu = nn.ReLU()
        self.conv1 = nn.Conv2d(1, 32, (5, 5), (1, 1), (2, 2))
        self.conv2 = nn.Conv2d(32, 32, (3, 3), (1, 1), (1, 1))
        self.conv3 = nn.Conv2d(32, 16, (3, 3), (1, 1), (1, 1))
        self.conv4 = nn.Conv2d(16, upscale_factor ** 2, (3, 3), (1, 1), (1, 1))
        self.pixel_shuffle = nn.PixelShuffle(upscale_factor)

    def forward(self, x):
        x = self.relu(self.conv1(x))
        x = self.relu(self.conv2(x))
        x = self.relu(self.conv3(x))
        return self.pixel_shuffle(self.conv4(x))


class WordLanguageModel(nn.Module):
    """pytorch/examples word_language_model: Embedding + LSTM / GRU / RNN_TANH / RNN_RELU."""

    def __init__(self, rnn_type, ntoken=50, ninp=16, nhid=24, nlayers=2):
        super().__init__()
        self.drop = nn.Dropout(0.2)
        self.encoder = nn.Embedding(ntoken, ninp)
        if rnn_type in ("LSTM", "GRU"):
            self.rnn = getattr(nn, rnn_type)(ninp, nhid, nlayers, dropout=0.2)
        else:
            self.rnn = nn.RNN(ninp, nhid, nlayers, nonlinearity=rnn_type[4:].lower(), dropout=0.2)
        self.decoder = nn.Linear(nhid, ntoken)
        self.ntoken = ntoken

    def forward(self, input: torch.Tensor):
        emb = self.drop(self.encoder(input))
        output, hidden = self.rnn(emb)
        decoded = self.decoder(self.drop(output))
        return F.log_softmax(decoded.view(-1, self.ntoken), dim=1), hidden


class BertLike(nn.Module):
    def __init__(self, vocab=100, d=32, heads=4, layers=2, maxlen=16):
        super().__init__()
        self.tok = nn.Embedding(vocab, d)
        self.pos = nn.Embedding(maxlen, d)
        self.norm = nn.LayerNorm(d)
        layer = nn.TransformerEncoderLayer(d, heads, 4 * d, batch_first=True, activation="gelu")
        self.encoder = nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)
        self.pooler = nn.Linear(d, d)

    def forward(self, ids, mask: Optional[torch.Tensor] = None):
        positions = torch.arange(ids.size(1), device=ids.device).unsqueeze(0)
        x = self.norm(self.tok(ids) + self.pos(positions))
        x = self.encoder(x, src_key_padding_mask=mask)
        return x, torch.tanh(self.pooler(x[:, 0]))


class PackedBiLstm(nn.Module):
    """Text classifier over padded batches: pack_padded_sequence -> 2-layer bi-LSTM ->
    pad_packed_sequence (aten::lstm.data, _pack_padded_sequence, _pad_packed_sequence)."""

    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(30, 8)
        self.lstm = nn.LSTM(8, 6, 2, batch_first=True, bidirectional=True)
        self.head = nn.Linear(12, 3)

    def forward(self, tokens, lengths):
        packed = nn.utils.rnn.pack_padded_sequence(self.embed(tokens), lengths, batch_first=True,
                                                   enforce_sorted=False)
        out, (h, c) = self.lstm(packed)
        padded, lens = nn.utils.rnn.pad_packed_sequence(out, batch_first=True)
        return self.head(padded), lens, h, c


class PackedGru(nn.Module):
    def __init__(self, kind="GRU"):
        super().__init__()
        self.rnn = nn.GRU(5, 4, 2, bidirectional=True) if kind == "GRU" else \
            nn.RNN(5, 4, 2, nonlinearity=kind[4:].lower(), bidirectional=True)

    def forward(self, x, lengths):
        packed = nn.utils.rnn.pack_padded_sequence(x, lengths, enforce_sorted=False)
        out, h = self.rnn(packed)
        padded, lens = nn.utils.rnn.pad_packed_sequence(out, total_length=8)
        return padded, h


class Detector(nn.Module):
    """A detection head's post-processing: roi_align over proposals, scores, batched NMS
    (torchvision::roi_align, torchvision::nms)."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 4, 3, padding=1)
        self.cls = nn.Linear(4 * 2 * 2, 1)

    def forward(self, images, boxes, labels):
        feats = self.conv(images)
        rois = torch.cat([torch.zeros_like(boxes[:, :1]), boxes], 1)
        pooled = torch.ops.torchvision.roi_align(feats, rois, 0.5, 2, 2, 2, True)
        scores = torch.sigmoid(self.cls(pooled.flatten(1))).squeeze(1)
        keep = torchvision.ops.batched_nms(boxes, scores, labels, 0.3)
        return boxes[keep], scores[keep], keep


class RoiAlignBoxList(nn.Module):
    """torchvision.ops.roi_align with a list of per-image boxes (MultiScaleRoIAlign's call)."""

    def forward(self, feats, boxes: List[torch.Tensor]):
        return torchvision.ops.roi_align(feats, boxes, [2, 2], 0.5, 2, True)


class TextClassifier(nn.Module):
    """The torchtext tutorial's classifier: EmbeddingBag (mean) + Linear."""

    def __init__(self):
        super().__init__()
        self.embedding = nn.EmbeddingBag(40, 8, mode="mean")
        self.fc = nn.Linear(8, 4)

    def forward(self, text, offsets):
        return self.fc(self.embedding(text, offsets))


class ScatterEinsum(nn.Module):
    """Graph-network style aggregation and an einsum attention (scatter_add, index_add,
    scatter_reduce, einsum, searchsorted, unique)."""

    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 4)

    def forward(self, x, edges, q, k):
        msg = self.lin(x)[edges[0]]
        agg = torch.zeros_like(x).index_add(0, edges[1], msg)
        idx = edges[1].unsqueeze(1).expand(-1, 4)
        agg2 = torch.zeros_like(x).scatter_add(0, idx, msg)
        mx = x.scatter_reduce(0, idx, msg, "amax", include_self=False)
        att = torch.softmax(torch.einsum("bqd,bkd->bqk", q, k) / 2.0, -1)
        ctx = torch.einsum("bqk,bkd->bqd", att, k)
        u, counts = torch.unique(edges[1], return_counts=True)
        pos = torch.searchsorted(u, edges[1])
        return agg, agg2, mx, ctx, counts, pos


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


def write_case(root, name, module, args, method="forward", rtol=1e-4, atol=1e-4, dump_params=True):
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
        elif isinstance(a, list) and all(isinstance(v, torch.Tensor) for v in a):
            for k, v in enumerate(a):
                np.save(os.path.join(d, f"in{i}_{k}.npy"), v.numpy())
            words.append("@list:" + ",".join(f"in{i}_{k}.npy" for k in range(len(a))))
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
    if not dump_params:  # corpus models: outputs only (the weights would double the size)
        meta = {"method": method, "args": words, "outputs": outputs, "rtol": rtol, "atol": atol}
        with open(os.path.join(d, "meta.json"), "w") as f:
            json.dump(meta, f, indent=1)
        return
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
    write_case(root, "layer_scale_mlp_scripted", torch.jit.script(LayerScaleMlp().eval()), [r(2, 5, 8)])
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
    write_case(root, "script_class_eval", torch.jit.script(WithScriptClass().eval()), [r(3, 4)])
    write_case(root, "dict_io", torch.jit.script(DictIO()), [{"a": r(2), "b": r(2)}])
    tm = torch.jit.script(TwoMethods())
    write_case(root, "two_methods_forward", tm, [r(2, 3)])
    write_case(root, "two_methods_scaled", tm, [r(2, 3), 2.5], method="scaled")
    write_case(root, "free_function_buffer", torch.jit.script(WithHelper()), [r(4)])
    write_case(root, "enum", torch.jit.script(WithEnum()), [r(3), True])
    write_case(root, "self_renamed", torch.jit.script(SelfRenamed()), [r(3)])
    write_case(root, "interface", torch.jit.script(WithInterface()), [r(3)])
    write_case(root, "setstate", torch.jit.script(WithState()), [r(3)])
    write_case(root, "lstm_scripted", torch.jit.script(Lstm().eval()), [r(2, 5, 4)])
    interp = torch.jit.script(InterpolateOverloads())
    write_case(root, "interpolate_overloads", interp, [r(1, 2, 4, 5)])
    try:
        interp(r(1, 2, 4, 5), True)
        raise AssertionError("PyTorch accepted F.interpolate with a size and a scale factor")
    except torch.jit.Error as e:
        assert "only one of size or scale_factor should be defined" in str(e), str(e)
    write_case(root, "library_branches", torch.jit.script(LibraryBranches().eval()), [r(2, 3, 8)])
    x, lengths = r(3, 5, 8), torch.tensor([5, 3, 2])
    write_case(root, "lstm_proj_scripted", torch.jit.script(LstmProj().eval()), [x, lengths])
    # Saved in training mode: without dropout between layers a recurrent layer computes what
    # eval does, so it runs (a single layer's dropout argument is unused).
    rnns = nn.ModuleList([nn.LSTM(4, 5, 2), nn.GRU(4, 3, 1, dropout=0.0)]).train()
    write_case(root, "rnn_train_mode", torch.jit.script(RnnTrainMode(rnns)), [r(6, 2, 4)])
    # torchvision's transforms scripted as a preprocessing module (enum default arguments,
    # InterpolationMode.value, annotated Union assignments in one branch of an if).
    import torchvision.transforms as T
    pre = nn.Sequential(T.Resize([80]), T.CenterCrop([64]), T.ConvertImageDtype(torch.float),
                        T.Normalize([0.485, 0.456, 0.406], [0.229, 0.224, 0.225]))
    write_case(root, "transforms_uint8_scripted", torch.jit.script(pre),
               [torch.randint(0, 256, (3, 100, 120), dtype=torch.uint8)])
    pre2 = nn.Sequential(T.Resize([70, 90], interpolation=T.InterpolationMode.BICUBIC), T.Grayscale(3),
                         T.Pad([2], padding_mode="reflect"), T.GaussianBlur([5, 5], sigma=[1.0, 1.0]))
    write_case(root, "transforms_float_scripted", torch.jit.script(pre2), [torch.rand(2, 3, 50, 60)])
    # Resize with antialias (torchvision's default for tensors from 0.17; _upsample_*_aa), then
    # a classifier on the shrunken image, as a scripted preprocessing + model archive.
    pre3 = nn.Sequential(T.Resize([48, 40], antialias=True),
                         T.Resize([24], interpolation=T.InterpolationMode.BICUBIC, antialias=True),
                         nn.Conv2d(3, 4, 3), nn.AdaptiveAvgPool2d(1), nn.Flatten())
    write_case(root, "transforms_antialias_scripted", torch.jit.script(pre3.eval()),
               [torch.rand(2, 3, 150, 130) * 255], rtol=1e-4, atol=1e-4)
    write_case(root, "stateful_convs_scripted", torch.jit.script(StatefulConvs().eval()),
               [torch.ones(1, 3, 8, 8)], rtol=1e-4, atol=1e-3)
    write_case(root, "data_sized_slice_scripted", torch.jit.script(DataSizedSlice().eval()),
               [torch.ones(2, 6), torch.tensor([6, 2])])
    write_case(root, "optional_by_data_scripted", torch.jit.script(OptionalByData().eval()),
               [torch.ones(2, 3)])
    # Scripted, the encoder packs the batch into a nested tensor when the mask is left-aligned
    # (padded rows zero, dim 1 cut to the longest sequence) and runs dense with the mask when
    # not. calls/: more masks for the same module, called in this order (prepare_test.cpp).
    enc_s = torch.jit.script(EncoderPadded().eval())
    x6 = r(3, 6, 16)
    pads = [torch.tensor([[False] * 4 + [True] * 2, [False] * 2 + [True] * 4, [False] * 3 + [True] * 3]),
            torch.tensor([[True] + [False] * 5, [False] * 2 + [True] * 4, [False] * 6]),
            torch.tensor([[False] * 6, [False] * 2 + [True] * 4, [False] * 5 + [True]]),
            torch.tensor([[False] * 2 + [True] * 4, [False] * 3 + [True] * 3, [False] + [True] * 5])]
    write_case(root, "encoder_padded_scripted", enc_s, [x6, pads[0]])
    loaded_enc = torch.jit.load(os.path.join(root, "encoder_padded_scripted", "model.pt"))
    calls = os.path.join(root, "encoder_padded_scripted", "calls")
    os.makedirs(calls, exist_ok=True)
    for k, pad in enumerate(pads):
        with torch.no_grad():
            y = loaded_enc(x6, pad)
        np.save(os.path.join(calls, f"pad{k}.npy"), pad.numpy())
        np.save(os.path.join(calls, f"out{k}.npy"), y.numpy())
    write_case(root, "nested_output_size_scripted", torch.jit.script(NestedOutputSize().eval()),
               [r(2, 5, 3), torch.tensor([[False] * 3 + [True] * 2, [False] * 4 + [True]])])
    write_case(root, "distances_grids_scripted", torch.jit.script(DistancesAndGrids().eval()),
               [r(2, 4, 3), torch.tensor([[[0.9, -0.2, 0.1], [0.3, 1.1, -0.2]]]).repeat(2, 1, 1), r(2, 2, 7, 8)])
    write_case(root, "mvit_positional_encoding_scripted", torch.jit.script(PositionalEncodingMvit().eval()),
               [r(2, 12, 8)])
    # Traced under no_grad, the encoder records its nested-tensor fast path; the second mask
    # pads every sequence, so the output is cut to the longest (3 of 5 positions).
    enc = EncoderPadded().eval()
    x5 = r(2, 5, 16)
    for name, pad in (("encoder_nested_traced", torch.tensor([[False] * 5, [False] * 2 + [True] * 3])),
                      ("encoder_nested_short_traced", torch.tensor([[False] * 3 + [True] * 2, [False] + [True] * 4]))):
        with torch.no_grad():
            traced = torch.jit.trace(enc, (x5, pad), check_trace=False)
        write_case(root, name, traced, [x5, pad])
    write_case(root, "inf_values", torch.jit.script(Doubled()),
               [torch.tensor([-float("inf"), 1.0, float("inf"), float("nan")])])
    write_case(root, "to_list_scripted", torch.jit.script(ToList()),
               [r(2, 3), torch.tensor([[4, -1]]), torch.tensor(2.5, dtype=torch.float64)])
    import torchvision
    rn = torchvision.models.resnet18(num_classes=10).eval()
    write_case(root, "resnet18_traced", torch.jit.trace(rn, r(1, 3, 64, 64)), [r(1, 3, 64, 64)],
               rtol=1e-3, atol=1e-3)
    write_case(root, "resnet18_scripted", torch.jit.script(rn), [r(1, 3, 64, 64)],
               rtol=1e-3, atol=1e-3)
    corpus(root)


def randomize_bn(model):
    """Random batch-norm statistics and affine parameters (the defaults are 0/1), and random
    ConvNeXt layer scales (1e-6 by default, which would hide what the blocks compute)."""
    with torch.no_grad():
        for m in model.modules():
            if isinstance(getattr(m, "layer_scale", None), torch.Tensor):
                m.layer_scale.uniform_(0.2, 1.5)
            if isinstance(m, nn.modules.batchnorm._BatchNorm):
                m.running_mean.uniform_(-0.2, 0.2)
                m.running_var.uniform_(0.5, 1.5)
                if m.weight is not None:
                    m.weight.uniform_(0.5, 1.5)
                    m.bias.uniform_(-0.2, 0.2)
    return model


def narrow_classifier(model, width):
    """AlexNet / VGG with the hidden Linear layers of the classifier narrowed to `width`."""
    lin = [i for i, m in enumerate(model.classifier) if isinstance(m, torch.nn.Linear)]
    first = model.classifier[lin[0]]
    model.classifier[lin[0]] = torch.nn.Linear(first.in_features, width)
    for i in lin[1:-1]:
        model.classifier[i] = torch.nn.Linear(width, width)
    model.classifier[lin[-1]] = torch.nn.Linear(width, model.classifier[lin[-1]].out_features)
    return model


def corpus(root):
    """Issue 6's corpus (cases named corpus_*): torchvision classifiers traced and scripted,
    fcn_resnet50, DCGAN, super-resolution, word language models, TransformerEncoder, a
    BERT-like encoder, packed-sequence RNNs, torchvision detection ops, EmbeddingBag, scatter /
    einsum. rtol = atol = 1e-4, 1e-3 for convnets deeper than 20 layers."""
    tv = torchvision.models

    def case(*args, **kwargs):  # outputs only: the weights' .npy files would double the size
        write_case(*args, dump_params=False, **kwargs)
    r = torch.randn
    deep = dict(rtol=1e-3, atol=1e-3)
    with torch.no_grad():
        # (name, constructor, input side, deeper than 20 layers, traced, scripted). AlexNet's and
        # VGG's classifiers are narrowed (Linear layers of 256/64 features instead of 4096: the
        # same operators, archives of 20-45 MB instead of 230-510 MB); wide_resnet50_2 is
        # left out for size (270 MB; resnext50_32x4d has its operators).
        classifiers = [
            ("squeezenet1_1", lambda: tv.squeezenet1_1(num_classes=10), 64, False, True, True),
            ("mobilenet_v2", lambda: tv.mobilenet_v2(num_classes=10), 64, True, True, True),
            ("mobilenet_v3_small", lambda: tv.mobilenet_v3_small(num_classes=10), 64, True, True, True),
            ("shufflenet_v2_x0_5", lambda: tv.shufflenet_v2_x0_5(num_classes=10), 64, True, True, True),
            ("mnasnet0_5", lambda: tv.mnasnet0_5(num_classes=10), 64, True, False, True),
            ("efficientnet_b0", lambda: tv.efficientnet_b0(num_classes=10), 64, True, False, True),
            ("densenet121", lambda: tv.densenet121(num_classes=10), 32, True, True, False),
            ("googlenet", lambda: tv.googlenet(num_classes=10, aux_logits=False, init_weights=False), 64,
             True, True, True),
            ("regnet_y_400mf", lambda: tv.regnet_y_400mf(num_classes=10), 32, True, False, True),
            ("alexnet_narrow", lambda: narrow_classifier(tv.alexnet(num_classes=10), 256), 64, False,
             True, True),
            ("vgg11_narrow", lambda: narrow_classifier(tv.vgg11(num_classes=10), 64), 32, False,
             False, True),
            ("resnext50_32x4d", lambda: tv.resnext50_32x4d(num_classes=10), 32, True, False, True),
            ("convnext_tiny", lambda: tv.convnext_tiny(num_classes=10), 32, True, False, True),
            ("inception_v3", lambda: tv.inception_v3(num_classes=10, aux_logits=False, init_weights=False),
             80, True, False, True),
        ]
        for name, ctor, side, is_deep, traced, scripted in classifiers:
            model = randomize_bn(ctor().eval())
            tol = deep if is_deep else {}
            x = r(1, 3, side, side)
            if traced:
                case(root, f"corpus_{name}_traced", torch.jit.trace(model, x), [r(1, 3, side, side)],
                           **tol)
            if scripted:
                case(root, f"corpus_{name}_scripted", torch.jit.script(model), [r(1, 3, side, side)],
                           **tol)
        fcn = randomize_bn(tv.segmentation.fcn_resnet50(num_classes=5, weights_backbone=None,
                                                        aux_loss=False).eval())
        case(root, "corpus_fcn_resnet50_scripted", torch.jit.script(fcn), [r(1, 3, 64, 64)], **deep)
        gen, disc = randomize_bn(DCGANGenerator().eval()), randomize_bn(DCGANDiscriminator().eval())
        case(root, "corpus_dcgan_generator_traced", torch.jit.trace(gen, r(2, 16, 1, 1)),
                   [r(2, 16, 1, 1)])
        case(root, "corpus_dcgan_generator_scripted", torch.jit.script(gen), [r(2, 16, 1, 1)])
        case(root, "corpus_dcgan_discriminator_traced", torch.jit.trace(disc, r(2, 3, 32, 32)),
                   [r(2, 3, 32, 32)])
        case(root, "corpus_dcgan_discriminator_scripted", torch.jit.script(disc), [r(2, 3, 32, 32)])
        sr = SuperResolutionNet().eval()
        case(root, "corpus_super_resolution_scripted", torch.jit.script(sr), [r(1, 1, 24, 24)])
        case(root, "corpus_super_resolution_traced", torch.jit.trace(sr, r(1, 1, 24, 24)),
                   [r(1, 1, 24, 24)])
        tokens = torch.randint(0, 50, (7, 3))
        for kind in ["LSTM", "GRU", "RNN_TANH", "RNN_RELU"]:
            case(root, f"corpus_word_lm_{kind.lower()}_scripted",
                       torch.jit.script(WordLanguageModel(kind).eval()), [tokens])
        layer = nn.TransformerEncoderLayer(d_model=32, nhead=4, dim_feedforward=64, batch_first=True)
        enc = torch.jit.script(nn.TransformerEncoder(layer, 2, enable_nested_tensor=False).eval())
        case(root, "corpus_transformer_encoder_scripted", enc, [r(2, 6, 32)])
        mask = torch.tensor([[False] * 6, [False] * 4 + [True] * 2])
        case(root, "corpus_transformer_encoder_mask_scripted", enc, [r(2, 6, 32), None, mask])
        # Note [Specialization] (api/pipeline.h): one module object called with several input
        # signatures in turn (SpecializationOracle): batched and unbatched, with and without
        # masks, another dtype of mask; each call's expected outputs in its own directory.
        float_mask = torch.triu(torch.full((6, 6), float("-inf")), diagonal=1)
        spec_calls = [[r(2, 6, 32)], [r(2, 6, 32), None, mask], [r(3, 5, 32)], [r(6, 32)],
                      [r(2, 6, 32), float_mask, None], [r(2, 6, 32), None, mask.float() * -1e4]]
        spec_root = os.path.join(os.path.dirname(os.path.abspath(root)), "api_specialize")
        for i, args in enumerate(spec_calls):
            case(spec_root, f"transformer_encoder/call{i}", enc, args)
        bert = torch.jit.script(BertLike().eval())
        ids = torch.randint(0, 100, (2, 10))
        case(root, "corpus_bert_like_scripted", bert, [ids])
        case(root, "corpus_bert_like_mask_scripted", bert,
                   [ids, torch.tensor([[False] * 10, [False] * 7 + [True] * 3])])
        case(root, "corpus_packed_bilstm_scripted", torch.jit.script(PackedBiLstm().eval()),
                   [torch.randint(0, 30, (4, 6)), torch.tensor([3, 6, 1, 4])])
        for kind in ["GRU", "RNN_TANH", "RNN_RELU"]:
            case(root, f"corpus_packed_{kind.lower()}_scripted", torch.jit.script(PackedGru(kind).eval()),
                       [r(6, 4, 5), torch.tensor([2, 6, 6, 3])])
        xy = torch.rand(10, 2) * 24
        boxes = torch.cat([xy, xy + torch.rand(10, 2) * 12 + 2], 1)
        case(root, "corpus_detector_nms_roi_align_scripted", torch.jit.script(Detector().eval()),
                   [r(1, 3, 20, 20), boxes, torch.randint(0, 3, (10,))])
        case(root, "corpus_roi_align_box_list_scripted", torch.jit.script(RoiAlignBoxList()),
             [r(2, 3, 12, 12), [boxes[:3], boxes[3:5]]])
        case(root, "corpus_embedding_bag_scripted", torch.jit.script(TextClassifier().eval()),
                   [torch.randint(0, 40, (11,)), torch.tensor([0, 4, 4, 9])])
        case(root, "corpus_scatter_einsum_scripted", torch.jit.script(ScatterEinsum().eval()),
                   [r(5, 4), torch.randint(0, 5, (2, 9)), r(2, 3, 4), r(2, 6, 4)])
        # torchvision's scripted detection models (GeneralizedRCNNTransform, the RPN, RoIHeads'
        # box, mask and keypoint paths, `tolist()` under annotations), on a small backbone so the
        # archives stay small; every box kept (score threshold 0) so the outputs are not empty.
        images = [torch.rand(3, 120, 150), torch.rand(3, 100, 90)]
        for name, model in small_rcnns():
            case(root, f"corpus_{name}_scripted", torch.jit.script(model.eval()), [images])


def small_rcnns():
    """Faster / Mask / Keypoint R-CNN of torchvision on a 3-conv backbone, 128-160 px images."""
    from torchvision.models.detection import FasterRCNN, KeypointRCNN, MaskRCNN
    from torchvision.models.detection.anchor_utils import AnchorGenerator
    from torchvision.models.detection.keypoint_rcnn import KeypointRCNNHeads, KeypointRCNNPredictor
    from torchvision.ops import MultiScaleRoIAlign

    def backbone():
        b = nn.Sequential(nn.Conv2d(3, 8, 3, 2, 1), nn.BatchNorm2d(8), nn.ReLU(), nn.Conv2d(8, 16, 3, 2, 1),
                          nn.ReLU(), nn.Conv2d(16, 16, 3, 2, 1), nn.ReLU())
        b.out_channels = 16
        return randomize_bn(b)

    def common():
        return dict(rpn_anchor_generator=AnchorGenerator(((16, 32, 64),), ((0.5, 1.0, 2.0),)),
                    box_roi_pool=MultiScaleRoIAlign(["0"], 7, 2), min_size=128, max_size=160,
                    box_score_thresh=0.0, box_detections_per_img=12)
    return [("faster_rcnn_small", FasterRCNN(backbone(), num_classes=4, **common())),
            ("mask_rcnn_small", MaskRCNN(backbone(), num_classes=4, mask_roi_pool=MultiScaleRoIAlign(["0"], 14, 2),
                                         **common())),
            ("keypoint_rcnn_small", KeypointRCNN(backbone(), num_classes=2,
                                                 keypoint_roi_pool=MultiScaleRoIAlign(["0"], 14, 2),
                                                 keypoint_head=KeypointRCNNHeads(16, (32, 32)),
                                                 keypoint_predictor=KeypointRCNNPredictor(32, 5), **common()))]


class LstmProj(nn.Module):
    """nn.LSTM with proj_size (five weights per layer and direction: w_hr last), bidirectional,
    two layers, with and without biases, over a padded batch and a packed one."""

    def __init__(self):
        super().__init__()
        self.lstm = nn.LSTM(8, 16, 2, batch_first=True, bidirectional=True, proj_size=6)
        self.nobias = nn.LSTM(12, 10, 1, bias=False, proj_size=4)

    def forward(self, x, lengths):
        a, (h, c) = self.lstm(x)
        b, (h2, c2) = self.nobias(a.transpose(0, 1))
        packed = nn.utils.rnn.pack_padded_sequence(x, lengths, batch_first=True)
        p, (hp, cp) = self.lstm(packed)
        padded, _ = nn.utils.rnn.pad_packed_sequence(p, batch_first=True)
        return a, h, c, b, h2, c2, padded, hp, cp


class RnnTrainMode(nn.Module):
    def __init__(self, rnns):
        super().__init__()
        self.lstm, self.gru = rnns[0], rnns[1]

    def forward(self, x):
        a, (h, c) = self.lstm(x)
        b, hg = self.gru(x)
        return a, h, c, b, hg


class Doubled(nn.Module):
    """2 * x: infinities and NaN stay what they are (run --expect's comparison of them)."""

    def forward(self, x):
        return x * 2.0


class DataSizedSlice(nn.Module):
    """The mean over the first int(lengths.max()) columns: a size read from tensor values."""

    def forward(self, x, lengths):
        y = x[:, :int(lengths.max())] * 1.0
        return y.sum(1) / y.size(1)


class OptionalByData(nn.Module):
    """An Optional set or not by a test of tensor values, then tested for None: its None-ness
    is not a fact of the input signature (Note [Specialization])."""

    def forward(self, x):
        y: Optional[torch.Tensor] = None
        if bool(x.sum() > 0):
            y = x * 2.0
        if y is None:
            return x - 1.0
        return y + 1.0


class NestedOutputSize(nn.Module):
    """A nested tensor from a padding mask padded again to an output_size larger in every dim
    (PyTorch 2's TransformerEncoder passes src.size())."""

    def forward(self, x, pad):
        n = torch._nested_tensor_from_mask(x, pad.logical_not(), False)
        return n.to_padded_tensor(0.5, [x.size(0), x.size(1) + 2, x.size(2) + 1])


class DistancesAndGrids(nn.Module):
    """DLRM's pairwise feature interactions (tril_indices), a spatial transformer's
    affine_grid + grid_sample, and a siamese head's cdist / pairwise_distance, scripted."""

    def forward(self, z, theta, x):
        n = z.size(1)
        idx = torch.tril_indices(n, n, -1)
        inter = torch.bmm(z, z.transpose(1, 2))[:, idx[0], idx[1]]
        grid = F.affine_grid(theta, [theta.size(0), x.size(1), 5, 6], align_corners=False)
        warped = F.grid_sample(x, grid, align_corners=False)
        return (inter, torch.triu_indices(3, 4, 1), warped, torch.cdist(z, z, p=1.0),
                F.pairwise_distance(z[:, 0], z[:, 1]))


class PositionalEncodingMvit(nn.Module):
    """torchvision's MViT PositionalEncoding between a linear and a layer norm: the temporal
    embedding repeated per position, then added to in place (`pos_embedding.add_(...)`) and
    concatenated with the class position: folded, the in-place add must reach the concat."""

    def __init__(self):
        super().__init__()
        from torchvision.models.video.mvit import PositionalEncoding
        self.proj = nn.Linear(8, 8)
        self.pos = PositionalEncoding(embed_size=8, spatial_size=(2, 2), temporal_size=3, rel_pos_embed=False)
        for p in self.pos.parameters():  # torchvision's zeros would hide the in-place add
            nn.init.normal_(p)
        self.norm = nn.LayerNorm(8)

    def forward(self, x):
        return self.norm(self.pos(self.proj(x)))


class EncoderPadded(nn.Module):
    """nn.TransformerEncoder (enable_nested_tensor=True, the default) with a key padding mask."""

    def __init__(self):
        super().__init__()
        self.enc = nn.TransformerEncoder(nn.TransformerEncoderLayer(16, 2, 32, batch_first=True), 2,
                                         norm=nn.LayerNorm(16))

    def forward(self, x, pad):
        return self.enc(x, src_key_padding_mask=pad)


class StatefulConvs(nn.Module):
    """A module that keeps state (Note [Module state in a frozen plan]): a call counter and an
    accumulated tensor written by forward, a scale and a reset written by other methods."""

    def __init__(self):
        super().__init__()
        self.c1 = nn.Conv2d(3, 4, 3)
        self.c2 = nn.Conv2d(4, 4, 3)
        self.calls = 0
        self.scale = 1.0
        self.state = torch.zeros(1)

    def forward(self, x):
        self.calls += 1
        self.state = self.state + 1.0
        y = torch.relu(self.c2(torch.relu(self.c1(x)))).sum()
        return y * self.scale + self.state, self.calls

    @torch.jit.export
    def set_scale(self, s: float):
        self.scale = s

    @torch.jit.export
    def reset(self):
        self.state = torch.zeros(1)
        self.calls = 0


class ToList(nn.Module):
    """`tolist()` typed by its annotation (prim::tolist): nested floats from a strided tensor,
    ints, bools, and a 0-d tensor as a number."""

    def forward(self, x, i, s):
        a = torch.jit.annotate(List[List[float]], x.t().tolist())
        b: List[List[int]] = i.tolist()
        c: List[bool] = (x[0] > 0).tolist()
        d = torch.jit.annotate(float, s.tolist())
        return a, b, c, d, a[1][0] + d


if __name__ == "__main__":
    main()
