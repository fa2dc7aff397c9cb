"""Writes the ONNX export coverage cases (issue 14): models rebuilt from torch.onnx bug reports
that need mutation removal (writes through views, in-place ops, index_put), advanced indexing,
int arithmetic inside loops and the single ops einsum, one_hot, div with a rounding mode,
new_zeros and _cast_Long. tests/convert/export_oracle_test.cpp (CoverageExportOracle) exports
each at opsets 13 and 17 and runs it in ONNX Runtime against PyTorch.

Usage: gen_export_coverage_cases.py OUT_DIR [name-substring ...]

The case format is gen_export_cases.py's (graph.txt, meta.json, in/out/p .npy; alt/ for a
second input set); its writer is reused, so each model is built once and torch.onnx.export runs
once per model and opset (its result is recorded: several of these it refuses). It is its own
ctest fixture so that it runs in parallel with gen_export_cases.py.
"""
import os
import sys
from typing import List, Optional

import torch
import torch.nn as nn
import torch.nn.functional as F
import torchvision

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gen_export_cases as gen  # noqa: E402  (reads OUT_DIR and the filters from sys.argv)


# ---- mutation removal -------------------------------------------------------------------------

class SliceAssign(nn.Module):
    """x[:, 1:3] = ... on a clone (pytorch/pytorch#29926-style writes through slices)."""

    def forward(self, x):
        y = x.clone()
        y[:, 1:3] = x[:, :2] * 2.0
        y[0] = y[1] + 1.0
        return y


class RowsInLoop(nn.Module):
    """out[i] = ... in a loop over a dynamic dim (a loop-carried tensor after mutation removal)."""

    def forward(self, x):
        out = torch.zeros_like(x)
        for i in range(x.size(0)):
            out[i] = x[i] * float(i + 1)
        return out


class MaskAssign(nn.Module):
    """x[mask] = 0 (masked write), and a masked write of a tensor of values."""

    def forward(self, x):
        y = x.clone()
        y[y > 0.5] = 0.0
        z = x.clone()
        m = z < -0.5
        z[m] = z[m] * 10.0
        return y, z


class IndexAccumulate(nn.Module):
    """x[idx] += u, with idx a model input (index_put with accumulate)."""

    def forward(self, x, idx, u):
        y = x.clone()
        y[idx] += u
        return y


class FillZero(nn.Module):
    """fill_, zero_, copy_ with broadcasting and an in-place mul on views."""

    def forward(self, x):
        y = x.clone()
        y[0].fill_(1.0)
        y[1].zero_()
        y[2:4].copy_(x[0])
        y[:, -1].mul_(3.0)
        return y


class InplaceActivations(nn.Module):
    """In-place activations and arithmetic after a conv (torchvision-style blocks)."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3, padding=1)
        self.act = nn.ReLU(inplace=True)
        self.ht = nn.Hardtanh(-0.5, 0.5, inplace=True)

    def forward(self, x):
        y = self.act(self.conv(x))
        y.add_(0.25)
        y = self.ht(y)
        y.clamp_(min=-0.1)
        return torch.sigmoid_(y * 2.0)


class ViewAlias(nn.Module):
    """Writes through a view (view / reshape) reach the base; the view stays live after."""

    def forward(self, x):
        y = x.clone()
        v = y.view(-1)
        v[2:5] = 0.0
        t = y.transpose(0, 1)
        t[0] = -1.0
        return y + 1.0, v


class CopyingViews(nn.Module):
    """contiguous / reshape / flatten copy a tensor their input's strides do not allow as a view
    (then a write through the result leaves the input alone) and alias it otherwise (Note
    [Views that may copy] in convert/onnx/prepare.cpp)."""

    def forward(self, x, img):
        a = x.clone()
        c = a.t().contiguous()
        c[0] = 1.0
        b = x.clone()
        d = b.contiguous()
        d[1] = 2.0
        e = x.clone()
        f = e.t().reshape(-1)
        f[0] = 3.0
        g = x.clone()
        h = g.reshape(-1)
        h[2] = 4.0
        k = x.clone()
        m = k.t().flatten()
        m.mul_(2.0)
        p = img.clone()
        q = p.contiguous(memory_format=torch.channels_last)
        q.add_(1.0)
        return a, c, b, d, e, f, g, h, k, m, p, q


class NestedCopyingViews(nn.Module):
    """CopyingViews inside a loop and an if: a.t().contiguous() and b.t().reshape(-1) copy (the
    writes through them leave a and b alone), a.reshape(-1) and b.contiguous() alias (the writes
    reach a and b)."""

    def forward(self, x):
        a = x.clone()
        for i in range(x.size(0)):
            c = a.t().contiguous()
            c[0] = float(i)
            r = a.reshape(-1)
            r[i] = -1.0 - float(i)
        b = x.clone()
        if bool(x.sum() > -1e9):
            d = b.t().reshape(-1)
            d[0] = 5.0
            e = b.contiguous()
            e[1] = 7.0
        return a, b


class TransposeInplace(nn.Module):
    def forward(self, x):
        y = x.clone()
        y.transpose_(0, 1)
        return y * 2.0


# ---- indexing, loops and single ops -----------------------------------------------------------

class AdvancedIndex(nn.Module):
    """aten::index.Tensor: integer, boolean and two-tensor indices, and x[:, idx]."""

    def forward(self, x, idx):
        a = x[idx]
        b = x[x > 0]
        c = x[idx, idx]
        d = x[:, idx]
        return a, b, c, d


class IntLoop(nn.Module):
    """A while loop on ints (aten::lt.int, aten::tensor.int, floordiv of negatives) and a
    range with a start and a step (aten::__range_length) over a dynamic dim."""

    def forward(self, x):
        acc = torch.zeros_like(x[0])
        i = 0
        while i < x.size(0):
            acc = acc + x[i] * torch.tensor(i, dtype=torch.float) + float((i - 2) // 2)
            i += 1
        for j in range(1, x.size(0), 2):
            acc = acc + x[j]
        return acc


class ScalarLoop(nn.Module):
    """Float and bool scalars carried through a loop over a dynamic dim (aten::mul.float,
    aten::add.float, aten::gt.int, aten::__or__.bool as Loop-carried 0-d tensors)."""

    def forward(self, x):
        s = 1.0
        flag = False
        for i in range(x.size(0)):
            s = s * 0.5 + float(i)
            flag = flag or i > 2
        return x * s + float(flag)


class ListOutput(nn.Module):
    """A List[int] returned (sizes read from a dynamic axis): one 1-d int64 output."""

    def forward(self, x):
        s: List[int] = x.shape
        return x * 2.0, [s[0], s[1] * 2]


class MhaWeights(nn.Module):
    """nn.MultiheadAttention's averaged attention weights returned (Optional[Tensor] scripted:
    the output's type comes from the example run)."""

    def __init__(self):
        super().__init__()
        self.mha = nn.MultiheadAttention(16, 2, batch_first=True)

    def forward(self, x):
        o, w = self.mha(x, x, x)
        return o, w


class MhaNoWeights(nn.Module):
    """Batch-first self-attention without weights: w is None (its `is None` folds to True; an
    empty tensor in its place made it False). PyTorch cannot return the undefined tensor of its
    fast path scripted, so the test reads it through `is None`."""

    def __init__(self):
        super().__init__()
        self.mha = nn.MultiheadAttention(16, 2, batch_first=True)

    def forward(self, x):
        o, w = self.mha(x, x, x, need_weights=False)
        return o if w is None else o * 2.0


class NumbersInLoop(nn.Module):
    """Lists of numbers appended in a loop over a dynamic dim (a 1-d tensor, Concat per
    append), then made a tensor, its length and an element read."""

    def forward(self, x):
        steps: List[int] = []
        scales: List[float] = []
        for i in range(x.size(0)):
            steps.append(i * 2 + 1)
            scales.append(float(i) * 0.5)
        return (x + torch.tensor(steps).unsqueeze(1).float(), x * torch.tensor(scales).unsqueeze(1),
                x * float(len(steps)) + float(steps[-1]))


class ListInLoop(nn.Module):
    """A list literal filled by append in a loop over a dynamic dim, then stacked and
    concatenated, its length and an element read (ONNX sequences; torch.onnx scripting)."""

    def forward(self, x):
        outs: List[torch.Tensor] = []
        # An empty list filled with int64 tensors: the Loop's sequence is of int64.
        idx: List[torch.Tensor] = []
        for i in range(x.size(0)):
            outs.append(x[i] * float(i + 1))
            idx.append(torch.argmax(x[i]).unsqueeze(0))
        n = len(outs)
        return (torch.stack(outs, 0), torch.cat(outs, 0) + outs[0].sum(), x * float(n),
                torch.cat(idx, 0))


class ListWrites(nn.Module):
    """insert / pop / l[i] = v / del l[i] on lists of tensors, after a loop over a dynamic dim
    and inside one (with an if): ONNX sequences, as torch.onnx's scripting export writes them
    (Note [List writes] in convert/onnx/prepare.cpp)."""

    def forward(self, x):
        xs: List[torch.Tensor] = []
        for i in range(x.size(0)):
            xs.insert(0, x[i] * float(i + 1))
        xs[1] = xs[1] + 10.0
        last = xs.pop()
        del xs[0]
        xs.insert(-1, last)
        xs.insert(100, x[0])
        ys: List[torch.Tensor] = [x[0], x[1]]
        for i in range(x.size(0)):
            ys[-1] = ys[-1] + x[i]
            if i % 2 == 0:
                ys.append(x[i])
            else:
                ys.insert(1, -x[i])
        p = ys.pop(0)
        return torch.stack(xs), torch.cat(ys), p


class AsStrided(nn.Module):
    """as_strided views of a fresh tensor and of an input (torch.onnx: Gather of the flattened
    input), with and without a storage offset; overlapping windows too. _reshape_from_tensor.
    Views of views: as_strided reads the storage, so of a transpose it reads the untransposed
    elements, and its offset counts from the storage's start, not the slice's."""

    def forward(self, x):
        y = x * 2.0
        return (torch.as_strided(y, (3, 3), (1, 2)), y.as_strided((2, 2), (4, 1), 1),
                torch.as_strided(x, (5, 2), (2, 1)) + 1.0,
                torch._reshape_from_tensor(y, torch.tensor([6, 2])),
                torch.as_strided(y.t(), (2, 3), (1, 4)), y[1:].as_strided((2, 2), (1, 4), 5))


class PackedSequences(nn.Module):
    """pack_padded_sequence -> LSTM / GRU -> pad_packed_sequence (torch.onnx: sequence_lens),
    unsorted lengths, batch-first, a padding value, total_length past the longest, and an input
    padded past its longest sequence."""

    def __init__(self):
        super().__init__()
        self.lstm = nn.LSTM(3, 4, num_layers=2, batch_first=True, bidirectional=True)
        self.gru = nn.GRU(3, 5)
        self.head = nn.Linear(8, 2)

    def forward(self, x, lengths):
        p = nn.utils.rnn.pack_padded_sequence(x, lengths, batch_first=True, enforce_sorted=False)
        y, (h, c) = self.lstm(p)
        out, out_len = nn.utils.rnn.pad_packed_sequence(y, batch_first=True, padding_value=-1.0)
        q = nn.utils.rnn.pack_padded_sequence(x.transpose(0, 1), lengths, enforce_sorted=False)
        z, hg = self.gru(q)
        zz, _ = nn.utils.rnn.pad_packed_sequence(z, total_length=8)
        return self.head(out), out_len, h, c, zz, hg


class Einsum(nn.Module):
    def forward(self, a, b):
        return torch.einsum("bij,bjk->bik", a, b), torch.einsum("bi,bj->bij", a[:, 0], b[:, :, 0])


class OneHot(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(6, 3)

    def forward(self, idx):
        return self.fc(F.one_hot(idx, 6).float())


class DivModes(nn.Module):
    def forward(self, a, b):
        return (torch.div(a, b, rounding_mode="floor"), torch.div(a, b, rounding_mode="trunc"),
                torch.div((a * 10).long(), 3, rounding_mode="floor"))


class NewZeros(nn.Module):
    def forward(self, x):
        z = x.new_zeros(x.shape)
        o = x.new_ones((2, x.size(1)))
        return z + x, o * 3.0


class CastLong(nn.Module):
    """Legacy archives' aten::_cast_Long (reddit_bytelstm-style byte embeddings)."""

    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(16, 4)

    def forward(self, x):
        return self.emb(torch._cast_Long(x * 15.0, False))

class ZeroDimConstants(nn.Module):
    """Traced `x + 2.5` on an int tensor records 2.5 as a 0-dim double tensor constant; PyTorch's
    executor makes it a number (CanonicalizeOps), so the sums are float32, not float64 (Note
    [0-dim tensor constants] in runtime/canonicalize_ops.h)."""

    def forward(self, x, y):
        return x + 2.5, x * 1.5, x - 0.25, x / 4, y + 2.5, (x + 3) * 2


# ---- the long tail (issue 14 part 5) ----------------------------------------------------------

class TailElementwise(nn.Module):
    """Unary math and activations torch.onnx's symbolic_opset9 exports, and the binary tail."""

    def forward(self, x, y, i):
        a = torch.trunc(x * 3.0) + torch.log1p(x.abs()) + torch.log2(x.abs() + 1.0) + torch.square(x)
        b = torch.selu(x) + F.mish(x) + F.logsigmoid(x) + F.softplus(x, 2.0, 5.0) + F.celu(x, 0.5)
        c = torch.isnan(x / y).float()
        m = torch.logical_xor(torch.logical_or(x > 0, y > 0), torch.logical_and(x > 0.5, ~(y > 0.2)))
        d = torch.fmod(x * 4.0, y) + torch.remainder(x * 4.0, y) + torch.floor_divide(x * 4.0, y)
        e = torch.true_divide(x, y) + torch.addcmul(x, x, y, value=0.5) + torch.lerp(x, y, 0.3)
        k = torch.remainder(i, 3) + torch.fmod(i, 4) + torch.floor_divide(i, 3)
        return a, b, c, m, d, e, k


class TailNoKernel(nn.Module):
    """Traced only: shrinks, numpy_T, bicubic and trilinear interpolation (ops the interpreter
    once had no kernel for: the export took their sizes from the trace's types)."""

    def forward(self, x):
        return (F.hardshrink(x, 0.3) + F.softshrink(x, 0.3), x.T,
                F.interpolate(x[None, None], size=(5, 7), mode="bicubic", align_corners=False),
                F.interpolate(x[None, None, None], scale_factor=(2.0, 1.5, 1.5), mode="trilinear"))


class TailReduce(nn.Module):
    def forward(self, x):
        a = (x > 0).all(), (x > -1.5).all(1), (x > 1.0).any(), (x > 1.0).any(0)
        b = torch.logsumexp(x, 1), torch.var(x), torch.std(x, 0), torch.var(x, 1, unbiased=False, keepdim=True)
        c = torch.var_mean(x, 1), torch.std_mean(x, 0)
        d = torch.norm(x, dim=1), torch.norm(x, p=1, dim=0), torch.linalg.vector_norm(x, 3.0), x.norm()
        e = torch.cumsum(x, 1), torch.cumsum(x > 0, 0)
        return a, b, c, d, e


class TailShape(nn.Module):
    def forward(self, x, v):
        a = torch.flip(x, [0, 2]), torch.roll(x, 1, 2), torch.roll(x, [1, -1], [0, 1]), torch.roll(x, 3)
        b = x.repeat(2, 1, 1, 2), torch.repeat_interleave(x, 2, 1), torch.repeat_interleave(v, 3)
        c = torch.movedim(x, 0, 2), x.view_as(torch.zeros(4, 6)), x.reshape_as(torch.zeros(6, 4))
        p, q, r = x.unbind(1)
        acc = torch.zeros_like(x[0, :, 0])
        for t in x.unbind(2):
            acc = acc + t.sum(0)
        d = torch.tril(x[0]), torch.triu(x, 1), torch.tril(x, -1)
        e = torch.broadcast_tensors(v.unsqueeze(1), x[0, 0])
        f = torch.meshgrid(v, v[:2], indexing="ij"), torch.meshgrid(v, v[:2], indexing="xy")
        g = list(x.split(2, 2))  # aten::list.t
        return a, b, c, p - q * r, acc, d, e, f, torch.cat([g[1], g[0]], 2)


class TailSearch(nn.Module):
    def forward(self, x, idx):
        a = torch.topk(x, 2), torch.topk(x, 3, 0, largest=False)
        b = torch.sort(x, 1, descending=True), torch.argsort(x, 0)
        c = torch.nonzero(x > 0.5), torch.masked_select(x, x > 0)
        d = torch.gather(x, 1, idx), x.scatter(1, idx, -x), x.scatter(0, idx.clamp(max=3), 2.0)
        return a, b, c, d


class ScatterAdd(nn.Module):
    """scatter_add and scatter with a reduction (ScatterElements' reduction: opset 16)."""

    def forward(self, x, idx, src):
        return x.scatter_add(1, idx, src), x.scatter(1, idx, src, reduce="multiply")


class TailNn(nn.Module):
    def __init__(self):
        super().__init__()
        self.inorm = nn.InstanceNorm2d(4, affine=True)

    def forward(self, x, s, v):
        a = self.inorm(x), F.pad(x, [1, 2, 2, 1], mode="reflect"), F.pad(x, [2, 1, 1, 0], mode="replicate")
        b = F.pixel_unshuffle(x, 2), F.log_softmax(x, 1)
        # Scripted, F.interpolate builds its factor / size lists in loops (unrolled at export).
        c = (F.interpolate(x, scale_factor=2.0, mode="nearest"), F.interpolate(x, size=(9, 12), mode="nearest"),
             F.interpolate(x, scale_factor=1.5, mode="bilinear"), F.interpolate(s, size=11, mode="linear"),
             F.interpolate(s, size=5, mode="linear", align_corners=True),
             F.interpolate(x.unsqueeze(2), size=(2, 3, 5), mode="nearest"))
        m = x[0, 0]
        d = torch.baddbmm(x[0], x[0], x[0], beta=0.5, alpha=2.0), torch.dot(v, v), torch.mv(m, v), torch.outer(v, v)
        return a, b, c, d


class IndexWrites(nn.Module):
    """index_copy, index_fill (a scalar and a 0-d tensor value, in place too)."""

    def forward(self, x, idx, src):
        a = x.index_copy(0, idx, src)
        b = x.index_fill(1, idx[:2], -1.0)
        c = x.clone()
        c.index_fill_(0, idx, torch.tensor(2.0))
        return a, b, c


class CrossAttention(nn.Module):
    """Batch-first cross-attention, a decoder attending to an encoder's memory: with the key the
    value, nn.MultiheadAttention's packed projection splits into q and a chunked k/v
    (`[q] + linear(k).chunk(2)`, list + list), and the key is longer than the query."""

    def __init__(self):
        super().__init__()
        self.mha = nn.MultiheadAttention(16, 2, batch_first=True)

    def forward(self, t, m):
        y, _ = self.mha(t, m, m, need_weights=False)
        return y


class IndexAdd(nn.Module):
    """index_add with repeated indices and alpha (ScatterElements' reduction: opset 16)."""

    def forward(self, x, idx, src):
        y = x.clone()
        y.index_add_(1, idx, src)
        return x.index_add(0, idx, src.t(), alpha=0.5), y


class RuntimeFactories(nn.Module):
    """arange / linspace / eye sized by a dynamic axis (Range, EyeLike), and a write through a
    slice of a dynamic axis (its positions computed)."""

    def forward(self, x):
        n, m = x.size(0), x.size(1)
        a = x + torch.arange(m)
        b = torch.arange(1, n + 1, dtype=torch.float).unsqueeze(1) * x
        c = torch.arange(0.5, m, 1.5)
        d = torch.linspace(-1.0, 1.0, m) * x
        e = torch.eye(n) @ x
        f = torch.eye(n, m) + x
        y = x.clone()
        y[1:] = 0.5
        y[::2, 1] = -1.0
        return a, b, c, d, e, f, y


class PoolIndices(nn.Module):
    """max_pool with indices (1-d, 2-d with ceil_mode and padding, 3-d) and adaptive max
    pooling (global, and dividing sizes with indices)."""

    def forward(self, x):
        a, ai = F.max_pool2d(x, 3, 2, padding=1, ceil_mode=True, return_indices=True)
        b, bi = F.max_pool1d(x.flatten(2), 4, 3, return_indices=True)
        c, ci = F.max_pool3d(x.unsqueeze(1), 2, return_indices=True)
        d = F.adaptive_max_pool2d(x, 1)
        e, ei = F.adaptive_max_pool2d(x, (2, 5), return_indices=True)
        f = F.adaptive_max_pool1d(x.flatten(2), 4)
        return a, ai, b, bi, c, ci, d, e, ei, f


# ---- session 6: embedding_bag, sequences from split, lists in if, index_put with None, int bits --

class EmbeddingBags(nn.Module):
    """embedding_bag (torch.onnx: a Loop over the bags): bags by offsets (sum, mean, max, with
    per-sample weights, include_last_offset, padding_idx, an empty bag) and fixed-size bags of a
    2-d input."""

    def __init__(self):
        super().__init__()
        self.sum = nn.EmbeddingBag(10, 3, mode="sum")
        self.mean = nn.EmbeddingBag(10, 3, mode="mean", padding_idx=2)
        self.max = nn.EmbeddingBag(10, 3, mode="max")
        self.last = nn.EmbeddingBag(10, 3, mode="sum", include_last_offset=True)

    def forward(self, idx, offsets, w, idx2):
        return (self.sum(idx, offsets), self.sum(idx, offsets, per_sample_weights=w), self.mean(idx, offsets),
                self.max(idx, offsets), self.last(idx, offsets), self.mean(idx2), self.max(idx2))


class SplitSequences(nn.Module):
    """unbind / split / chunk along a dynamic axis used as lists: read in a loop, stacked, their
    length taken (SplitToSequence; the count is not known at export)."""

    def forward(self, x):
        acc = torch.zeros_like(x[0])
        for t in x.unbind(0):
            acc = acc + t * 2.0
        parts = x.split(2, 0)
        sums = [p.sum(0) for p in parts]
        chunks = torch.chunk(x, 3, 0)
        return acc, torch.stack(sums, 0), torch.cat(chunks, 0) * 2.0 + chunks[-1].sum(), x * float(len(parts) + len(chunks))


class ListsInIf(nn.Module):
    """Lists built inside If branches (of different lengths) and appended to under an if in a
    loop."""

    def forward(self, x):
        if bool(x.sum() > 0):
            l = [x, x * 2.0]
        else:
            l = [x * 3.0]
        outs: List[torch.Tensor] = []
        for i in range(x.size(0)):
            if bool(x[i].sum() > 0):
                outs.append(x[i])
            else:
                outs.append(-x[i] * 2.0)
        return torch.cat(l, 0), torch.stack(outs, 0)


class IndexPutNone(nn.Module):
    """Index writes that mix full slices with tensor indices (index_put with None entries):
    y[:, idx] = v, y[:, :, idx] += u, y[i, :, j] = 0, y[:, mask] = -1."""

    def forward(self, x, idx, mask):
        a = x.clone()
        a[:, idx] = x[:, :3] * 2.0
        b = x.clone()
        b[:, :, idx] += 1.0
        c = x.clone()
        c[idx % 4, :, idx] = 0.0
        d = x.clone()
        d[:, mask] = -1.0
        e = x.clone()
        e[1:, idx] = 5.0
        return a, b, c, d, e


class IntBitwise(nn.Module):
    """Bitwise ops on int tensors (BitwiseAnd / Or / Xor / Not: opset 18) and shifts."""

    def forward(self, a, b):
        return (a & b, a | b, a ^ b, ~a, torch.bitwise_and(a, 6), torch.bitwise_or(a, 1),
                torch.bitwise_xor(b, 3), torch.bitwise_not(b), a << 2, a >> 1, b << a.clamp(0, 3))


class TailTensorFacts(nn.Module):
    """The long tail, session 6: isinf / isfinite / log10; dim / numel / is_floating_point /
    `is None` / item (facts of a tensor); take, unsafe_split_with_sizes, nonzero_numpy and
    where(cond), unfold, diagonal, bucketize, masked_scatter, LSTMCell (lstm_cell), 3-d
    reflection and replication pads, aten::convolution."""

    def __init__(self):
        super().__init__()
        self.cell = nn.LSTMCell(4, 3)
        self.w = nn.Parameter(torch.randn(2, 3, 3, 3))

    def forward(self, x, y, idx, b: Optional[torch.Tensor] = None):
        r = y / x
        a = torch.isinf(r).float() + torch.isfinite(r).float() + torch.log10(x.abs() + 1.0)
        k = x * float(x.dim() + x.numel())
        if x.is_floating_point():
            k = k + 1.0
        if b is None:
            k = k * 2.0
        s = x * x[0, 0].item()
        t = torch.take(x, idx)
        p, q = torch.unsafe_split_with_sizes(x, [1, 3], 0)
        nz = torch.where(x > 0), torch.ops.aten.nonzero_numpy(x > 0.5)
        u = x.unfold(1, 2, 1), x.unfold(0, 3, 2)
        d = torch.diagonal(x, 1), torch.diagonal(x.unsqueeze(0), -1, 1, 2)
        bounds = torch.tensor([-1.0, 0.0, 0.5])
        bk = torch.bucketize(x, bounds), torch.bucketize(x, bounds, right=True, out_int32=True)
        ms = x.masked_scatter(x > 0, y * 10.0)
        h, c = self.cell(x, (x[:, :3], x[:, 1:]))
        v = x.reshape(1, 1, 2, 2, 4)
        pads = (torch.ops.aten.reflection_pad3d(v, [1, 1, 1, 1, 1, 0]),
                torch.ops.aten.replication_pad3d(v, [1, 0, 2, 1, 0, 1]))
        cv = torch.convolution(x.reshape(1, 1, 4, 4).expand(1, 3, 4, 4), self.w, None, [1, 1], [1, 1], [1, 1],
                               False, [0, 0], 1)
        return a, k, s, t, p, q, nz, u, d, bk, ms, h, c, pads, cv


class GridSample(nn.Module):
    """F.grid_sample (aten::grid_sampler; GridSample from opset 16): every mode and every
    padding mode, with and without align_corners, the grid reaching past [-1, 1]."""

    def forward(self, x, grid):
        return (F.grid_sample(x, grid, mode="bilinear", padding_mode="zeros", align_corners=False),
                F.grid_sample(x, grid, mode="bilinear", padding_mode="border", align_corners=True),
                F.grid_sample(x, grid, mode="bilinear", padding_mode="reflection", align_corners=True),
                F.grid_sample(x, grid, mode="nearest", padding_mode="reflection", align_corners=False),
                F.grid_sample(x, grid, mode="nearest", padding_mode="zeros", align_corners=True),
                F.grid_sample(x, grid, mode="bicubic", padding_mode="border", align_corners=False),
                F.grid_sample(x, grid, mode="bicubic", padding_mode="reflection", align_corners=True),
                F.grid_sample(x, grid, mode="bicubic", padding_mode="zeros", align_corners=False))


class Uniques(nn.Module):
    """torch.unique (aten::_unique2, sorted) with inverse and counts, and along a dim
    (aten::unique_dim); ONNX Unique."""

    def forward(self, x, m):
        u, inv, cnt = torch.unique(x, return_inverse=True, return_counts=True)
        v, vinv = torch.unique(m, dim=0, return_inverse=True)
        w, wcnt = torch.unique(m, dim=1, return_counts=True)
        return u, inv, cnt, v, vinv, w, wcnt, torch.unique(x.float() * 0.5)


class TailMath(nn.Module):
    """Traced (most have no interpreter kernel yet; the trace's types give the sizes): distances
    and norms, cross / tensordot / det, aminmax, nan_to_num, native_layer_norm, rrelu (eval),
    tensor_split, weight norm, F.unfold (im2col), circular padding, conv_tbc, hann_window,
    conjugation no-ops, fake quantization."""

    def __init__(self):
        super().__init__()
        self.wn = nn.utils.weight_norm(nn.Linear(5, 3))
        self.ln_w = nn.Parameter(torch.rand(5) + 0.5)
        self.ln_b = nn.Parameter(torch.randn(5))
        self.tbc_w = nn.Parameter(torch.randn(3, 5, 2))
        self.tbc_b = nn.Parameter(torch.randn(2))

    def forward(self, x, y, img):
        a3, b3 = x[:, :3], y[:, :3]
        dist = (F.cosine_similarity(x, y), F.cosine_similarity(x[:, None], y[None], dim=-1), F.pairwise_distance(x, y),
                F.pairwise_distance(x, y, p=1.0, keepdim=True), torch.cdist(x[None], y[None]),
                torch.cdist(x, y, p=1.0), torch.cross(a3, b3, dim=1), torch.linalg.cross(a3, b3))
        m = x[:, :4] @ y[:, :4].T + torch.eye(4) * 3.0
        norms = (torch.linalg.norm(x), torch.linalg.norm(x, 3.0, dim=1), torch.linalg.norm(x, "fro"),
                 torch.linalg.norm(x, float("inf")), torch.linalg.matrix_norm(x[None], ord=1),
                 torch.linalg.matrix_norm(x, ord=-float("inf"), keepdim=True), torch.linalg.det(m), torch.logdet(m))
        mn, mx = torch.aminmax(x)
        mn1, mx1 = torch.aminmax(x, dim=1, keepdim=True)
        bad = torch.log(x) + torch.sign(y) / torch.zeros_like(y)
        ln = torch.native_layer_norm(x, [5], self.ln_w, self.ln_b, 1e-5)
        t_tbc = torch.stack([x, y], 1)
        pieces = torch.tensor_split(x, 3, dim=1) + x.tensor_split([1, 4], dim=1) + torch.tensor_split(x, [3, 1])
        fq = (torch.fake_quantize_per_tensor_affine(x, 0.05, 10, 0, 255),
              torch.fake_quantize_per_channel_affine(x, torch.tensor([0.02, 0.05, 0.1, 0.03, 0.2]),
                                                     torch.tensor([0, 3, -5, 0, 1], dtype=torch.int32), 1, -128, 127))
        return (dist, norms, mn, mx, mn1, mx1, torch.nan_to_num(bad), torch.nan_to_num(bad, 1.0, 2.0, -3.0), ln,
                F.rrelu(x, 0.1, 0.3), pieces, self.wn(x), F.unfold(img, 3, padding=1, stride=2),
                F.unfold(img, (2, 3), dilation=(2, 1)), F.pad(img, (1, 2, 2, 1), mode="circular"),
                torch.conv_tbc(t_tbc, self.tbc_w, self.tbc_b, 1), torch.hann_window(8) * x[0, 0],
                torch.hann_window(7, periodic=False), x.resolve_conj().resolve_neg(), torch.conj_physical(y), fq)


class TailLosses(nn.Module):
    """Losses a model returns: cross entropy with class indices (weights, ignore_index,
    unbatched, per pixel) and with class probabilities (label smoothing), nll_loss (2-d and
    4-d), binary cross entropy with logits (weight, pos_weight), kl_div (batchmean, log target)."""

    def forward(self, logits, target, probs, pix, pix_target, z, zt):
        w = torch.tensor([1.0, 2.0, 0.5, 1.5])
        lp = F.log_softmax(logits, 1)
        return (F.cross_entropy(logits, target), F.cross_entropy(logits, target, weight=w, ignore_index=2),
                F.cross_entropy(logits, target, reduction="none"), F.cross_entropy(logits[0], target[0]),
                F.cross_entropy(logits, probs, label_smoothing=0.1), F.cross_entropy(logits, probs, weight=w, reduction="sum"),
                F.cross_entropy(pix, pix_target), F.nll_loss(lp, target, weight=w, reduction="sum"),
                F.nll_loss(F.log_softmax(pix, 1), pix_target, reduction="none"),
                F.binary_cross_entropy_with_logits(z, zt),
                F.binary_cross_entropy_with_logits(z, zt, weight=torch.tensor([0.3, 1.0, 0.7]), pos_weight=torch.tensor([1.0, 2.0, 0.5]),
                                                   reduction="none"),
                F.kl_div(lp, probs, reduction="batchmean"), F.kl_div(lp, lp * 0.5, reduction="sum", log_target=True),
                F.kl_div(lp, probs * (probs > 0.3), reduction="none"))


class TailLossesMore(nn.Module):
    """The pointwise losses (mse, l1, smooth_l1 with beta and beta 0, huber, soft margin,
    binary cross entropy with a weight, margin ranking, hinge embedding) at each reduction,
    and decomposed math: exp2, erfc, sinc (at 0 too), xlogy (0 where x is 0), expm1, frac,
    logit with and without eps, hypot, nansum, diff with prepend / append and of bools."""

    def forward(self, x, y, p, t, sign, nan_x, flags):
        out = []
        for red in ("none", "mean", "sum"):
            out += [F.mse_loss(x, y, reduction=red), F.l1_loss(x, y, reduction=red),
                    F.smooth_l1_loss(x, y, reduction=red, beta=0.6), F.smooth_l1_loss(x, y, reduction=red, beta=0.0),
                    F.huber_loss(x, y, reduction=red, delta=0.7), F.soft_margin_loss(x, sign, reduction=red),
                    F.binary_cross_entropy(p, t, reduction=red),
                    F.margin_ranking_loss(x, y, sign, 0.2, reduction=red),
                    F.hinge_embedding_loss(x, sign, 0.4, reduction=red)]
        out += [torch.exp2(x), torch.erfc(x), torch.sinc(x * (sign > 0)), torch.xlogy(x * (sign > 0), p),
                torch.xlogy(2.0, p), torch.special.xlogy(x, 3.0)]
        out += [torch.expm1(x), torch.frac(x * 3), torch.logit(p), torch.logit(x, 0.2), torch.hypot(x, y),
                torch.nansum(nan_x), torch.nansum(nan_x, 1, keepdim=True), torch.diff(x), torch.diff(x, 2, 0),
                torch.diff(x, 1, 1, y[:, :2], y[:, 1:]), torch.diff(flags)]
        return tuple(out)


class TailRandom(nn.Module):
    """Random ops in forms whose results do not depend on the draws (ONNX Runtime draws other
    numbers): a uniform draw is below 1, a normal draw times 0, Bernoulli of 0 and 1, a
    multinomial draw from one-hot rows."""

    def forward(self, x, onehot):
        u = torch.rand(3, 4)
        return ((u < 1.0) & (u >= 0.0), torch.rand_like(x) < 1.0, torch.randn_like(x) * 0.0 + x,
                torch.randn(2, 3) * 0.0, torch.normal(x, 0.0), torch.normal(x, torch.zeros_like(x)),
                torch.bernoulli((x > 0).float()), torch.bernoulli(x, 1.0), torch.bernoulli(x, 0.0),
                torch.multinomial(onehot, 1), torch.multinomial(onehot[0], 3, replacement=True))


class TransformerMasks(nn.Module):
    """PyTorch's fast paths with masks: encoder layers with a key padding mask
    (_transformer_encoder_layer_fwd, mask_type 1), attention with a key padding mask
    (_native_multi_head_attention) and with a float attention mask, and a causal bool mask
    (the slow path)."""

    def __init__(self):
        super().__init__()
        self.enc = nn.TransformerEncoder(nn.TransformerEncoderLayer(32, 4, 64, batch_first=True), 2,
                                         enable_nested_tensor=False)
        self.mha = nn.MultiheadAttention(32, 4, batch_first=True)

    def forward(self, x, pad):
        y = self.enc(x, src_key_padding_mask=pad)
        n = x.size(1)
        causal = torch.triu(torch.ones(n, n, dtype=torch.bool), 1)
        a, _ = self.mha(y, y, y, attn_mask=causal, need_weights=False)
        b, _ = self.mha(y, y, y, key_padding_mask=pad, need_weights=False)
        c, _ = self.mha(y, y, y, attn_mask=causal.float() * -2.0, need_weights=False)
        return a, b, c


# ---- spectral ---------------------------------------------------------------------------------

class Stft(nn.Module):
    """torch.stft with several parameter sets (ONNX's STFT from opset 17, a framed DFT as a Conv
    before): as torchaudio's Spectrogram calls it (centered with reflect padding, a Hann window
    shorter than n_fft, the complex result reshaped and |X|^2); 1-d, uncentered, normalized and
    two-sided through view_as_real; constant padding, the default hop and no window, the real
    and imaginary parts of the result; return_complex=False; and a window that is a model
    input (known at run time only)."""

    def __init__(self):
        super().__init__()
        self.register_buffer("hann", torch.hann_window(12))

    def forward(self, x, y, w):
        a = torch.stft(x, 16, hop_length=4, win_length=12, window=self.hann, center=True,
                       pad_mode="reflect", return_complex=True)
        a = a.reshape(2, 9, -1).abs().pow(2.0)
        b = torch.view_as_real(torch.stft(y, 10, hop_length=3, center=False, normalized=True,
                                          onesided=False, return_complex=True))
        c = torch.stft(x, 8, center=True, pad_mode="constant", return_complex=True)
        d = torch.stft(y, 12, hop_length=5, center=False, return_complex=False)
        e = torch.stft(y, 12, hop_length=5, win_length=10, window=w, center=False,
                       return_complex=True).abs()
        return a, b, c.real, c.imag, d, e


class RecurrentCells(nn.Module):
    """nn.GRUCell and nn.RNNCell, tanh and relu, with and without biases, batched and unbatched
    (aten::gru_cell / rnn_tanh_cell / rnn_relu_cell, decomposed as torch.onnx does)."""

    def __init__(self):
        super().__init__()
        self.gru = nn.GRUCell(4, 3)
        self.gru_nb = nn.GRUCell(4, 3, bias=False)
        self.tanh = nn.RNNCell(4, 3)
        self.relu = nn.RNNCell(4, 3, nonlinearity="relu", bias=False)

    def forward(self, x, h):
        g = self.gru(x, h)
        g2 = self.gru_nb(x, g)
        t = self.tanh(x, h)
        u = self.relu(x[0], h[0])
        steps = h
        for i in range(x.size(0)):
            steps = self.gru(x[i:i + 1].expand(h.size(0), 4), steps)
        return g, g2, t, u, steps, self.tanh(x)


class ConvSameResize(nn.Module):
    """Convolutions with string padding ("same" with an odd and an even total, "valid"; batched
    and unbatched;
    traced they record aten::_convolution_mode) and F.interpolate's trilinear / bicubic forms,
    by size (traced: the overloads without .vec) and by scale factor; nearest-exact; rounding of
    integer tensors (the tensor itself); adaptive max pooling to
    sizes that do not divide the input's (by slices)."""

    def __init__(self):
        super().__init__()
        self.same1 = nn.Conv1d(4, 6, 3, padding="same", dilation=2)
        self.same2 = nn.Conv2d(4, 3, (2, 3), padding="same")
        self.valid = nn.Conv2d(4, 2, 3, padding="valid")

    def forward(self, x1, img, vol):
        return (self.same1(x1), self.same2(img), self.valid(img), self.same1(x1[0]), self.valid(img[1]),
                F.interpolate(vol, size=(5, 6, 7), mode="trilinear", align_corners=True),
                F.interpolate(vol, size=(4, 7, 6), mode="trilinear", align_corners=False),
                F.interpolate(img, size=(9, 5), mode="bicubic", align_corners=False),
                F.interpolate(img, scale_factor=1.5, mode="bicubic", align_corners=True),
                F.adaptive_max_pool2d(img, (4, 3)), F.adaptive_max_pool1d(x1, 4), F.adaptive_max_pool3d(vol, (2, 3, 3)),
                F.interpolate(img, size=(9, 5), mode="nearest-exact"), F.interpolate(x1, scale_factor=1.7, mode="nearest-exact"),
                F.interpolate(vol, size=(2, 6, 3), mode="nearest-exact"),
                torch.floor((x1 * 3).long()), torch.ceil((x1 * 3).long()), torch.round((x1 * 3).long()),
                torch.trunc((x1 * 3).int()))


class FoldUnfold(nn.Module):
    """nn.Fold (aten::col2im, ONNX Col2Im from opset 18) of nn.Unfold's blocks, batched and
    not, with dilation, padding and stride."""

    def __init__(self):
        super().__init__()
        self.unfold = nn.Unfold(3, dilation=1, padding=1, stride=1)
        self.fold = nn.Fold((6, 6), 3, padding=1)
        self.fold2 = nn.Fold((7, 8), (2, 3), dilation=(2, 1), padding=(1, 0), stride=(2, 2))

    def forward(self, img, cols):
        return self.fold(self.unfold(img)), self.fold2(cols), self.fold(self.unfold(img[0]))


class ShuffleUnflatten(nn.Module):
    """nn.ChannelShuffle (aten::channel_shuffle) of 4-d and 3-d inputs and nn.Unflatten
    (aten::unflatten.int) with a -1 size, in the middle and at the end."""

    def __init__(self):
        super().__init__()
        self.cs = nn.ChannelShuffle(3)
        self.u1 = nn.Unflatten(1, (2, -1))
        self.u2 = nn.Unflatten(-1, (5, 1))

    def forward(self, img, seq):
        return self.cs(img), self.cs(seq), self.u1(seq), self.u2(seq)


class AntialiasResize(nn.Module):
    """F.interpolate(antialias=True) (aten::_upsample_{bilinear,bicubic}2d_aa.vec): shrinking by
    size and by scale factor, enlarging one dim while shrinking the other, align_corners. From
    opset 18 Resize(antialias=1); below it, and for align_corners, two MatMuls with the filter's
    weights."""

    def forward(self, x):
        return (F.interpolate(x, size=(7, 9), mode="bilinear", antialias=True),
                F.interpolate(x, size=(5, 30), mode="bicubic", antialias=True),
                F.interpolate(x, scale_factor=0.4, mode="bicubic", antialias=True),
                F.interpolate(x, size=(6, 4), mode="bilinear", align_corners=True, antialias=True))


class ConvTransposeOutputSize(nn.Module):
    """nn.ConvTranspose1d / 2d called with output_size= (a U-Net's decoder matching its skip
    connection): scripted, _output_padding's loops over the spatial dims unroll and fold for the
    example's sizes."""

    def __init__(self):
        super().__init__()
        self.down = nn.Conv2d(3, 4, 3, stride=2, padding=1)
        self.up = nn.ConvTranspose2d(4, 3, 3, stride=2, padding=1)
        self.up1 = nn.ConvTranspose1d(2, 2, 4, stride=3, padding=1, dilation=2)

    def forward(self, x, seq):
        return self.up(self.down(x), output_size=x.size()), self.up1(seq, output_size=[3 * seq.size(-1) + 4])


class ShiftListWrite(nn.Module):
    """Swin's shifted_window_attention: an int list copied from an attribute and one item
    written under a size test (`shift_size[i] = 0`), then read back as torch.roll's shifts."""

    def __init__(self):
        super().__init__()
        self.shift: List[int] = [2, 1]

    def forward(self, x):
        shift = self.shift.copy()
        if x.size(1) <= 4:
            shift[0] = 0
        if x.size(2) <= 4:
            shift[1] = 0
        return torch.roll(x, shifts=(shift[0], shift[1]), dims=(1, 2))


class EncoderNested(nn.Module):
    """nn.TransformerEncoder with its default enable_nested_tensor=True and a key padding mask:
    traced under no_grad it records the nested-tensor fast path (_nested_tensor_from_mask,
    the layers on the nested value, to_padded_tensor, whose dim 1 is the longest sequence)."""

    def __init__(self):
        super().__init__()
        self.enc = nn.TransformerEncoder(nn.TransformerEncoderLayer(16, 2, 32, batch_first=True), 2)

    def forward(self, x, pad):
        return self.enc(x, src_key_padding_mask=pad)


class PackedGruUnsorted(nn.Module):
    """A GRU over sequences packed with enforce_sorted=False (sorted and restored by index:
    the scripted PackedSequence.to(device) path)."""

    def __init__(self):
        super().__init__()
        self.gru = nn.GRU(3, 4, batch_first=True)

    def forward(self, x, lengths):
        p = nn.utils.rnn.pack_padded_sequence(x, lengths, batch_first=True, enforce_sorted=False)
        out, h = self.gru(p)
        y, _ = nn.utils.rnn.pad_packed_sequence(out, batch_first=True)
        return y, h


class TwoLevelUnet(nn.Module):
    """A U-Net with two levels: its skip connections take only sizes that are multiples of 4
    (the export's run on inputs grown by 1 along the dynamic axes fails; by 4 it runs)."""

    def __init__(self):
        super().__init__()
        self.d1 = nn.Conv2d(3, 4, 3, stride=2, padding=1)
        self.d2 = nn.Conv2d(4, 8, 3, stride=2, padding=1)
        self.u2 = nn.ConvTranspose2d(8, 4, 2, stride=2)
        self.u1 = nn.ConvTranspose2d(8, 4, 2, stride=2)
        self.out = nn.Conv2d(7, 2, 1)

    def forward(self, x):
        a = torch.relu(self.d1(x))
        b = torch.relu(self.d2(a))
        c = torch.cat([a, self.u2(b)], 1)
        return self.out(torch.cat([x, self.u1(c)], 1))


class HeadReshape(nn.Module):
    """HF BERT's and GPT-2's head split and merge: `x.size()[:-1] + (heads, head_dim)`, a list
    of sizes read at run time joined to a constant one (aten::add.t), then view."""

    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(16, 16)
        self.heads = 4
        self.head_dim = 4

    def forward(self, x):  # [B, T, 16]
        q = self.proj(x)
        q = q.view(q.size()[:-1] + (self.heads, self.head_dim)).permute(0, 2, 1, 3)
        a = (q @ q.transpose(-1, -2)).softmax(-1) @ q
        a = a.permute(0, 2, 1, 3).contiguous()
        return a.view(a.size()[:-2] + (self.heads * self.head_dim,))


class IndexAfterSlice(nn.Module):
    """Advanced indexing after full slices or with a slice between the index tensors, and a
    mask over two inner dims (PyTorch puts B where adjacent indexed dims were, else first)."""

    def forward(self, z, i, j, m):  # z [A, B, C, D]
        return z[:, i, j] * 2.0, z[i, :, j] + 1.0, z[:, m].sum(-1)


class ScatterReduceSums(nn.Module):
    """Graph networks' message aggregation without torch_scatter: scatter_reduce's sum, prod
    and mean, with and without the destination's own values (ScatterElements' reduction)."""

    def forward(self, x, idx, src):
        a = x.scatter_reduce(0, idx, src, "sum")
        b = x.scatter_reduce(0, idx, src, "prod", include_self=False)
        c = x.scatter_reduce(0, idx, src, "mean")
        d = x.scatter_reduce(1, (idx[:, :2] % 3).t().contiguous(), src.t()[:2].contiguous(), "mean",
                             include_self=False)
        return a, b, c, d


class ScatterReduceExtrema(nn.Module):
    """scatter_reduce's amax and amin (ScatterElements' max and min, from opset 18)."""

    def forward(self, x, idx, src):
        return (x.scatter_reduce(0, idx, src, "amax"),
                x.scatter_reduce(0, idx, src, "amin", include_self=False))


class SliceWriteRunTimeBounds(nn.Module):
    """Slice writes whose bounds are computed at run time: `out[1, :v.numel()] = v` and a
    window placed at an offset by another input's size (slice_scatter with run-time ends)."""

    def forward(self, x, v):
        out = torch.zeros(2, 10)
        out[1, :v.numel()] = v
        out[0, 2:2 + x.size(1)] = x[0]
        return out


class StackNegativeDims(nn.Module):
    """stack at negative dims of lists an op returns (unbind, chunk, meshgrid: YOLO's
    `torch.stack(torch.meshgrid(...), -1)`) and of 0-d tensors."""

    def forward(self, x):  # [B, 3, H, W]
        a = torch.stack(x.unbind(1), -1)
        b = torch.stack(x.chunk(3, 1), -2)
        gy, gx = torch.arange(x.size(2)), torch.arange(x.size(3))
        c = torch.stack(torch.meshgrid(gy, gx, indexing="ij"), -1).float()
        d = torch.stack([x.sum(), x.mean(), x.amax()], -1)
        return a, b, c, d


class ListOutputLoop(nn.Module):
    """A List[Tensor] built in a loop over a size and returned: an ONNX sequence output
    (export_oracle_test.cpp's SequenceOutputs, not in the tensor-output oracles)."""

    def forward(self, x) -> List[torch.Tensor]:
        outs: List[torch.Tensor] = []
        for i in range(x.size(0)):
            outs.append(x[i] * float(i + 1))
        return outs


class ChunkDynamic(nn.Module):
    """chunk unpacked into a fixed number of pieces along a dynamic axis (RAFT's
    `fmap1, fmap2 = torch.chunk(fmaps, 2, dim=0)` on the batch of two images), and along
    a static one; split_with_sizes by sizes read at run time."""

    def forward(self, x, y):
        a, b = torch.cat([x, y], 0).chunk(2, 0)
        p, q, r = x.chunk(3, 1)
        # split_with_sizes by sizes read at run time (per-image counts of a detection head).
        u, v = torch.cat([x, y * 2.0], 0).split([x.size(0), y.size(0)], 0)
        return a * b, p.sum(1) + q.sum(1) - r.sum(1), u - v


class DetectTransform(nn.Module):
    """torchvision's detection transform, traced: the longer side resized to max_size, then both
    padded to a multiple of 32, so the padding follows H and W only through their ratio (a
    square example and runs grown evenly all pad by 0); then the boxes over a score kept and
    flattened from dim 1 (none is kept: [0, 1, 4] flattened to [0, 4])."""

    def __init__(self):
        super().__init__()
        self.t = torchvision.models.detection.transform.GeneralizedRCNNTransform(
            64, 64, [0.5, 0.5, 0.5], [0.25, 0.25, 0.25])
        self.conv = nn.Conv2d(3, 4, 3, stride=2, padding=1)

    def forward(self, x):
        images, _ = self.t([x[0]])
        y = self.conv(images.tensors)
        boxes = y.permute(0, 2, 3, 1).reshape(-1, 1, 4)
        kept = torch.flatten(boxes[boxes[:, 0, 0] > 100.0], 1)
        return y, kept


class RoiAlignModule(nn.Module):
    """torchvision's RoIAlign with boxes as a tensor: scripted, roi_align checks
    `isinstance(boxes, (list, tuple))` on a Union it was compiled for (prim::isinstance)."""

    def __init__(self):
        super().__init__()
        self.r = torchvision.ops.RoIAlign((3, 3), 0.5, 2, aligned=True)

    def forward(self, x, boxes):
        return self.r(x, boxes)


class BatchedNms(nn.Module):
    """torchvision's batched_nms scripted: under 4000 box coordinates the coordinate trick,
    above them a loop over the classes (torch.unique, nms per class, index_put_ of a mask) that
    an example of 40 boxes never runs; the dynamic run's 1100 boxes take it."""

    def forward(self, boxes, scores, idxs):
        return torchvision.ops.batched_nms(boxes, scores, idxs, 0.5)


class InterpolateRunTimeScale(nn.Module):
    """d2go's preprocessing: the shorter side scaled to 32 by a factor computed from the sizes
    (`min(H, W)`, a float division), F.interpolate with recompute_scale_factor: floor(size *
    scale) of run-time floats, a list comprehension that repeats the scale under `scale_factor is
    not None`, output sizes appended to `[]`."""

    def forward(self, x):
        s = 32.0 / min(x.shape[-2], x.shape[-1])
        return F.interpolate(x, None, s, "bilinear", True, True)


class UntakenBranchTypes(nn.Module):
    """A branch that only other sizes take, so its facts are inferred, not observed: a Python
    float promoting an int64 tensor, a dtype argument, bool cumsum (int64), sqrt of integers
    (float), sum over dims [] (all of them)."""

    def forward(self, x):  # [N, 4]
        if x.shape[0] > 5:
            a = (x.to(torch.int64) + 0.5) * 2
            b = x.sum(1, dtype=torch.float64).float()
            c = (x > 0).cumsum(1).float()
            d = x.to(torch.int64).abs().sqrt()
            f = x.sum([])
            return a.sum(1) + b + c.sum(1) + d.sum(1) + f
        return x.sum(1)


class GridOffsets(nn.Module):
    """YOLO heads' cell grid: a meshgrid of aranges over the feature map's sizes, added to the
    decoded predictions."""

    def forward(self, p):  # [B, A, H, W, 2]
        ny, nx = p.shape[2], p.shape[3]
        yv, xv = torch.meshgrid(torch.arange(ny), torch.arange(nx), indexing="ij")
        grid = torch.stack((xv, yv), 2).view(1, 1, ny, nx, 2).float()
        return p.sigmoid() * 2.0 - 0.5 + grid


class PadToMultiple(nn.Module):
    """Swin's and U-Nets' padding to a multiple of the window, the amounts computed from the
    sizes; then a pad list copied from an attribute and written under a size test; and the sum
    of an int list (swin's `sum(shift_size) > 0`)."""

    def __init__(self):
        super().__init__()
        self.pads: List[int] = [1, 2, 0, 1]

    def forward(self, x):  # [B, H, W, C]
        h, w = x.shape[1], x.shape[2]
        y = F.pad(x, (0, 0, 0, (4 - w % 4) % 4, 0, (4 - h % 4) % 4))
        p = self.pads.copy()
        if x.size(2) <= 6:
            p[2] = 3
        z = F.pad(y.permute(0, 3, 1, 2), p, value=-1.0)
        return z * float(sum(p))


def main():
    os.makedirs(gen.OUT, exist_ok=True)
    torch.manual_seed(0)
    r = torch.randn
    both = ("scripted", "traced")
    w = gen.write_model
    dr = gen.dr
    w("slice_assign", SliceAssign(), [r(4, 5)], both, dyn=({0: [0]}, [dr(6, 5)]))
    w("rows_in_loop", RowsInLoop(), [r(3, 4)], ("scripted",), dynamic={0: [0]}, alt_inputs=[r(5, 4)],
      script_for_onnx=True)
    w("mask_assign", MaskAssign(), [r(4, 5)], both, dyn=({0: [0, 1]}, [dr(3, 7)]))
    w("index_accumulate", IndexAccumulate(), [r(6, 3), torch.tensor([0, 2, 5]), r(3, 3)], both)
    w("fill_zero", FillZero(), [r(5, 4)], both, dyn=({0: [0]}, [dr(7, 4)]))
    w("inplace_activations", InplaceActivations(), [r(1, 3, 8, 8)], both)
    w("view_alias", ViewAlias(), [r(3, 4)], both)
    w("transpose_inplace", TransposeInplace(), [r(3, 4)], both)
    w("copying_views", CopyingViews(), [r(3, 4), r(1, 3, 2, 2)], both)
    w("nested_copying_views", NestedCopyingViews(), [r(3, 4)], ("scripted",), dynamic={0: [0]},
      alt_inputs=[r(5, 4)], script_for_onnx=True)
    w("advanced_index", AdvancedIndex(), [r(5, 5), torch.tensor([4, 0, 2])], both)
    w("int_loop", IntLoop(), [r(3, 4)], ("scripted",), dynamic={0: [0]}, alt_inputs=[r(6, 4)],
      script_for_onnx=True)
    w("scalar_loop", ScalarLoop(), [r(3, 4)], ("scripted",), dynamic={0: [0]}, alt_inputs=[r(5, 4)],
      script_for_onnx=True)
    w("list_in_loop", ListInLoop(), [r(3, 4)], ("scripted",), dynamic={0: [0]}, alt_inputs=[r(5, 4)],
      script_for_onnx=True)
    w("list_writes", ListWrites(), [r(3, 4)], ("scripted",), dynamic={0: [0]}, alt_inputs=[r(5, 4)],
      script_for_onnx=True)
    w("as_strided", AsStrided(), [r(3, 4)], both)
    w("packed_sequences", PackedSequences().eval(), [r(3, 6, 3), torch.tensor([5, 2, 4])], ("traced",))
    w("einsum", Einsum(), [r(2, 3, 4), r(2, 4, 5)], both, dyn=({0: [0], 1: [0]}, [dr(3, 3, 4), dr(3, 4, 5)]))
    w("one_hot", OneHot(), [torch.tensor([[0, 5, 2], [1, 1, 3]])], both)
    w("div_modes", DivModes(), [r(3, 4) * 5, r(3, 4).abs() + 0.5], both)
    w("new_zeros", NewZeros(), [r(3, 4)], both, dyn=({0: [0, 1]}, [dr(5, 2)]))
    w("cast_long", CastLong(), [torch.rand(2, 5)], ("scripted",))
    w("zero_dim_constants", ZeroDimConstants(), [torch.tensor([[3, -2, 7], [0, 5, -9]]), r(2, 3)], ("traced",))
    w("tail_elementwise", TailElementwise(), [r(3, 4), r(3, 4).abs() + 0.5, torch.tensor([[-7, 5, 9], [4, -3, 8]])], both)
    w("tail_no_kernel", TailNoKernel(), [r(3, 4)], ("traced",))
    w("tail_reduce", TailReduce(), [r(4, 5)], both)
    w("tail_shape", TailShape(), [r(2, 3, 4), r(4)], ("scripted",))
    w("tail_search", TailSearch(), [r(4, 5), torch.tensor([[0, 2], [1, 4], [3, 3], [4, 0]])], both)
    w("scatter_add", ScatterAdd(), [r(3, 5), torch.tensor([[0, 2, 0], [1, 4, 1], [3, 3, 3]]), r(3, 3)], both,
      min_opset=16)
    w("tail_nn", TailNn(), [r(2, 4, 6, 6), r(1, 2, 6), r(6)], both)
    w("index_writes", IndexWrites(), [r(5, 4), torch.tensor([3, 0, 1]), r(3, 4)], both)
    w("index_add", IndexAdd(), [r(4, 4), torch.tensor([3, 0, 3, 1]), r(4, 4)], both, min_opset=16)
    w("pool_indices", PoolIndices(), [r(2, 3, 10, 10)], both)
    w("runtime_factories", RuntimeFactories(), [r(4, 6)], both, dyn=({0: [0, 1]}, [dr(6, 3)]))
    w("embedding_bags", EmbeddingBags(), [torch.tensor([1, 2, 4, 5, 4, 3, 2, 9]), torch.tensor([0, 3, 3, 5]),
                                          r(8), torch.tensor([[1, 2, 4], [4, 3, 9]])], both)
    w("split_sequences", SplitSequences(), [r(5, 4)], ("scripted",), dynamic={0: [0]}, alt_inputs=[r(8, 4)],
      script_for_onnx=True)
    w("lists_in_if", ListsInIf(), [r(3, 4)], ("scripted",), dynamic={0: [0]}, alt_inputs=[-r(5, 4).abs()],
      script_for_onnx=True)
    w("index_put_none", IndexPutNone(), [r(4, 5, 6), torch.tensor([4, 0, 2]),
                                         torch.tensor([True, False, True, True, False])], both)
    w("int_bitwise", IntBitwise(), [torch.tensor([[5, -3, 12], [7, 0, -8]]), torch.tensor([[3, 6, -1], [2, 9, 4]])],
      both, min_opset=18)
    facts_x = r(4, 4)
    facts_x[0, 1] = 0.0
    facts_y = r(4, 4)
    facts_y[0, 0] = 0.0
    w("tail_tensor_facts", TailTensorFacts(), [facts_x, facts_y, torch.tensor([0, 5, 15])], both)
    # Grid points at pixel centres and halfway (nearest rounds half to even) avoided: random.
    w("grid_sample", GridSample(), [r(2, 3, 5, 6), torch.rand(2, 4, 7, 2) * 2.6 - 1.3], both, min_opset=16)
    w("uniques", Uniques(), [torch.tensor([[3, 1, 2], [1, 5, 3]]), torch.tensor([[1, 2, 1], [0, 4, 0], [1, 2, 1]])],
      both)
    # PyTorch's fast paths, traced under no_grad: a small ViT (aten::_native_multi_head_attention)
    # and a batch-first TransformerEncoder (aten::_transformer_encoder_layer_fwd).
    vit = torchvision.models.VisionTransformer(image_size=32, patch_size=8, num_layers=2, num_heads=2,
                                               hidden_dim=32, mlp_dim=64, num_classes=10)
    # torchvision zero-initializes the head: the logits would be 0 whatever the encoder computed.
    nn.init.normal_(vit.heads.head.weight, std=0.2)
    w("vit_tiny", vit, [r(2, 3, 32, 32)], ("traced",), dyn=({0: [0]}, [dr(3, 3, 32, 32)]))
    # Scripted, the fast path's flags come through ifs (bench.py's bert_small / bert_like).
    enc = nn.TransformerEncoder(nn.TransformerEncoderLayer(32, 4, 64, batch_first=True), 2,
                                enable_nested_tensor=False)
    w("transformer_encoder_fast", enc, [r(2, 5, 32)], both, dyn=({0: [0, 1]}, [dr(3, 7, 32)]))
    w("tail_math", TailMath(), [r(4, 5), r(4, 5), r(1, 2, 6, 7)], ("traced",), min_opset=13)
    w("tail_losses", TailLosses(), [r(3, 4), torch.tensor([1, 0, 3]), torch.softmax(r(3, 4), 1), r(2, 4, 3, 3),
                                    torch.randint(0, 4, (2, 3, 3)), r(2, 3), torch.rand(2, 3)], ("traced",))
    onehot = torch.zeros(2, 5)
    onehot[0, 3] = 1.0
    onehot[1, 1] = 1.0
    w("tail_random", TailRandom(), [r(3, 4), onehot], ("traced",))
    nan_x = r(3, 4)
    nan_x[1, 2] = float("nan")
    w("tail_losses_more", TailLossesMore(), [r(3, 4), r(3, 4), torch.rand(3, 4) * 0.9 + 0.05, torch.rand(3, 4),
                                             torch.randn(3, 4).sign(), nan_x,
                                             torch.tensor([True, False, False, True])], ("traced",))
    pad = torch.tensor([[False] * 5, [False] * 3 + [True] * 2])
    w("transformer_masks", TransformerMasks(), [r(2, 5, 32), pad], both)
    w("mha_cross_attention", CrossAttention().eval(), [r(2, 3, 16), r(2, 4, 16)], both,
      dyn=({0: [0, 1], 1: [0, 1]}, [dr(3, 5, 16), dr(3, 2, 16)]))
    # Scripted, torch.stft's center padding builds its view shapes from list(x.size()), a list
    # computed at run time under dynamic lengths.
    w("stft", Stft(), [r(2, 64), r(50), torch.hann_window(10) + 0.1], both,
      dyn=({0: [1], 1: [0]}, [dr(2, 80), dr(61), torch.hann_window(10) + 0.1]))

    # (added last: the cases before keep their random inputs)
    w("numbers_in_loop", NumbersInLoop(), [r(3, 4)], ("scripted",), dynamic={0: [0]},
      alt_inputs=[r(5, 4)], script_for_onnx=True)
    w("list_output", ListOutput(), [r(3, 4)], ("scripted",), dynamic={0: [0]}, alt_inputs=[r(5, 4)],
      script_for_onnx=True)
    w("mha_weights", MhaWeights().eval(), [r(2, 3, 16)], ("scripted",), dyn=({0: [0, 1]}, [dr(4, 5, 16)]))
    w("mha_no_weights", MhaNoWeights().eval(), [r(2, 3, 16)], ("scripted",), dyn=({0: [0, 1]}, [dr(4, 5, 16)]))
    w("conv_same_resize", ConvSameResize(), [r(2, 4, 9), r(2, 4, 6, 6), r(1, 2, 3, 4, 5)], both)
    w("fold_unfold", FoldUnfold(), [r(2, 4, 6, 6), r(2, 12, 12)], both, min_opset=18)
    w("shuffle_unflatten", ShuffleUnflatten(), [r(2, 6, 3, 4), r(2, 6, 5)], both, dyn=({0: [0], 1: [0]}, [dr(3, 6, 3, 4), dr(4, 6, 5)]))
    w("recurrent_cells", RecurrentCells(), [r(2, 4), r(2, 3)], both, dyn=({0: [0], 1: [0]}, [dr(5, 4), dr(5, 3)]))
    w("antialias_resize", AntialiasResize(), [r(2, 3, 20, 24)], both)
    # Scripted with dynamic sizes, output_padding is a list computed at run time.
    w("conv_transpose_output_size", ConvTransposeOutputSize(), [r(1, 3, 9, 10), r(2, 2, 5)], both,
      dyn=({0: [0, 2, 3], 1: [0, 2]}, [dr(2, 3, 12, 7), dr(1, 2, 8)]))
    w("shift_list_write", ShiftListWrite(), [r(1, 4, 6, 3)], both, dyn=({0: [1, 2]}, [dr(1, 7, 3, 3)]))
    short = torch.tensor([[False] * 3 + [True] * 2, [False] * 2 + [True] * 3])
    full = torch.tensor([[False] * 5, [False] * 3 + [True] * 2])
    w("encoder_nested", EncoderNested().eval(), [r(2, 5, 16), full], ("traced",))
    w("encoder_nested_short", EncoderNested().eval(), [r(2, 5, 16), short], ("traced",))
    # The other call's longest length (4) is not the example's (5): the padded output follows it.
    w("unet_multiples", TwoLevelUnet().eval(), [r(1, 3, 8, 12)], both, dyn=({0: [0, 2, 3]}, [dr(2, 3, 16, 4)]))
    w("pad_to_multiple", PadToMultiple(), [r(1, 6, 7, 3)], both, dyn=({0: [0, 1, 2]}, [dr(2, 9, 5, 3)]))
    w("index_after_slice", IndexAfterSlice(), [r(3, 4, 5, 6), torch.tensor([0, 2, 1]),
      torch.tensor([[1, 4, 0]]), torch.rand(4, 5) > 0.5], both)
    sr_idx = torch.tensor([[0, 2, 1], [2, 2, 0], [0, 0, 0], [4, 2, 1]])  # row 3 of x never hit
    w("scatter_reduce_sums", ScatterReduceSums(), [r(5, 3), sr_idx, r(4, 3)], both, torch_onnx=False,
      min_opset=16)
    w("scatter_reduce_extrema", ScatterReduceExtrema(), [r(5, 3), sr_idx, r(4, 3)], both,
      torch_onnx=False, min_opset=18)
    w("slice_write_run_time_bounds", SliceWriteRunTimeBounds(), [r(1, 4), r(5)], both,
      dyn=({0: [1], 1: [0]}, [dr(1, 6), dr(3)]))
    w("stack_negative_dims", StackNegativeDims(), [r(1, 3, 4, 5)], both,
      dyn=({0: [0, 2, 3]}, [dr(2, 3, 6, 3)]))
    w("list_output_loop", ListOutputLoop(), [r(3, 4)], ("scripted",), dynamic={0: [0]},
      alt_inputs=[r(5, 4)], script_for_onnx=True, torch_onnx=False)
    w("chunk_dynamic", ChunkDynamic(), [r(2, 6), r(2, 6)], both,
      dyn=({0: [0], 1: [0]}, [dr(3, 6), dr(3, 6)]))
    w("head_reshape", HeadReshape().eval(), [r(2, 5, 16)], both, dyn=({0: [0, 1]}, [dr(3, 7, 16)]))
    # torchvision's Swin at a size where the last stage's shifted-window mask branch is not
    # taken (its 4x4 map fits one window); the dynamic run's 24x20 takes it.
    swin = torchvision.models.swin_transformer.SwinTransformer(
        patch_size=[2, 2], embed_dim=8, depths=[2, 2], num_heads=[1, 2], window_size=[4, 4],
        num_classes=5)
    w("swin_untaken_mask", swin.eval(), [r(1, 3, 16, 16)], ("scripted",), torch_onnx=False,
      dyn=({0: [0, 2, 3]}, [dr(2, 3, 24, 20)]))
    w("detect_transform", DetectTransform().eval(), [torch.rand(1, 3, 64, 64)], ("traced",),
      torch_onnx=False, dyn=({0: [2, 3]}, [torch.rand(1, 3, 72, 48)]))
    w("roi_align_module", RoiAlignModule(), [r(2, 4, 16, 16),
      torch.tensor([[0, 1.0, 2.0, 9.0, 10.0], [1, 0.5, 3.0, 12.0, 7.0]])], both, min_opset=16)
    w("grid_offsets", GridOffsets(), [r(1, 3, 4, 6, 2)], both, dyn=({0: [0, 2, 3]}, [dr(2, 3, 5, 3, 2)]))
    w("packed_gru_unsorted", PackedGruUnsorted().eval(), [r(3, 5, 3), torch.tensor([2, 5, 3])], ("scripted",),
      dyn=({0: [0, 1], 1: [0]}, [dr(4, 6, 3), torch.tensor([4, 1, 3, 2])]))

    def detections(n, classes):
        xy = torch.rand(n, 2) * 200
        return [torch.cat([xy, xy + torch.rand(n, 2) * 30 + 1], 1), torch.rand(n),
                torch.randint(0, classes, (n,))]
    w("batched_nms_loop", BatchedNms(), detections(40, 3), ("scripted",), torch_onnx=False,
      dyn=({0: [0], 1: [0], 2: [0]}, detections(1100, 5)))
    w("interpolate_run_time_scale", InterpolateRunTimeScale(), [torch.rand(1, 3, 20, 24)],
      ("scripted",), torch_onnx=False, dyn=({0: [2, 3]}, [torch.rand(1, 3, 30, 22)]))
    w("untaken_branch_types", UntakenBranchTypes(), [torch.randn(4, 4) * 3], ("scripted",),
      torch_onnx=False, dyn=({0: [0]}, [torch.randn(7, 4) * 3]))


if __name__ == "__main__":
    main()
