#!/usr/bin/env python3
"""Writes oracle cases for the kernels of src/runtime/register_indexing_extra.cpp and the
packed-sequence RNN kernels: scatter / scatter_add / scatter_reduce (functional and in-place),
index_add / index_copy / index_fill, masked_scatter / masked_select, searchsorted / bucketize,
unique, meshgrid, repeat_interleave, diagonal / diag, take / take_along_dim, count_nonzero, einsum, embedding_bag, argsort(stable=), torchvision::nms / roi_align and
aten::lstm.data / gru.data / rnn_*.data with _pack_padded_sequence / _pad_packed_sequence.

    /usr/bin/python3 tests/runtime/gen_kernel_cases.py OUT_DIR [name-substring ...]

Same format as gen_graph_cases.py (whose helpers it uses): OUT_DIR/<case>.ir is PyTorch's
scripted, inlined graph, the inputs and PyTorch's outputs are .npy files, manifest.json lists
them. graph_oracle_test.cpp runs them when TORCHLESS_GRAPH_CASES_DIR names OUT_DIR (the
runtime_kernel_oracle ctest). Inputs vary dtype (float, double, int64, int32, uint8, bool),
contiguity (transposed and strided views made inside the graphs), broadcasting and emptiness.
"""
import os
import sys
from typing import List, Optional, Tuple

import torch
import torch.nn as nn
import torch.nn.functional as F
import torchvision

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
OUT = sys.argv[1] if len(sys.argv) > 1 else "kernel_cases"
ONLY = sys.argv[2:]
sys.argv = [sys.argv[0], OUT]  # gen_graph_cases reads its own argv at import
import gen_graph_cases as g  # noqa: E402

g.OUT = OUT
CASES = []


def case(name, rtol=1e-5, atol=1e-6):
    def register(fn):
        CASES.append((name, fn, rtol, atol))
        return fn
    return register


def ri(lo, hi, shape, dtype=torch.int64):
    return torch.randint(lo, hi, shape, dtype=dtype)


# ---- scatter ------------------------------------------------------------------------------

def scatter_ops(x: torch.Tensor, idx: torch.Tensor, src: torch.Tensor, xi: torch.Tensor, srci: torch.Tensor):
    a = x.scatter(1, idx, src)
    b = x.scatter(0, idx, 2.5)
    c = x.scatter_add(1, idx, src)
    d = x.scatter(1, idx, src, reduce="add")
    e = x.scatter(1, idx, src, reduce="multiply")
    f = x.scatter(1, idx, 1.5, reduce="multiply")
    y = x.clone()
    y.scatter_(1, idx, src)
    z = x.clone()
    z.scatter_add_(0, idx, src)
    w = xi.scatter_add(1, idx, srci)
    v = xi.t().scatter(0, idx.t(), srci.t())  # non-contiguous self, index and src
    u = x[:, ::2].scatter_add(1, idx[:, :2], src[:, ::2])
    e0 = x.scatter_add(1, idx[:0], src[:0])  # empty index
    return a, b, c, d, e, f, y, z, w, v, u, e0


@case("scatter")
def _scatter():
    idx = ri(0, 3, (3, 4))
    return g.function_graph(scatter_ops, [torch.randn(3, 6), idx, torch.randn(4, 6), ri(-5, 5, (3, 6)),
                                          ri(-5, 5, (4, 6))])


def scatter_reduce_ops(x: torch.Tensor, idx: torch.Tensor, src: torch.Tensor, xi: torch.Tensor, srci: torch.Tensor):
    outs: List[torch.Tensor] = []
    for r in ["sum", "prod", "mean", "amax", "amin"]:
        outs.append(x.scatter_reduce(1, idx, src, r))
        outs.append(x.scatter_reduce(1, idx, src, r, include_self=False))
        outs.append(xi.scatter_reduce(1, idx, srci, r))
        outs.append(xi.scatter_reduce(1, idx, srci, r, include_self=False))
    y = x.clone()
    y.scatter_reduce_(1, idx, src, "amax")
    outs.append(y)
    return outs


@case("scatter_reduce")
def _scatter_reduce():
    idx = ri(0, 4, (3, 5))
    return g.function_graph(scatter_reduce_ops, [torch.randn(3, 4), idx, torch.randn(3, 5), ri(-9, 9, (3, 4)),
                                                 ri(-9, 9, (3, 5))])


def gather_ops(x: torch.Tensor, idx: torch.Tensor, xi: torch.Tensor):
    return torch.gather(x, 1, idx), torch.gather(x.t(), 0, idx.t()), torch.gather(xi, 1, idx)


@case("gather")
def _gather():
    return g.function_graph(gather_ops, [torch.randn(4, 5), ri(0, 5, (4, 3)), ri(-5, 5, (4, 5), torch.int32)])


# ---- index_* and masked_* ---------------------------------------------------------------------

def index_ops(x: torch.Tensor, idx: torch.Tensor, src: torch.Tensor, xi: torch.Tensor, srci: torch.Tensor,
              idx32: torch.Tensor, m: torch.Tensor):
    a = x.index_add(0, idx, src)
    b = x.index_add(0, idx32, src, alpha=-0.5)
    c = xi.index_add(0, idx, srci, alpha=3)
    y = x.clone()
    y.index_add_(0, idx, src)
    d = x.index_copy(0, idx[:2], src[:2])
    e = x.index_fill(1, idx, -1.0)
    f = xi.index_fill(0, idx, torch.tensor(7))
    h = x.masked_scatter(m, src.flatten())
    k = x.t().masked_select(m.t())
    z = xi.clone()
    z.masked_scatter_(m[0], srci.flatten())
    q = torch.masked_select(x, m[0])  # broadcast mask
    return a, b, c, y, d, e, f, h, k, z, q


@case("index_masked")
def _index_masked():
    idx = torch.tensor([2, 0, 2, 1])
    return g.function_graph(index_ops, [torch.randn(3, 5), idx, torch.randn(4, 5), ri(-5, 5, (3, 5)),
                                        ri(-5, 5, (4, 5)), idx.to(torch.int32), torch.rand(3, 5) > 0.5])


# ---- searches, unique, sorting -------------------------------------------------------------

def search_ops(seq: torch.Tensor, v: torch.Tensor, seq2: torch.Tensor, v2: torch.Tensor, seqi: torch.Tensor,
               vi: torch.Tensor, sorter_in: torch.Tensor):
    a = torch.searchsorted(seq, v)
    b = torch.searchsorted(seq, v, right=True)
    c = torch.searchsorted(seq2, v2, out_int32=True)
    d = torch.searchsorted(seq2, v2, side="right")
    e = torch.bucketize(v, seq)
    f = torch.bucketize(vi, seqi, right=True, out_int32=True)
    h = torch.searchsorted(seqi, vi.t())
    srt = torch.argsort(sorter_in)
    k = torch.searchsorted(sorter_in, v, sorter=srt)
    m = torch.bucketize(2.5, seq)
    n = torch.searchsorted(seq, 0.5)
    return a, b, c, d, e, f, h, k, m, n


@case("searchsorted")
def _search():
    seq = torch.sort(torch.randn(7)).values
    seq[3] = seq[2]
    v = torch.cat([torch.randn(4, 3).flatten(), seq[:3]]).reshape(3, 5)
    seq2 = torch.sort(torch.randn(2, 3, 6)).values
    v2 = torch.randn(2, 3, 4)
    seqi = torch.tensor([0, 2, 2, 5, 9])
    vi = ri(-1, 11, (4, 3))
    return g.function_graph(search_ops, [seq, v, seq2, v2, seqi, vi, torch.randn(7)])


def unique_ops(x: torch.Tensor, f: torch.Tensor, b: torch.Tensor, m: torch.Tensor):
    u1 = torch.unique(x)
    u2, inv2, cnt2 = torch.unique(x, return_inverse=True, return_counts=True)
    u3, inv3 = torch.unique(f.t(), return_inverse=True)
    u4 = torch.unique(b)
    c1, ci1, cc1 = torch.unique_consecutive(x, return_inverse=True, return_counts=True)
    c2 = torch.unique_consecutive(f)
    d1, di1, dc1 = torch.unique(m, dim=0, return_inverse=True, return_counts=True)
    d2, di2, dc2 = torch.unique_consecutive(m, return_inverse=True, return_counts=True, dim=1)
    s1 = torch.argsort(f.flatten(), stable=True)
    s2 = torch.argsort(x, dim=0, descending=True, stable=True)
    return u1, u2, inv2, cnt2, u3, inv3, u4, c1, ci1, cc1, c2, d1, di1, dc1, d2, di2, dc2, s1, s2


@case("unique")
def _unique():
    m = ri(0, 2, (5, 3))
    m[3] = m[0]
    return g.function_graph(unique_ops, [ri(0, 4, (3, 6)), torch.randint(0, 3, (4, 2)).double(),
                                         torch.rand(6) > 0.5, m])


def misc_index_ops(a: torch.Tensor, b: torch.Tensor, x: torch.Tensor, rep: torch.Tensor, xi: torch.Tensor,
                   idx: torch.Tensor):
    g1, g2 = torch.meshgrid(a, b, indexing="ij")
    h1, h2, h3 = torch.meshgrid([a, b, a[:2]], indexing="xy")
    r1 = torch.repeat_interleave(x, 2)
    r2 = torch.repeat_interleave(x, rep, dim=0)
    r3 = x.t().repeat_interleave(3, dim=1)
    r4 = torch.repeat_interleave(rep)
    d1 = torch.diagonal(x)
    d2 = torch.diagonal(x.t(), 1)
    d3 = torch.diagonal(xi.unsqueeze(0), -1, 1, 2)
    e1 = torch.diag(a)
    e2 = torch.diag(x, -1)
    e3 = torch.diag(b, 2)
    t1 = torch.take(x.t(), idx)
    t2 = torch.take_along_dim(x, torch.argsort(x, 1), 1)
    t3 = torch.take_along_dim(x, idx.flatten()[2:])
    c1 = torch.count_nonzero(xi)
    c2 = torch.count_nonzero(xi, 1)
    c3 = torch.count_nonzero(xi, [0, 1])
    return g1, g2, h1, h2, h3, r1, r2, r3, r4, d1, d2, d3, e1, e2, e3, t1, t2, t3, c1, c2, c3


@case("misc_index")
def _misc_index():
    return g.function_graph(misc_index_ops, [torch.randn(3), torch.randn(4), torch.randn(3, 4), torch.tensor([2, 0, 1]),
                                             ri(-1, 2, (3, 4)), torch.tensor([[0, -1], [5, 7]])])


# ---- einsum --------------------------------------------------------------------------------

def einsum_ops(a: torch.Tensor, b: torch.Tensor, c: torch.Tensor, q: torch.Tensor, k: torch.Tensor,
               sq: torch.Tensor, ai: torch.Tensor, bi: torch.Tensor):
    r1 = torch.einsum("ij,jk->ik", a, b)
    r2 = torch.einsum("ij,jk", a, b)
    r3 = torch.einsum("bhqd,bhkd->bhqk", q, k)
    r4 = torch.einsum("ii->i", sq)
    r5 = torch.einsum("ii", sq)
    r6 = torch.einsum("ij->ji", a)
    r7 = torch.einsum("i,j->ij", c, b[0])
    r8 = torch.einsum("...ij,...jk->...ik", q, k.transpose(-1, -2))
    r9 = torch.einsum("bij,jk,k->bi", q[0], b, b[0])
    r10 = torch.einsum("ij,ij->", ai, bi)
    r11 = torch.einsum("Ba,ab", a, b)
    r12 = torch.einsum("i j , j k -> i k", a.t().t(), b.t().contiguous().t())
    r13 = torch.einsum("...i,...i->...", q, q)
    r14 = torch.einsum("ijk->", q[0])
    r15 = torch.einsum("ij,kj->ik", a, a)
    return r1, r2, r3, r4, r5, r6, r7, r8, r9, r10, r11, r12, r13, r14, r15


@case("einsum", rtol=1e-5, atol=1e-5)
def _einsum():
    return g.function_graph(einsum_ops, [torch.randn(3, 4), torch.randn(4, 5), torch.randn(3), torch.randn(2, 2, 3, 4),
                                         torch.randn(2, 2, 6, 4), torch.randn(4, 4), ri(-5, 5, (2, 3)),
                                         ri(-5, 5, (2, 3))])


# ---- embedding_bag -------------------------------------------------------------------------

def embedding_bag_ops(w: torch.Tensor, idx: torch.Tensor, off: torch.Tensor, psw: torch.Tensor, idx2: torch.Tensor,
                      wd: torch.Tensor):
    a = F.embedding_bag(idx, w, off, mode="sum")
    b = F.embedding_bag(idx, w, off, mode="mean")
    c = F.embedding_bag(idx, w, off, mode="max")
    d = F.embedding_bag(idx, w, off, mode="sum", per_sample_weights=psw)
    e = F.embedding_bag(idx2, w, mode="mean")
    f = F.embedding_bag(idx, w, off, mode="mean", padding_idx=2)
    h = F.embedding_bag(idx, w, torch.cat([off, torch.tensor([idx.size(0)])]), mode="sum", include_last_offset=True)
    k = F.embedding_bag(idx, wd, off, mode="max", padding_idx=-1)
    return a, b, c, d, e, f, h, k


@case("embedding_bag")
def _embedding_bag():
    idx = torch.tensor([1, 2, 4, 5, 4, 3, 2, 9, 2, 2])
    off = torch.tensor([0, 4, 4, 8])  # bag 1 is empty
    return g.function_graph(embedding_bag_ops, [torch.randn(10, 3), idx, off, torch.randn(10), ri(0, 10, (3, 4)),
                                                torch.randn(10, 3, dtype=torch.float64)])


class BagModel(nn.Module):
    def __init__(self):
        super().__init__()
        self.bag = nn.EmbeddingBag(20, 6, mode="mean")
        self.fc = nn.Linear(6, 2)

    def forward(self, text, offsets):
        return self.fc(self.bag(text, offsets))


@case("embedding_bag_text_classifier", rtol=1e-5, atol=1e-5)
def _bag_model():
    return g.module_graph(BagModel(), [ri(0, 20, (9,)), torch.tensor([0, 3, 7])])


# ---- torchvision ---------------------------------------------------------------------------

def vision_ops(boxes: torch.Tensor, scores: torch.Tensor, x: torch.Tensor, rois: torch.Tensor,
               idxs: torch.Tensor):
    k1 = torchvision.ops.nms(boxes, scores, 0.5)
    k2 = torchvision.ops.nms(boxes, scores, 0.2)
    k3 = torchvision.ops.batched_nms(boxes, scores, idxs, 0.4)
    # torch.ops directly: torchvision.ops.roi_align's isinstance(boxes, list) leaves a
    # prim::isinstance node in PyTorch's graph that the graph runner does not take.
    r1 = torch.ops.torchvision.roi_align(x, rois, 0.5, 3, 3, 2, False)
    r2 = torch.ops.torchvision.roi_align(x, rois, 1.0, 2, 4, -1, True)
    r3 = torch.ops.torchvision.roi_align(x.double(), rois.double(), 0.25, 2, 2, 0, False)
    w = torch.where(scores > 0.5)
    return k1, k2, k3, r1, r2, r3, w[0], torch.where(x > 1.0)[3]


@case("torchvision_ops", rtol=1e-5, atol=1e-5)
def _vision():
    xy = torch.rand(12, 2) * 20
    wh = torch.rand(12, 2) * 10 + 1
    boxes = torch.cat([xy, xy + wh], 1)
    scores = torch.rand(12)
    scores[5] = scores[2]  # a tie
    x = torch.randn(2, 3, 10, 12)
    rois = torch.cat([torch.tensor([[0.0], [1.0], [1.0], [0.0]]), torch.tensor(
        [[1.0, 1.0, 8.0, 7.0], [0.0, 2.5, 20.0, 18.0], [-3.0, -2.0, 4.0, 30.0], [5.0, 5.0, 5.5, 5.2]])], 1)
    return g.function_graph(vision_ops, [boxes, scores, x, rois, ri(0, 3, (12,))])


# ---- packed sequences ----------------------------------------------------------------------

class PackedRnn(nn.Module):
    def __init__(self, kind, layers, bidirectional, batch_first, **kw):
        super().__init__()
        cls = {"lstm": nn.LSTM, "gru": nn.GRU, "rnn_tanh": nn.RNN, "rnn_relu": nn.RNN}[kind]
        if kind == "rnn_relu":
            kw["nonlinearity"] = "relu"
        self.rnn = cls(5, 4, layers, bidirectional=bidirectional, batch_first=batch_first, **kw)
        self.batch_first = batch_first

    def forward(self, x, lengths):
        packed = nn.utils.rnn.pack_padded_sequence(x, lengths, batch_first=self.batch_first, enforce_sorted=False)
        out, h = self.rnn(packed)
        padded, lens = nn.utils.rnn.pad_packed_sequence(out, batch_first=self.batch_first, total_length=7)
        return padded, lens, h, out.data, out.batch_sizes


def packed_case(kind, layers, bidirectional, batch_first):
    name = f"packed_{kind}_l{layers}{'_bi' if bidirectional else ''}{'_bf' if batch_first else ''}"

    @case(name, rtol=1e-5, atol=1e-5)
    def build():
        lengths = torch.tensor([3, 6, 1, 6, 4])
        x = torch.randn(5, 6, 5) if batch_first else torch.randn(6, 5, 5)
        return g.module_graph(PackedRnn(kind, layers, bidirectional, batch_first), [x, lengths])


for kind in ["lstm", "gru", "rnn_tanh", "rnn_relu"]:
    packed_case(kind, 2, True, False)
packed_case("lstm", 1, False, True)
packed_case("gru", 2, False, True)


def pack_ops(x: torch.Tensor, lengths: torch.Tensor):
    p = nn.utils.rnn.pack_padded_sequence(x, lengths, batch_first=True)
    padded, lens = nn.utils.rnn.pad_packed_sequence(p, batch_first=True, padding_value=-3.0)
    q = nn.utils.rnn.pack_padded_sequence(x.transpose(0, 1), lengths, enforce_sorted=True)
    return p.data, p.batch_sizes, padded, lens, q.data


@case("pack_padded_sequence")
def _pack():
    return g.function_graph(pack_ops, [torch.randn(4, 5, 3), torch.tensor([5, 3, 3, 1])])


def main():
    os.makedirs(OUT, exist_ok=True)
    manifest = []
    for name, build, rtol, atol in CASES:
        if ONLY and not any(o in name for o in ONLY):
            continue
        torch.manual_seed(sum(map(ord, name)))
        graph, inputs, out = build()
        manifest.append(g.write_case(name, graph, inputs, out, rtol, atol))
    with open(os.path.join(OUT, "manifest.json"), "w") as f:
        import json
        json.dump({"cases": manifest}, f, indent=1)
    print(f"wrote {len(manifest)} cases to {OUT}")


if __name__ == "__main__":
    main()
