"""Fixture of issue 13's fused sequence layers (Note [Fused sequence layers] in
src/convert/engine/seq_layers.h): small models whose engines take the fused paths, saved by real
PyTorch with inputs and PyTorch's outputs (the loaded archive run under no_grad), and how many
layers of each fused kind the engine must report (meta.json "fused").

Usage: gen_seq_models.py OUT_DIR
"""
import json
import os
import sys

import numpy as np
import torch
from torch import nn


class Encoder(nn.Module):
    """nn.TransformerEncoder: its layers call aten::_transformer_encoder_layer_fwd in eval."""

    def __init__(self, d, heads, ff, layers, norm_first, activation):
        super().__init__()
        layer = nn.TransformerEncoderLayer(d, heads, ff, batch_first=True, norm_first=norm_first,
                                           activation=activation)
        self.encoder = nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)

    def forward(self, x):
        return self.encoder(x)


class EncoderWithPadding(Encoder):
    """A key padding mask (mask_type 1): the fused path takes it (bool, or float where nonzero
    means masked, as PyTorch converts it)."""

    def forward(self, x, pad):
        return self.encoder(x, src_key_padding_mask=pad)


class VitBlock(nn.Module):
    """torchvision's ViT encoder block: traced under no_grad, nn.MultiheadAttention records
    aten::_native_multi_head_attention."""

    def __init__(self, d=48, heads=4):
        super().__init__()
        self.ln_1 = nn.LayerNorm(d, eps=1e-6)
        self.self_attention = nn.MultiheadAttention(d, heads, batch_first=True)
        self.ln_2 = nn.LayerNorm(d, eps=1e-6)
        self.mlp = nn.Sequential(nn.Linear(d, 2 * d), nn.GELU(), nn.Linear(2 * d, d))

    def forward(self, x):
        y = self.ln_1(x)
        y, _ = self.self_attention(y, y, y, need_weights=False)
        x = x + y
        return x + self.mlp(self.ln_2(x))


class VitBlockWithPadding(VitBlock):
    """nn.MultiheadAttention with a key padding mask, traced: the mask is an input of
    aten::_native_multi_head_attention (mask_type 1)."""

    def forward(self, x, pad):
        y = self.ln_1(x)
        y, _ = self.self_attention(y, y, y, key_padding_mask=pad, need_weights=False)
        x = x + y
        return x + self.mlp(self.ln_2(x))


class LstmLM(nn.Module):
    """bench's lstm_lm, small: embedding, 2-layer batch-first LSTM (hx None), linear."""

    def __init__(self, vocab=50, d=12, hidden=16, layers=2):
        super().__init__()
        self.emb = nn.Embedding(vocab, d)
        self.lstm = nn.LSTM(d, hidden, layers, batch_first=True)
        self.out = nn.Linear(hidden, vocab)

    def forward(self, ids):
        h, _ = self.lstm(self.emb(ids))
        return self.out(h)


class BiLstm(nn.Module):
    """Bidirectional, sequence-first, with given h0 / c0, returning the states too."""

    def __init__(self):
        super().__init__()
        self.lstm = nn.LSTM(6, 5, 2, bidirectional=True)

    def forward(self, x, h0, c0):
        y, (h, c) = self.lstm(x, (h0, c0))
        return y, h, c


class WideLstm(nn.Module):
    """Sequence-first, hidden 520 (fused lstm: hidden units split over two threads when there
    are two, vector tails, 8 + 3 batch rows), given h0 / c0, returning the states too."""

    def __init__(self):
        super().__init__()
        self.lstm = nn.LSTM(8, 520, 1)

    def forward(self, x, h0, c0):
        y, (h, c) = self.lstm(x, (h0, c0))
        return y, h, c


def save_case(root, name, module, args, fused, rtol=1e-4, atol=1e-5):
    d = os.path.join(root, name)
    os.makedirs(d, exist_ok=True)
    path = os.path.join(d, "model.pt")
    module.save(path)
    loaded = torch.jit.load(path)
    for i, a in enumerate(args):
        np.save(os.path.join(d, f"in{i}.npy"), a.numpy())
    with torch.no_grad():
        out = loaded(*args)
    outs = list(out) if isinstance(out, tuple) else [out]
    for i, o in enumerate(outs):
        np.save(os.path.join(d, f"out{i}.npy"), o.numpy())
    meta = {"inputs": [f"in{i}.npy" for i in range(len(args))],
            "outputs": [f"out{i}.npy" for i in range(len(outs))],
            "rtol": rtol, "atol": atol, "fused": fused}
    with open(os.path.join(d, "meta.json"), "w") as f:
        json.dump(meta, f, indent=1)


def main():
    root = sys.argv[1]
    os.makedirs(root, exist_ok=True)
    torch.manual_seed(0)
    with torch.no_grad():
        for name, norm_first, act, batch in (("encoder_post_relu", False, "relu", 2),
                                             ("encoder_pre_gelu", True, "gelu", 3)):
            m = Encoder(32, 4, 64, 2, norm_first, act).eval()
            save_case(root, name, torch.jit.script(m), [torch.randn(batch, 7, 32)],
                      {"fused attention": 2})
        m = EncoderWithPadding(32, 4, 64, 2, False, "relu").eval()
        pad = torch.zeros(2, 7, dtype=torch.bool)
        pad[1, 5:] = True
        save_case(root, "encoder_padding_mask", torch.jit.script(m), [torch.randn(2, 7, 32), pad],
                  {"fused attention": 2})
        # Float mask: PyTorch's fast path converts it to bool (-1.5 masks as -inf does). Batch
        # element 1 has every key masked: its rows are NaN in PyTorch 1.13 (0 / 0 in softmax).
        fpad = torch.zeros(3, 7)
        fpad[0, 5:] = float("-inf")
        fpad[0, 2] = -1.5
        fpad[1, :] = float("-inf")
        save_case(root, "encoder_float_mask_fully_masked", torch.jit.script(m),
                  [torch.randn(3, 7, 32), fpad], {"fused attention": 2})
        m = VitBlockWithPadding().eval()
        x = torch.randn(2, 9, 48)
        pad = torch.zeros(2, 9, dtype=torch.bool)
        pad[0, 6:] = True
        save_case(root, "vit_block_padding_traced", torch.jit.trace(m, (x, pad)), [x, pad],
                  {"fused attention": 1})
        m = VitBlock().eval()
        x = torch.randn(2, 9, 48)
        save_case(root, "vit_block_traced", torch.jit.trace(m, x), [x], {"fused attention": 1})
        # Enough work per layer for two threads (Note [Row-parallel transformer layers]): the
        # layers run as row chunks and heads in one parallel region when two threads are free.
        m = Encoder(128, 4, 512, 2, False, "relu").eval()
        save_case(root, "encoder_wide_post_relu", torch.jit.script(m), [torch.randn(4, 16, 128)],
                  {"fused attention": 2})
        m = Encoder(128, 4, 512, 2, True, "gelu").eval()
        save_case(root, "encoder_wide_pre_gelu", torch.jit.script(m), [torch.randn(5, 13, 128)],
                  {"fused attention": 2})
        m = VitBlock(192, 4).eval()
        x = torch.randn(2, 40, 192)
        save_case(root, "vit_block_wide_traced", torch.jit.trace(m, x), [x], {"fused attention": 1})
        m = LstmLM().eval()
        ids = torch.randint(0, 50, (3, 11))
        save_case(root, "lstm_lm_scripted", torch.jit.script(m), [ids], {"fused lstm": 1})
        m = BiLstm().eval()
        args = [torch.randn(8, 3, 6), torch.randn(4, 3, 5), torch.randn(4, 3, 5)]
        save_case(root, "bilstm_scripted", torch.jit.script(m), args, {"fused lstm": 1})
        m = WideLstm().eval()
        args = [torch.randn(4, 11, 8), torch.randn(1, 11, 520) * 0.5, torch.randn(1, 11, 520)]
        save_case(root, "wide_lstm_scripted", torch.jit.script(m), args, {"fused lstm": 1})


if __name__ == "__main__":
    main()
