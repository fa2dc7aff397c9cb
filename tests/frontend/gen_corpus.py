#!/usr/bin/python3
"""Generates the frontend parser corpus with real PyTorch (1.13 on the build machine).

usage: gen_corpus.py OUT_DIR [--keep-archives]

Saves models with torch.jit.save and extracts their code/ records into
OUT_DIR/generated/<model>/ (through extract_code.py, atomically). The archives (about 230 MB,
mostly fcn_resnet50 weights) are deleted afterwards unless --keep-archives is given, which
leaves them in OUT_DIR/archives/. Run by the ctest fixture frontend_corpus_generate; nothing
it writes is committed.
"""
import os
import shutil
import sys
from typing import Optional, Tuple

import torch
import torch.nn as nn
import torchvision

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import corpus_constructs as cc  # noqa: E402
import extract_code  # noqa: E402


class LSTMLanguageModel(nn.Module):
    def __init__(self, vocab: int = 50, emb: int = 16, hidden: int = 32, layers: int = 2):
        super().__init__()
        self.embed = nn.Embedding(vocab, emb)
        self.lstm = nn.LSTM(emb, hidden, layers, batch_first=True, dropout=0.1)
        self.head = nn.Linear(hidden, vocab)

    def forward(self, tokens: torch.Tensor,
                state: Optional[Tuple[torch.Tensor, torch.Tensor]] = None
                ) -> Tuple[torch.Tensor, Tuple[torch.Tensor, torch.Tensor]]:
        x = self.embed(tokens)
        out, (h, c) = self.lstm(x, state)
        return self.head(out), (h, c)


class Functions(nn.Module):
    """Calls every free function of corpus_constructs so they are all emitted."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        a = cc.arithmetic(1, 2, 3.0)
        s = cc.strings("a", 2)
        t = cc.tensors(x, None, scale=3.0)
        n = cc.loops([1, 2, 3], {"k": 1})
        o = cc.objects(Value(), cc.Point(1, 0.5), cc.Color.GREEN)
        f = cc.forked(x)
        return t.sum() + f.sum() + a[0] + len(s) + n + o


@torch.jit.script
class Value:
    def __init__(self):
        self.v = 3

    def value(self) -> int:
        return self.v


class TracedConst(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 4, 3)

    def forward(self, x):
        y = self.conv(x) + torch.tensor([1.0, 2.0, 3.0, 4.0]).view(1, 4, 1, 1)
        a, b = y.chunk(2, dim=1)
        return a * b, y.size(0)


def build():
    """Returns {name: scripted or traced module}."""
    torch.manual_seed(0)
    models = {}
    resnet = torchvision.models.resnet18(weights=None).eval()
    models["resnet18_traced"] = torch.jit.trace(resnet, torch.randn(1, 3, 64, 64))
    models["resnet18_scripted"] = torch.jit.script(torchvision.models.resnet18(weights=None))
    models["mobilenet_v2_scripted"] = torch.jit.script(torchvision.models.mobilenet_v2(weights=None))
    models["fcn_resnet50_scripted"] = torch.jit.script(
        torchvision.models.segmentation.fcn_resnet50(weights=None, weights_backbone=None))
    layer = nn.TransformerEncoderLayer(d_model=32, nhead=4, dim_feedforward=64, batch_first=True)
    models["transformer_encoder_scripted"] = torch.jit.script(nn.TransformerEncoder(layer, 2))
    models["lstm_lm_scripted"] = torch.jit.script(LSTMLanguageModel())
    models["constructs_module"] = torch.jit.script(cc.Block())
    hooked = cc.Hooked()
    hooked.register_forward_pre_hook(cc.pre_hook)
    hooked.register_forward_hook(cc.post_hook)
    models["constructs_hooks"] = torch.jit.script(hooked)
    models["constructs_functions"] = torch.jit.script(Functions())
    models["traced_constants"] = torch.jit.trace(TracedConst(), torch.randn(1, 3, 8, 8))
    return models


def main(argv):
    keep = "--keep-archives" in argv[1:]
    args = [a for a in argv[1:] if a != "--keep-archives"]
    if len(args) != 1:
        sys.stderr.write(__doc__)
        return 2
    out = args[0]
    archives = os.path.join(out, "archives")
    shutil.rmtree(archives, ignore_errors=True)
    os.makedirs(archives)
    try:
        paths = []
        for name, model in build().items():
            path = os.path.join(archives, name + ".pt")
            torch.jit.save(model, path)
            paths.append(path)
        return extract_code.main(["extract_code.py", os.path.join(out, "generated")] + paths)
    finally:
        if not keep:
            shutil.rmtree(archives, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main(sys.argv))
