#!/usr/bin/python3
"""Writes real PyTorch archives and the node kinds of their inlined graphs (PyTorch 1.13).

usage: gen_inlined_graphs.py OUT_DIR

For each model below (torchvision classifiers traced and scripted, segmentation, DCGAN, RNN
language models, transformer encoders; random weights, small inputs, the large parameters
emptied after tracing/scripting): OUT_DIR/<name>.pt (torch.jit.save), then the archive is loaded back
with torch.jit.load and, for every method of the root module, the node kinds of two inlined
graphs are counted (nested blocks included, prim::Constant excluded) into OUT_DIR/<name>.json:

    {"inlined": {"forward": {"aten::conv2d": 20, "prim::If": 3, ...}, ...},
     "inlined_as_compiled": {"forward": {...}, ...}}

"inlined" is PyTorch's `<method>.inlined_graph`: its inliner inserts each callee's
optimized_graph(), i.e. the callee after Inline, PeepholeOptimize, constant propagation on
immutable types and ConstantPooling (preoptimizeGraph, torch/csrc/jit/api/function_impl.cpp).
"inlined_as_compiled" inlines the callees as the emitter compiled them, as our inline pass
does: the graph executor's optimization is switched off (optimized_graph() is then the plain
graph) and torch._C._jit_pass_inline runs until no call is left (it inlines one level a
run; at most 100 runs), on a second torch.jit.load of the archive so no optimized graph is
cached.

OUT_DIR/index.json lists the names. Run by the ctest fixture api.gen_corpus_graphs; the
CorpusGraphsOracle suite of api_test compares these counts with our frontend's inlined
graphs. Nothing it writes is committed.
"""
import collections
import json
import os
import shutil
import sys

import torch
import torch.nn as nn
import torchvision

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "frontend"))

from gen_corpus import LSTMLanguageModel  # noqa: E402


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
            nn.Conv2d(ndf * 2, 1, 4, 1, 0, bias=False), nn.Sigmoid())

    def forward(self, x):
        return self.main(x).view(-1, 1).squeeze(1)


class GRULanguageModel(nn.Module):
    def __init__(self, ntoken=50, ninp=16, nhid=24, nlayers=2):
        super().__init__()
        self.drop = nn.Dropout(0.2)
        self.encoder = nn.Embedding(ntoken, ninp)
        self.rnn = nn.GRU(ninp, nhid, nlayers, dropout=0.2)
        self.decoder = nn.Linear(nhid, ntoken)

    def forward(self, input: torch.Tensor):
        emb = self.drop(self.encoder(input))
        output, hidden = self.rnn(emb)
        decoded = self.decoder(self.drop(output))
        return torch.log_softmax(decoded.view(-1, 50), dim=1)


class BertLike(nn.Module):
    def __init__(self, vocab=100, d=32, heads=4, layers=2, maxlen=16):
        super().__init__()
        self.tok = nn.Embedding(vocab, d)
        self.pos = nn.Embedding(maxlen, d)
        self.norm = nn.LayerNorm(d)
        layer = nn.TransformerEncoderLayer(d, heads, 4 * d, batch_first=True, activation="gelu")
        self.encoder = nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)
        self.pooler = nn.Linear(d, d)

    def forward(self, ids):
        positions = torch.arange(ids.size(1), device=ids.device).unsqueeze(0)
        x = self.norm(self.tok(ids) + self.pos(positions))
        x = self.encoder(x)
        return x, torch.tanh(self.pooler(x[:, 0]))


# torchvision classifiers: (name, constructor kwargs, traced input side). Random weights,
# 10 classes (smaller archives); init_weights=False skips scipy's slow truncated normal.
CLASSIFIERS = [
    ("alexnet", {}, 64),
    ("vgg11", {}, 32),
    ("squeezenet1_0", {}, 64),
    ("densenet121", {}, 32),
    ("inception_v3", {"init_weights": False, "aux_logits": False}, 80),
    ("googlenet", {"init_weights": False, "aux_logits": False}, 32),
    ("shufflenet_v2_x1_0", {}, 32),
    ("mnasnet0_5", {}, 32),
    ("efficientnet_b0", {}, 32),
    ("regnet_y_400mf", {}, 32),
    ("convnext_tiny", {}, 32),
    ("resnext50_32x4d", {}, 32),
    ("wide_resnet50_2", {}, 32),
    ("mobilenet_v3_small", {}, 32),
]


def build():
    """Returns {name: scripted or traced module}."""
    torch.manual_seed(0)
    tv = torchvision.models
    models = {}
    models["resnet18_traced"] = torch.jit.trace(tv.resnet18(weights=None).eval(),
                                                torch.randn(1, 3, 64, 64))
    models["resnet18_scripted"] = torch.jit.script(tv.resnet18(weights=None))
    models["mobilenet_v2_scripted"] = torch.jit.script(tv.mobilenet_v2(weights=None))
    models["fcn_resnet50_scripted"] = torch.jit.script(
        tv.segmentation.fcn_resnet50(weights=None, weights_backbone=None))
    layer = nn.TransformerEncoderLayer(d_model=32, nhead=4, dim_feedforward=64, batch_first=True)
    models["transformer_encoder_scripted"] = torch.jit.script(nn.TransformerEncoder(layer, 2))
    models["lstm_lm_scripted"] = torch.jit.script(LSTMLanguageModel())
    with torch.no_grad():
        for name, kwargs, side in CLASSIFIERS:
            model = getattr(tv, name)(weights=None, num_classes=10, **kwargs).eval()
            models[name + "_traced"] = torch.jit.trace(model, torch.randn(1, 3, side, side))
            models[name + "_scripted"] = torch.jit.script(model)
        gen, disc = DCGANGenerator().eval(), DCGANDiscriminator().eval()
        models["dcgan_generator_traced"] = torch.jit.trace(gen, torch.randn(1, 16, 1, 1))
        models["dcgan_generator_scripted"] = torch.jit.script(gen)
        models["dcgan_discriminator_traced"] = torch.jit.trace(disc, torch.randn(2, 3, 32, 32))
        models["dcgan_discriminator_scripted"] = torch.jit.script(disc)
        models["gru_lm_scripted"] = torch.jit.script(GRULanguageModel().eval())
        models["bert_like_scripted"] = torch.jit.script(BertLike().eval())
    return models


def drop_weights(module):
    """Empties every parameter of more than 4096 elements in place (only graphs are compared
    here): the archives shrink from about 3 GB to a few MB, and torch.jit.load and
    torchless::load read them all the same."""
    for _, p in module.named_parameters():
        if p.numel() > 4096:
            p.data = p.data.new_zeros(0)


def count_kinds(block, counts):
    for node in block.nodes():
        if node.kind() != "prim::Constant":
            counts[node.kind()] += 1
        for b in node.blocks():
            count_kinds(b, counts)


def has_calls(block):
    for node in block.nodes():
        if node.kind() in ("prim::CallMethod", "prim::CallFunction"):
            return True
        if any(has_calls(b) for b in node.blocks()):
            return True
    return False


def method_counts(module, as_compiled):
    out = {}
    for name in module._c._method_names():
        if as_compiled:
            graph = getattr(module, name).graph.copy()
            for _ in range(100):
                if not has_calls(graph):
                    break
                torch._C._jit_pass_inline(graph)
        else:
            graph = getattr(module, name).inlined_graph
        counts = collections.Counter()
        count_kinds(graph, counts)
        out[name] = dict(sorted(counts.items()))
    return out


def main(argv):
    if len(argv) != 2:
        sys.stderr.write(__doc__)
        return 2
    out = argv[1]
    tmp = out + ".tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    os.makedirs(tmp)
    names = []
    counts = {}
    for name, model in build().items():
        path = os.path.join(tmp, name + ".pt")
        drop_weights(model)
        torch.jit.save(model, path)
        counts[name] = {"inlined": method_counts(torch.jit.load(path), False)}
        names.append(name)
    torch._C._set_graph_executor_optimize(False)
    try:
        for name in names:
            path = os.path.join(tmp, name + ".pt")
            counts[name]["inlined_as_compiled"] = method_counts(torch.jit.load(path), True)
    finally:
        torch._C._set_graph_executor_optimize(True)
    for name in names:
        with open(os.path.join(tmp, name + ".json"), "w") as f:
            json.dump(counts[name], f, indent=1)
    with open(os.path.join(tmp, "index.json"), "w") as f:
        json.dump(names, f, indent=1)
    shutil.rmtree(out, ignore_errors=True)
    os.rename(tmp, out)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
