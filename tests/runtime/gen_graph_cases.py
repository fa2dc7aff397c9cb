#!/usr/bin/env python3
"""Writes the interpreter oracle: graphs printed by real PyTorch and the numbers PyTorch gets.

    /usr/bin/python3 tests/runtime/gen_graph_cases.py OUT_DIR [name-substring ...]

For every case, OUT_DIR gets `<case>.ir` (str(graph)), the tensor inputs and PyTorch's tensor
outputs as .npy, and manifest.json lists the cases with their non-tensor values and
tolerances. The gtest graph_oracle_test.cpp parses each graph with parseIR, runs it with
Code and compares.

Functions are scripted (or traced) and inlined. Modules get random weights (batch-norm
statistics too) and are frozen with torch._C._freeze_module (which inlines every method
and folds attributes) without the numeric optimizations of torch.jit.freeze, so the graph
keeps conv + batch_norm. Frozen tensor constants print as `<Tensor>`, so each one becomes a
new graph input fed from its own .npy file; `self` is dropped.
"""
import json
import math
import os
import re
import sys
import warnings
from typing import Dict, List, Optional, Tuple

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

warnings.filterwarnings("ignore")
torch.manual_seed(0)
torch.set_num_threads(1)

OUT = sys.argv[1] if len(sys.argv) > 1 else "graph_cases"
ONLY = sys.argv[2:]
CASES = []


def case(name, rtol=1e-4, atol=1e-4):
    def register(fn):
        CASES.append((name, fn, rtol, atol))
        return fn
    return register


# ---- value encoding -------------------------------------------------------------------------

class Writer:
    def __init__(self, name):
        self.name = name
        self.count = 0

    def tensor(self, t, kind):
        fname = f"{self.name}.{kind}{self.count}.npy"
        self.count += 1
        t = t.detach().contiguous()
        if t.dtype == torch.bfloat16:  # .npy has no bfloat16: it travels as float32
            np.save(os.path.join(OUT, fname), t.float().numpy(), allow_pickle=False)
            return {"t": "tensor", "file": fname, "dtype": "bfloat16"}
        np.save(os.path.join(OUT, fname), t.numpy(), allow_pickle=False)
        return {"t": "tensor", "file": fname}

    def value(self, v, kind):
        if isinstance(v, torch.Tensor):
            return self.tensor(v, kind)
        if v is None:
            return {"t": "none"}
        if isinstance(v, bool):
            return {"t": "bool", "v": v}
        if isinstance(v, int):
            return {"t": "int", "v": v}
        if isinstance(v, float):
            if math.isnan(v) or math.isinf(v):
                return {"t": "float", "v": repr(v)}
            return {"t": "float", "v": v}
        if isinstance(v, str):
            return {"t": "str", "v": v}
        if isinstance(v, complex):
            return {"t": "complex", "v": [v.real, v.imag]}
        if isinstance(v, torch.device):
            return {"t": "device", "v": str(v)}
        if isinstance(v, torch.dtype):
            return {"t": "int", "v": DTYPES[v]}
        if isinstance(v, list):
            return {"t": "list", "v": [self.value(e, kind) for e in v]}
        if isinstance(v, tuple):
            return {"t": "tuple", "v": [self.value(e, kind) for e in v]}
        if isinstance(v, dict):
            return {"t": "dict", "v": [[self.value(k, kind), self.value(e, kind)] for k, e in v.items()]}
        raise TypeError(f"cannot encode {type(v)}")


DTYPES = {torch.uint8: 0, torch.int8: 1, torch.int16: 2, torch.int32: 3, torch.int64: 4,
          torch.float16: 5, torch.float32: 6, torch.float64: 7, torch.bool: 11}


def clone(v):
    if isinstance(v, torch.Tensor):
        return v.clone()
    if isinstance(v, list):
        return [clone(e) for e in v]
    if isinstance(v, tuple):
        return tuple(clone(e) for e in v)
    if isinstance(v, dict):
        return {k: clone(e) for k, e in v.items()}
    return v


# ---- graphs ---------------------------------------------------------------------------------

def function_graph(fn, inputs, trace=False):
    f = torch.jit.trace(fn, tuple(inputs)) if trace else torch.jit.script(fn)
    g = f.graph.copy()
    torch._C._jit_pass_inline(g)
    torch._C._jit_pass_dce(g)  # the inlined callees' dead `Function` constants
    with torch.no_grad():
        out = f(*clone(inputs))
    return g, list(inputs), out


def randomize(model):
    """Random batch-norm affine parameters and statistics (defaults are 1/0 and freezing
    would merge them); everything else keeps its random init."""
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, nn.modules.batchnorm._BatchNorm) and m.running_mean is not None:
                m.running_mean.uniform_(-0.2, 0.2)
                m.running_var.uniform_(0.5, 1.5)
                if m.weight is not None:
                    m.weight.uniform_(0.5, 1.5)
                    m.bias.uniform_(-0.2, 0.2)


def module_graph(model, inputs, trace=False):
    model.eval()
    randomize(model)
    sm = torch.jit.trace(model, tuple(inputs)) if trace else torch.jit.script(model)
    # Arguments left out take their defaults (None for optional masks).
    args = sm.forward.schema.arguments[1:]
    inputs = list(inputs) + [a.default_value for a in args[len(inputs):]]
    frozen = torch._C._freeze_module(sm._c)
    g = frozen._get_method("forward").graph
    params = []
    for n in list(g.nodes()):
        ty = n.output().type() if n.outputsSize() == 1 else None
        is_tensor = ty is not None and (ty.kind() == "TensorType" or
                                        (ty.kind() == "ListType" and ty.getElementType().kind() == "TensorType"))
        if n.kind() == "prim::Constant" and is_tensor:
            v = n.output().toIValue()
            inp = g.addInput()
            inp.setType(n.output().type())
            inp.setDebugName("p_" + n.output().debugName().replace(".", "_"))
            n.output().replaceAllUsesWith(inp)
            n.destroy()
            params.append(v)
    self_in = list(g.inputs())[0]
    if not self_in.uses():
        g.eraseInput(0)
    with torch.no_grad():
        out = sm(*clone(inputs))
    return g, list(inputs) + params, out


def write_case(name, graph, inputs, out, rtol, atol):
    w = Writer(name)
    # Traced nodes print `, scope: __module.layer1` after their attributes; the IR parser does
    # not read scopes (they carry no semantics), so they are dropped here.
    text = re.sub(r", scope: [^ \n]+", "", str(graph))
    # NamedTuple(a : T, b : U) types print with field names the IR parser does not read yet;
    # they become plain tuple types (the values are the same).
    text = re.sub(r"NamedTuple\(([^()]*)\)",
                  lambda m: "(" + ", ".join(f.split(" : ", 1)[1] for f in m.group(1).split(", ")) + ")", text)
    with open(os.path.join(OUT, name + ".ir"), "w") as f:
        f.write(text)
    outs = list(out) if isinstance(out, tuple) and len(list(graph.outputs())) > 1 else [out]
    return {"name": name, "graph": name + ".ir", "rtol": rtol, "atol": atol,
            "inputs": [w.value(v, "in") for v in inputs],
            "outputs": [w.value(v, "out") for v in outs]}


# ---- torchvision classification models ------------------------------------------------------

def tv_case(name, ctor, size=64, trace=False, rtol=1e-4, atol=1e-4):
    @case(name, rtol, atol)
    def build():
        import torchvision
        model = ctor(torchvision.models)
        return module_graph(model, [torch.randn(1, 3, size, size)], trace)


tv_case("resnet18", lambda m: m.resnet18(num_classes=10))
tv_case("mobilenet_v2", lambda m: m.mobilenet_v2(num_classes=10), rtol=1e-3, atol=1e-3)
tv_case("mobilenet_v3_small", lambda m: m.mobilenet_v3_small(num_classes=10), rtol=1e-3, atol=1e-3)
tv_case("mobilenet_v3_large", lambda m: m.mobilenet_v3_large(num_classes=10), rtol=1e-3, atol=1e-3)
tv_case("efficientnet_b0", lambda m: m.efficientnet_b0(num_classes=10), rtol=1e-3, atol=1e-3)
tv_case("densenet121", lambda m: m.densenet121(num_classes=10), rtol=1e-3, atol=1e-3)
tv_case("squeezenet1_0", lambda m: m.squeezenet1_0(num_classes=10))
tv_case("squeezenet1_1", lambda m: m.squeezenet1_1(num_classes=10))
tv_case("shufflenet_v2_x0_5", lambda m: m.shufflenet_v2_x0_5(num_classes=10), rtol=1e-3, atol=1e-3)


def small_vgg(m):
    # vgg11_bn with a narrow classifier: the 25088 x 4096 layer would make a 400 MB input.
    model = m.vgg11_bn(num_classes=10)
    model.classifier[0] = nn.Linear(512 * 7 * 7, 64)
    model.classifier[3] = nn.Linear(64, 64)
    model.classifier[6] = nn.Linear(64, 10)
    return model


tv_case("vgg11_bn", small_vgg)
tv_case("googlenet_scripted", lambda m: m.googlenet(num_classes=10, aux_logits=False, init_weights=False),
        rtol=1e-3, atol=1e-3)
tv_case("googlenet_traced", lambda m: m.googlenet(num_classes=10, aux_logits=False, init_weights=False),
        trace=True, rtol=1e-3, atol=1e-3)
tv_case("inception_v3_scripted", lambda m: m.inception_v3(num_classes=10, aux_logits=False, init_weights=False),
        size=80, rtol=1e-3, atol=1e-3)
tv_case("inception_v3_traced", lambda m: m.inception_v3(num_classes=10, aux_logits=False, init_weights=False),
        size=80, trace=True, rtol=1e-3, atol=1e-3)
tv_case("resnet18_traced", lambda m: m.resnet18(num_classes=10), trace=True)


@case("fcn_resnet50", rtol=1e-3, atol=1e-3)
def _fcn():
    import torchvision
    model = torchvision.models.segmentation.fcn_resnet50(num_classes=5, weights_backbone=None)
    return module_graph(model, [torch.randn(1, 3, 64, 64)])


# ---- DCGAN, super-resolution ----------------------------------------------------------------

class DCGANGenerator(nn.Module):
    def __init__(self, nz=16, ngf=8, nc=3):
        super().__init__()
        self.main = nn.Sequential(
            nn.ConvTranspose2d(nz, ngf * 8, 4, 1, 0, bias=False), nn.BatchNorm2d(ngf * 8), nn.ReLU(True),
            nn.ConvTranspose2d(ngf * 8, ngf * 4, 4, 2, 1, bias=False), nn.BatchNorm2d(ngf * 4), nn.ReLU(True),
            nn.ConvTranspose2d(ngf * 4, ngf * 2, 4, 2, 1, bias=False), nn.BatchNorm2d(ngf * 2), nn.ReLU(True),
            nn.ConvTranspose2d(ngf * 2, ngf, 4, 2, 1, bias=False), nn.BatchNorm2d(ngf), nn.ReLU(True),
            nn.ConvTranspose2d(ngf, nc, 4, 2, 1, bias=False), nn.Tanh())

    def forward(self, x):
        return self.main(x)


class DCGANDiscriminator(nn.Module):
    def __init__(self, ndf=8, nc=3):
        super().__init__()
        self.main = nn.Sequential(
            nn.Conv2d(nc, ndf, 4, 2, 1, bias=False), nn.LeakyReLU(0.2, inplace=True),
            nn.Conv2d(ndf, ndf * 2, 4, 2, 1, bias=False), nn.BatchNorm2d(ndf * 2), nn.LeakyReLU(0.2, inplace=True),
            nn.Conv2d(ndf * 2, ndf * 4, 4, 2, 1, bias=False), nn.BatchNorm2d(ndf * 4), nn.LeakyReLU(0.2, inplace=True),
            nn.Conv2d(ndf * 4, ndf * 8, 4, 2, 1, bias=False), nn.BatchNorm2d(ndf * 8), nn.LeakyReLU(0.2, inplace=True),
            nn.Conv2d(ndf * 8, 1, 4, 1, 0, bias=False), nn.Sigmoid())

    def forward(self, x):
        return self.main(x).view(-1, 1).squeeze(1)


class SuperResolutionNet(nn.Module):
    """The torch.onnx tutorial's super-resolution model."""

    def __init__(self, upscale_factor=3):
        super().__init__()
        self.relu = nn.ReLU()
        self.conv1 = nn.Conv2d(1, 64, (5, 5), (1, 1), (2, 2))
        self.conv2 = nn.Conv2d(64, 64, (3, 3), (1, 1), (1, 1))
        self.conv3 = nn.Conv2d(64, 32, (3, 3), (1, 1), (1, 1))
        self.conv4 = nn.Conv2d(32, upscale_factor ** 2, (3, 3), (1, 1), (1, 1))
        self.pixel_shuffle = nn.PixelShuffle(upscale_factor)

    def forward(self, x):
        x = self.relu(self.conv1(x))
        x = self.relu(self.conv2(x))
        x = self.relu(self.conv3(x))
        return self.pixel_shuffle(self.conv4(x))


@case("dcgan_generator")
def _dcgan_g():
    return module_graph(DCGANGenerator(), [torch.randn(1, 16, 1, 1)])


@case("dcgan_discriminator")
def _dcgan_d():
    return module_graph(DCGANDiscriminator(), [torch.randn(2, 3, 64, 64)])


@case("super_resolution")
def _superres():
    return module_graph(SuperResolutionNet(), [torch.randn(1, 1, 32, 32)])


# ---- word language model (pytorch/examples), transformers -----------------------------------

class RNNModel(nn.Module):
    def __init__(self, rnn_type, ntoken=50, ninp=16, nhid=24, nlayers=2):
        super().__init__()
        self.drop = nn.Dropout(0.2)
        self.encoder = nn.Embedding(ntoken, ninp)
        if rnn_type == "LSTM":
            self.rnn = nn.LSTM(ninp, nhid, nlayers, dropout=0.2)
        elif rnn_type == "GRU":
            self.rnn = nn.GRU(ninp, nhid, nlayers, dropout=0.2)
        else:
            self.rnn = nn.RNN(ninp, nhid, nlayers, nonlinearity="tanh", dropout=0.2)
        self.decoder = nn.Linear(nhid, ntoken)

    def forward(self, input: torch.Tensor):
        emb = self.drop(self.encoder(input))
        output, hidden = self.rnn(emb)
        output = self.drop(output)
        decoded = self.decoder(output)
        return F.log_softmax(decoded.view(-1, 50), dim=1)


class LSTMWithState(nn.Module):
    def __init__(self):
        super().__init__()
        self.rnn = nn.LSTM(8, 12, 2, batch_first=True, bidirectional=True)

    def forward(self, x, h0, c0):
        out, (h, c) = self.rnn(x, (h0, c0))
        return out, h, c


for _kind in ["LSTM", "GRU", "RNN"]:
    def _make(kind=_kind):
        @case(f"word_language_model_{kind.lower()}")
        def build():
            return module_graph(RNNModel(kind), [torch.randint(0, 50, (7, 2))])
    _make()


@case("lstm_bidirectional_batch_first")
def _lstm_bi():
    return module_graph(LSTMWithState(), [torch.randn(2, 5, 8), torch.randn(4, 2, 12), torch.randn(4, 2, 12)])


@case("transformer_encoder_fastpath")
def _tenc_fast():
    enc = nn.TransformerEncoder(nn.TransformerEncoderLayer(32, 4, 64, batch_first=True), 2)
    return module_graph(enc, [torch.randn(2, 5, 32)])


@case("transformer_encoder_composite")
def _tenc_comp():
    enc = nn.TransformerEncoder(nn.TransformerEncoderLayer(32, 4, 64, activation="gelu"), 2)
    return module_graph(enc, [torch.randn(5, 2, 32)])


class MaskedEncoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.enc = nn.TransformerEncoder(nn.TransformerEncoderLayer(32, 4, 64, batch_first=True,
                                                                    norm_first=True), 2,
                                         enable_nested_tensor=False)

    def forward(self, x, mask):
        return self.enc(x, src_key_padding_mask=mask)


@case("transformer_encoder_padding_mask")
def _tenc_mask():
    mask = torch.tensor([[False] * 5, [False, False, False, True, True]])
    return module_graph(MaskedEncoder(), [torch.randn(2, 5, 32), mask])


class BertLike(nn.Module):
    def __init__(self, vocab=100, d=32, heads=4, layers=2, maxlen=16):
        super().__init__()
        self.tok = nn.Embedding(vocab, d)
        self.pos = nn.Embedding(maxlen, d)
        self.norm = nn.LayerNorm(d)
        self.encoder = nn.TransformerEncoder(nn.TransformerEncoderLayer(d, heads, 4 * d, batch_first=True,
                                                                        activation="gelu"), layers)
        self.pooler = nn.Linear(d, d)

    def forward(self, ids):
        positions = torch.arange(ids.size(1), device=ids.device).unsqueeze(0)
        x = self.norm(self.tok(ids) + self.pos(positions))
        x = self.encoder(x)
        return x, torch.tanh(self.pooler(x[:, 0]))


@case("bert_like")
def _bert():
    return module_graph(BertLike(), [torch.randint(0, 100, (2, 9))])


# ---- tensor ops (torch.onnx's first list and friends) ---------------------------------------

def tensor_ops_a(x: torch.Tensor, y: torch.Tensor, w: torch.Tensor):
    a = x + y * 2 - x / (y.abs() + 1)
    b = torch.cat([x, y], 1)
    c = torch.mm(x, w)
    d = torch.addmm(y[:, :3], x, w, beta=0.5, alpha=2.0)
    e = -x
    f = torch.sqrt(x.abs()) + torch.tanh(x) + torch.sigmoid(y)
    g = x.mean() + x.sum(1) + x.prod(0)[:1]
    h = x.t().expand(2, 4, 3).transpose(1, 2).contiguous().view(2, 12)
    i = torch.split(x, [1, 3], 1)
    j = x.unsqueeze(0).squeeze(0)
    k = F.prelu(x, torch.tensor([0.25]))
    ll = F.threshold(x, 0.1, 20.0) + F.leaky_relu(x, 0.2) + F.elu(x)
    m = F.glu(torch.cat([x, y], 1), 1)
    n = F.softmax(x, 1) + F.log_softmax(x, 0)
    return a, b, c, d, e, f, g, h, i[0], i[1], j, k, ll, m, n


def tensor_ops_b(x: torch.Tensor, idx: torch.Tensor):
    a = x.unfold(1, 2, 1)
    b = torch.index_select(x, 0, idx)
    c = x.pow(2) + torch.pow(x, x.abs()) + 2 ** x
    d = torch.clamp(x, -0.5, 0.5) + torch.clamp(x, min=0.0) + x.clamp(max=0.1)
    e = torch.max(x) + torch.min(x)
    f, fi = torch.max(x, 1)
    g = torch.max(x, x.flip([0]))
    h = (x == x) & (x > 0) | (x < -0.5)
    i = (x >= 0.1).float() + (x <= 0.2).to(torch.float32)
    j = torch.exp(x) + torch.sin(x) + torch.cos(x) + torch.tan(x * 0.5)
    k = torch.asin(x.clamp(-0.9, 0.9)) + torch.acos(x.clamp(-0.9, 0.9)) + torch.atan(x)
    ll = x.permute(1, 0)
    m = torch.constant_pad_nd(x, [1, 2], 0.5)
    n = x[idx]
    o = x[:, 1:3]
    p = x[x > 0]
    return a, b, c, d, e, f, fi, g, h, i, j, k, ll, m, n, o, p


def pool_ops(x: torch.Tensor):
    a = F.max_pool2d(x, 3, 2, ceil_mode=True)
    b = F.max_pool1d(x[0], 2)
    c = F.max_pool3d(x.unsqueeze(0), 2)
    d = F.avg_pool2d(x, 3, 2, 1, ceil_mode=True, count_include_pad=False)
    e = F.adaptive_avg_pool2d(x, [2, 3])
    f = F.avg_pool1d(x[0], 3)
    g = F.interpolate(x, scale_factor=2.0, mode="nearest")
    h = F.interpolate(x, size=[5, 7], mode="bilinear", align_corners=False)
    i = F.pixel_shuffle(torch.cat([x, x, x, x], 1), 2)
    return a, b, c, d, e, f, g, h, i


def conv_ops(x: torch.Tensor, w: torch.Tensor, w1: torch.Tensor, wt: torch.Tensor):
    a = F.conv2d(x, w, None, 1, 1)
    b = F.conv2d(x, w, padding="same") + F.conv2d(x, w, padding="valid", stride=1).sum()
    c = F.conv1d(x[0], w1, stride=2)
    d = F.conv_transpose2d(x, wt, stride=2, padding=1, output_padding=1)
    e = F.batch_norm(x, torch.zeros(4), torch.ones(4), torch.full([4], 0.5), torch.arange(4.0), False, 0.1, 1e-5)
    f = F.layer_norm(x, [6, 6])
    g = F.group_norm(x, 2)
    h = F.instance_norm(x)
    return a, b, c, d, e, f, g, h


def creation_ops(x: torch.Tensor, n: int):
    a = torch.zeros([2, n]) + torch.ones(2, n, dtype=torch.float64).float()
    b = torch.full([n], 1.5) + torch.arange(n) + torch.arange(1, n + 1, dtype=torch.float32)
    c = torch.zeros_like(x) + torch.ones_like(x) + torch.full_like(x, 2.0) + torch.empty_like(x).zero_()
    d = torch.tensor([[1, 2], [3, 4]]) * torch.tensor(2.5)
    e = x.new_zeros([2]) + x.new_ones(2) + x.new_full([2], 3.0)
    f = torch.eye(3) + torch.linspace(0, 1, 3)
    g = x.to(torch.float64).to(torch.int64)
    h = x.clone().detach()
    i = torch.tensor(n) + torch.tensor(1.5, dtype=torch.float32)
    t = x.size(0) + x.dim() + x.numel() + len(x) + x.shape[1]
    v = int(x.sum()) + float(x.max()) + x.sum().item()
    return a, b, c, d, e, f, g, h, i, t, v, x.dtype, x.is_floating_point()


def inplace_ops(x: torch.Tensor):
    y = x.clone()
    v = y[1]              # a view of row 1
    v.add_(10)            # writes through to y
    y[0].mul_(2).relu_()
    y[:, 0].zero_()
    z = torch.zeros(3)
    torch.add(x[0], x[1], out=z)
    w = x.clone()
    w.masked_fill_(w < 0, 0.5)
    w.clamp_(max=1.0)
    w.sub_(1).div_(2)
    u = x.clone()
    u[1] = torch.ones(3)
    u[0, 1] = 7.0
    return y, z, w, u


def misc_ops(x: torch.Tensor):
    warnings.warn("misc_ops warns once")
    a = F.dropout(x, 0.5, False)
    b = F.embedding(torch.tensor([[0, 2], [1, 1]]), x)
    c = torch.where(x > 0, x, torch.zeros_like(x))
    d = torch.stack([x, x], 0).sum(0)
    e = x.reshape(-1).sort()[0]
    f = torch.topk(x.reshape(-1), 3)[1]
    g = x.cumsum(0) + torch.argmax(x, 1, keepdim=True)
    h = x.flatten() .chunk(3)
    i = torch.norm(x) + x.var() + x.std(0).sum()
    j = F.gelu(x) + F.silu(x) + F.hardswish(x) + F.hardsigmoid(x) + F.relu6(x) + F.softplus(x) + F.mish(x)
    k = torch.matmul(x, x.t()) + torch.bmm(x.unsqueeze(0), x.t().unsqueeze(0))[0]
    ll = x.repeat(2, 1) + x.expand_as(x).repeat(2, 1)
    m = torch._shape_as_tensor(x)
    return a, b, c, d, e, f, g, h[0], i, j, k, ll, m


@case("tensor_ops_a")
def _ta():
    return function_graph(tensor_ops_a, [torch.randn(3, 4), torch.randn(3, 4), torch.randn(4, 3)])


@case("tensor_ops_b")
def _tb():
    return function_graph(tensor_ops_b, [torch.randn(4, 5), torch.tensor([0, 2, 3])])


@case("pool_ops")
def _pool():
    return function_graph(pool_ops, [torch.randn(1, 2, 6, 8)])


@case("conv_ops")
def _conv():
    return function_graph(conv_ops, [torch.randn(1, 4, 6, 6), torch.randn(3, 4, 3, 3), torch.randn(2, 6, 3),
                                     torch.randn(4, 2, 3, 3)])


@case("creation_ops")
def _create():
    return function_graph(creation_ops, [torch.randn(3, 4), 4])


@case("inplace_ops")
def _inplace():
    return function_graph(inplace_ops, [torch.randn(3, 3)])


@case("misc_ops")
def _misc():
    return function_graph(misc_ops, [torch.randn(3, 3)])


@case("traced_ops")
def _traced():
    def f(x, y):
        return torch.cat([F.relu(x) * y[0], x.view(2, -1)[:, :4] @ y], 0).softmax(-1)
    return function_graph(f, [torch.randn(2, 4), torch.randn(4, 4)], trace=True)


# ---- builtins -------------------------------------------------------------------------------

def builtins_numbers(a: int, b: int, x: float, y: float):
    r1 = [a + b, a - b, a * b, a // b, a % b, -a // b, -a % b, abs(-a), a & b, a | b, a ^ b,
          a << 2, a >> 1, max(a, b), min(a, b), round(x * 10) if False else int(x * 10)]
    r2 = [a / b, x + y, x - a, x * b, x / y, x // y, x % y, x ** 2.0, 2 ** -1, a ** 2, math.sqrt(y * y),
          math.log(y * y), math.exp(x), float(math.floor(x)), float(math.ceil(x)), round(x), math.sin(x), abs(-x),
          max(x, y), min(x, float(a)), math.pow(x, 2), math.atan2(x, y), float(a), math.fabs(-y)]
    r3 = [a == b, a != b, a < b, a <= b, a > b, a >= b, x < a, x == x, not (a < b),
          (a < b) and (x > y), (a < b) or (x > y), True == False, math.isnan(x), bool(a), int(x) == a]
    c = complex(x, y)
    return r1, r2, r3, int(3.7), int(-3.7), int(True), float(True), divmod(a, b), str(a), str(x)


def builtins_lists(n: int, xs: List[int], fs: List[float], ss: List[str]):
    l = [1, 2, 3]
    l.append(n)
    l.extend(xs)
    l.insert(0, -1)
    l.insert(-1, 99)
    p = l.pop()
    q = l.pop(0)
    l.remove(2)
    l.reverse()
    s = sorted(l)
    l.sort(reverse=True)
    c = l.copy()
    c.clear()
    m = l[1:4] + l[::-1] + l[-3:] + l[::2] + [0] * 2
    l[0] = 42
    del l[1]
    fs2 = list(fs)
    fs2.sort()
    info = [len(l), l.index(42), l.count(3), sum(l), max(l), min(l), int(3 in l), int(100 in l),
            int(1.5 in fs), int("b" in ss), len(ss)]
    eq = [l == l, xs != l, fs == fs2, ss == ["a"]]
    return l, p, q, s, c, m, fs2, info, eq, sum(fs), max(fs), any([False, True]), all(xs)


def builtins_dicts(k: str, v: int):
    d: Dict[str, int] = {"a": 1, "b": 2}
    d[k] = v
    d["c"] = 3
    g = d.get("zz", -1)
    h = d.get("a")
    s = d.setdefault("e", 5)
    p = d.pop("b")
    p2 = d.pop("missing", 0)
    keys = d.keys()
    vals = d.values()
    items = d.items()
    has = ["a" in d, "b" in d]
    e = d.copy()
    e.update({"z": 26})
    di: Dict[int, float] = {1: 1.5}
    di[2] = 2.5
    dt: Dict[int, List[int]] = {}
    dt[3] = [1, 2]
    total = 0
    for kk, vv in d.items():
        total += vv
    del e["a"]
    n = len(e)
    e.clear()
    return d, g, h, s, p, p2, keys, vals, items, has, di, dt, total, n, len(e), dict(d)


def builtins_strings(s: str, n: int):
    a = "{} and {}: {}".format(s, n, 1.5)
    b = s.upper() + s.lower() + s[1] + s[-1] + s[1:3] + s[::-1]
    c = ",".join(["x", s, "z"])
    d = "a,b,,c".split(",") + "  lots   of  space ".split() + "a-b-c".split("-", 1)
    e = ["  pad  ".strip(), "xxhixx".strip("x"), "  l".lstrip(), "r  ".rstrip()]
    f = [s.startswith("he"), s.endswith("lo"), "abc".isdigit(), "123".isdigit(), "abc".isalpha()]
    f2 = [s.find("l"), s.rfind("l"), s.find("zz"), s.count("l"), len(s)]
    g = s.replace("l", "L") + s.replace("l", "", 1) + str(n) + str(2.5) + str(True)
    h = [s == "hello", s != "x", s < "z", "b" >= "a"]
    i = [s.title(), s.capitalize(), "7".zfill(3), s.center(9, "*"), s.ljust(7, "."), s.rjust(7)]
    j = list("abc")
    return a, b, c, d, e, f, f2, g, h, i, j, ord("a"), s.isupper(), "Hello World".istitle()


def builtins_control(x: torch.Tensor, n: int):
    out: List[torch.Tensor] = []
    i = 0
    while i < n:
        if i % 2 == 0:
            out.append(x * i)
        else:
            out.append(x + i)
        i += 1
    acc = torch.zeros_like(x)
    for t in out:
        acc = acc + t
    for k, t in enumerate(out):
        acc = acc + t * k
    tl = [x, x * 2]
    return acc, len(out), out[-1], tl[1], torch.cat(tl).sum()


@case("builtins_numbers")
def _bn():
    return function_graph(builtins_numbers, [7, -3, 2.75, -1.5])


@case("builtins_lists")
def _bl():
    return function_graph(builtins_lists, [5, [3, 4, 3], [2.5, 1.5, -0.5], ["a", "b"]])


@case("builtins_dicts")
def _bd():
    return function_graph(builtins_dicts, ["k", 11])


@case("builtins_strings")
def _bs():
    return function_graph(builtins_strings, ["hello", 3])


@case("builtins_control")
def _bc():
    return function_graph(builtins_control, [torch.randn(2, 3), 5])


def main():
    os.makedirs(OUT, exist_ok=True)
    manifest = []
    for name, build, rtol, atol in CASES:
        if ONLY and not any(o in name for o in ONLY):
            continue
        torch.manual_seed(hash(name) % (2 ** 31))
        graph, inputs, out = build()
        manifest.append(write_case(name, graph, inputs, out, rtol, atol))
    with open(os.path.join(OUT, "manifest.json"), "w") as f:
        json.dump({"cases": manifest}, f, indent=1)
    print(f"wrote {len(manifest)} cases to {OUT}")


if __name__ == "__main__":
    main()
