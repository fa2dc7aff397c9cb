"""Quantized oracle cases made by real PyTorch (issue 15).

Writes OUT/<case>/{model.pt, in0.npy, ..., out0.npy, ..., meta.json}. meta.json:
  compare: "exact"   integer outputs (int_repr) must be equal;
           "quantum" integer outputs may differ by 1 where PyTorch's own result depends on the
                     CPU's instruction set (its vector path dequantizes with an fma, its
                     activations use Sleef's exp); the case says which op;
           "float"   float outputs within rtol/atol.
  why: what the case checks.

Models are made as users make them (quant_models.py, shared with bench/quant_bench.py): eager
static quantization (fuse, prepare, calibrate, convert) and FX graph mode quantization with the
fbgemm or qnnpack default qconfig, torchvision's quantizable networks, quantize_dynamic for
Linear / LSTM / GRU, and scripted functions for the tensor ops. They return int_repr() of
quantized results so that the integers themselves are compared. PyTorch here runs its default quantized engine (onednn on Debian's
1.13 build; its integers for conv and linear are fbgemm's requantization).
"""
import json
import os
import sys

import numpy as np
import torch
import torch.ao.quantization as tq
import torch.nn as nn
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import quant_models as QM  # noqa: E402  (static_quantize, fx_quantize, torchvision_quantized ...)

torch.manual_seed(0)
OUT = sys.argv[1]
os.makedirs(OUT, exist_ok=True)


def logit_quantum(module):
    """The output scale of the module's last quantized Linear (the quantum of float logits that
    dequantize it), or None."""
    linears = [m for m in module.modules() if isinstance(m, torch.ao.nn.quantized.Linear) and
               not isinstance(m, torch.ao.nn.quantized.dynamic.Linear)]
    return float(linears[-1].scale) if linears else None


def save(name, module, inputs, compare, why, rtol=0.0, atol=0.0, trace=False):
    d = os.path.join(OUT, name)
    os.makedirs(d, exist_ok=True)
    for f in os.listdir(d):  # a re-run's case may have fewer inputs or outputs
        if f.endswith(".npy"):
            os.remove(os.path.join(d, f))
    quantum = logit_quantum(module)
    m = torch.jit.trace(module, tuple(inputs)) if trace else torch.jit.script(module)
    m.eval()
    path = os.path.join(d, "model.pt")
    m.save(path)
    m = torch.jit.load(path)
    with torch.no_grad():
        out = m(*inputs)
    outs = list(out) if isinstance(out, (tuple, list)) else [out]
    for i, x in enumerate(inputs):
        np.save(os.path.join(d, f"in{i}.npy"), x.numpy())
    for i, y in enumerate(outs):
        # a Python float is a 0-d float64 array, as `torchless run` writes it
        np.save(os.path.join(d, f"out{i}.npy"), y.numpy() if torch.is_tensor(y) else np.array(y))
    with open(os.path.join(d, "meta.json"), "w") as f:
        meta = {"compare": compare, "why": why, "rtol": rtol, "atol": atol}
        if quantum is not None and any(torch.is_tensor(y) and y.is_floating_point() for y in outs):
            meta["logit_quantum"] = quantum
        json.dump(meta, f, indent=1)


# ---- quantized tensors ------------------------------------------------------------------------

class PerTensor(nn.Module):
    def forward(self, x):
        a = torch.quantize_per_tensor(x, 0.0213, 131, torch.quint8)
        b = torch.quantize_per_tensor(x, 0.00214854861, -3, torch.qint8)
        c = torch.quantize_per_tensor(x, 0.001, 7, torch.qint32)
        # (scripted torch.tensor([float], dtype=torch.float64) rounds through float32 in
        # PyTorch 1.13, so the scales are returned as floats)
        z = torch.tensor([a.q_zero_point(), b.q_zero_point(), c.q_zero_point()])
        return (a.int_repr(), b.int_repr(), c.int_repr(), a.dequantize(), b.dequantize(),
                c.dequantize(), a.q_scale(), b.q_scale(), c.q_scale(), z)


class PerChannel(nn.Module):
    def forward(self, x):
        scales = torch.arange(1, 4, dtype=torch.float64) * 0.013
        zps = torch.tensor([0, -4, 9])
        q = torch.quantize_per_channel(x, scales, zps, 1, torch.qint8)
        u = torch.quantize_per_channel(x, scales, zps + 100, 1, torch.quint8)
        return (q.int_repr(), q.dequantize(), u.int_repr(), u.dequantize(),
                q.q_per_channel_scales(), q.q_per_channel_zero_points(),
                torch.tensor(q.q_per_channel_axis()))


x = torch.randn(4, 3, 5) * 3
x[0, 0, 0] = 0.0213 * 2.5  # a tie
# PyTorch converts to int64 before saturating: NaN, infinities and 1e30 give the lowest value,
# 3e9 the highest
x[1, 0, :5] = torch.tensor([float("nan"), float("inf"), -float("inf"), 1e30, 3e9])
save("tensor_per_tensor", PerTensor(), [x], "exact",
     "quantize_per_tensor quint8/qint8/qint32 (float reciprocal, round half to even), "
     "dequantize, int_repr, q_scale, q_zero_point")
save("tensor_per_channel", PerChannel(), [torch.randn(2, 3, 4) * 2], "exact",
     "quantize_per_channel qint8/quint8 along axis 1, dequantize, q_per_channel_*")


# ---- eager static quantization ----------------------------------------------------------------

def ir(t: torch.Tensor) -> torch.Tensor:
    """int_repr() of a quantized tensor (the float tensor itself while calibrating)."""
    return t.int_repr() if t.is_quantized else t


class ConvBnRelu(nn.Module):
    def __init__(self):
        super().__init__()
        self.quant = tq.QuantStub()
        self.conv = nn.Conv2d(3, 8, 3, stride=2, padding=1)
        self.bn = nn.BatchNorm2d(8)
        self.relu = nn.ReLU()
        self.conv2 = nn.Conv2d(8, 8, 3, padding=1, groups=4, bias=False)
        self.conv3 = nn.Conv2d(8, 6, 1)

    def forward(self, x):
        x = self.quant(x)
        a = self.relu(self.bn(self.conv(x)))
        b = self.conv2(a)
        c = self.conv3(b)
        return ir(a), ir(b), ir(c), c.dequantize()


m = ConvBnRelu()
with torch.no_grad():
    m.bn.running_mean.uniform_(-0.5, 0.5)
    m.bn.running_var.uniform_(0.5, 2.0)
calib = [torch.randn(2, 3, 17, 15) for _ in range(4)]
save("static_conv2d", QM.static_quantize(m, calib, [["conv", "bn", "relu"]]), [torch.randn(2, 3, 17, 15)],
     "exact", "quantized::conv2d_relu (fused conv+bn+relu), grouped conv2d without bias, 1x1 conv2d; "
     "per-channel qint8 weights, quint8 activations")


class Conv1d3d(nn.Module):
    def __init__(self):
        super().__init__()
        self.q1 = tq.QuantStub()
        self.q3 = tq.QuantStub()
        self.c1 = nn.Conv1d(4, 6, 5, stride=2, padding=2, dilation=1)
        self.r1 = nn.ReLU()
        self.c3 = nn.Conv3d(2, 4, 3, padding=(1, 0, 1), stride=(1, 2, 1))

    def forward(self, x, y):
        a = self.r1(self.c1(self.q1(x)))
        b = self.c3(self.q3(y))
        return ir(a), ir(b)


m = QM.static_quantize(Conv1d3d(), [(c, torch.randn(1, 2, 5, 9, 7)) for c in
                                      [torch.randn(2, 4, 23) for _ in range(3)]], [["c1", "r1"]])
save("static_conv1d_conv3d", m, [torch.randn(2, 4, 23), torch.randn(1, 2, 5, 9, 7)], "exact",
     "quantized::conv1d_relu and quantized::conv3d (per-channel weights)")


class LinearNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.quant = tq.QuantStub()
        self.fc1 = nn.Linear(20, 16)
        self.relu = nn.ReLU()
        self.fc2 = nn.Linear(16, 5)
        self.dequant = tq.DeQuantStub()

    def forward(self, x):
        x = self.quant(x)
        a = self.relu(self.fc1(x))
        b = self.fc2(a)
        return ir(a), ir(b), self.dequant(b)


save("static_linear", QM.static_quantize(LinearNet(), [torch.randn(6, 20) for _ in range(4)],
                                   [["fc1", "relu"]]),
     [torch.randn(6, 20)], "exact", "quantized::linear_relu and quantized::linear (per-channel weights)")


class Elementwise(nn.Module):
    def __init__(self):
        super().__init__()
        self.qa = tq.QuantStub()
        self.qb = tq.QuantStub()
        self.add = nn.quantized.FloatFunctional()
        self.add_relu = nn.quantized.FloatFunctional()
        self.mul = nn.quantized.FloatFunctional()
        self.cat = nn.quantized.FloatFunctional()

    def forward(self, a, b):
        a = self.qa(a)
        b = self.qb(b)
        s = self.add.add(a, b)
        r = self.add_relu.add_relu(a, b)
        p = self.mul.mul(a, b)
        c = self.cat.cat([a, b], 1)
        return ir(s), ir(r), ir(p), ir(c)


m = QM.static_quantize(Elementwise(), [(torch.randn(2, 3, 8, 8), torch.randn(2, 3, 8, 8) * 2) for _ in range(4)])
save("static_elementwise", m, [torch.randn(2, 3, 8, 8), torch.randn(2, 3, 8, 8) * 2], "quantum",
     "quantized::add / add_relu (PyTorch's vector path dequantizes with an fma: 1 quantum at "
     "ties), quantized::mul (exact), quantized::cat (requantized through float)")


class Pools(nn.Module):
    def __init__(self):
        super().__init__()
        self.quant = tq.QuantStub()

    def forward(self, x):
        x = self.quant(x)
        a = F.max_pool2d(x, 3, 2, 1)
        b = F.avg_pool2d(x, 3, 2, 1)
        c = F.avg_pool2d(x, 3, 2, 1, count_include_pad=False, ceil_mode=True)
        d = F.adaptive_avg_pool2d(x, (3, 4))
        e = F.interpolate(x, scale_factor=2.0, mode="nearest")
        f = torch.relu(x)
        g = F.max_pool1d(torch.flatten(x, 2), 4)
        return (ir(a), ir(b), ir(c), ir(d), ir(e), ir(f),
                ir(g))


save("static_pooling", QM.static_quantize(Pools(), [torch.randn(2, 3, 13, 11) for _ in range(3)]),
     [torch.randn(2, 3, 13, 11)], "quantum",
     "aten::max_pool2d / avg_pool2d (count_include_pad, ceil_mode) / adaptive_avg_pool2d / "
     "upsample_nearest2d / relu / max_pool1d on quantized tensors; adaptive_avg_pool2d of this "
     "contiguous input: PyTorch's NCHW kernel rounds sum / size, torchless its channels-last "
     "kernel's (sum - zp * size) / size + zp (1 quantum at ties)")


class Activations(nn.Module):
    def __init__(self):
        super().__init__()
        self.quant = tq.QuantStub()
        self.hs = nn.Hardswish()
        self.lrelu = nn.LeakyReLU(0.1)
        self.sig = nn.Sigmoid()
        self.bn = nn.BatchNorm2d(3)

    def forward(self, x):
        x = self.quant(x)
        return (ir(self.hs(x)), ir(self.lrelu(x)), ir(self.sig(x)),
                ir(self.bn(x)))


m = Activations()
with torch.no_grad():
    m.bn.running_mean.uniform_(-0.5, 0.5)
    m.bn.running_var.uniform_(0.5, 2.0)
    m.bn.weight.uniform_(0.5, 1.5)
save("static_activations", QM.static_quantize(m, [torch.randn(2, 3, 9, 9) * 2 for _ in range(3)]),
     [torch.randn(2, 3, 9, 9) * 2], "quantum",
     "quantized::hardswish, leaky_relu, aten::sigmoid on quint8, quantized::batch_norm2d "
     "(PyTorch's vector paths: fma dequantize, Sleef exp: 1 quantum at ties); traced, as the "
     "scripted quantized BatchNorm2d fails in PyTorch 1.13 itself", trace=True)


class Means(nn.Module):
    def forward(self, x):
        q = torch.quantize_per_tensor(x, 0.05, 10, torch.quint8)
        s = torch.quantize_per_tensor(x, 0.03, -5, torch.qint8)
        return (ir(q.mean([3])), ir(q.mean([2, 3], keepdim=True)), ir(q.mean([-1, -2])),
                ir(q.mean([1])), ir(q.mean([0, 2])), ir(q.mean()), ir(s.mean([3])),
                ir(q.transpose(2, 3).mean([3])))


save("quantized_mean", Means(), [torch.randn(2, 4, 5, 7) * 3], "exact",
     "aten::mean of quantized tensors: innermost dims of contiguous tensors sum integers "
     "(qmean_inner_dim_kernel), other dims and non-contiguous inputs go through float")


class NormsSoftmax(nn.Module):
    def forward(self, x, w, b, y):
        q = torch.quantize_per_tensor(x, 0.05, 10, torch.quint8)
        s = torch.quantize_per_tensor(x, 0.04, 3, torch.qint8)
        qy = torch.quantize_per_tensor(y, 0.07, 120, torch.quint8)
        return (ir(torch.ops.quantized.layer_norm(q, [40], w, b, 1e-5, 0.03, 128)),
                ir(torch.ops.quantized.layer_norm(s, [40], None, None, 1e-5, 0.02, 0)),
                ir(torch.ops.quantized.layer_norm(q, [3, 40], None, None, 1e-5, 0.02, 100)),
                ir(torch.ops.quantized.softmax(q, 2, 1.0 / 256, 0)),
                ir(torch.ops.quantized.elu(q, 0.04, 60, 1.0, 1.0, 1.0)),
                ir(torch.ops.quantized.celu(q, 0.04, 60, 0.5)),
                ir(torch.ops.quantized.matmul(q, qy, 0.4, 70)))


save("quantized_norm_softmax", NormsSoftmax(),
     [torch.randn(2, 3, 40) * 2, torch.rand(40) + 0.5, torch.randn(40) * 0.1, torch.randn(40, 6)],
     "quantum",
     "quantized::layer_norm (integer sums, float normalization; PyTorch's vector and tail paths "
     "round (q - zp) - mean and q - (mean - zp) apart: 1 quantum), softmax, elu, celu and "
     "matmul through float")


class Transposed(nn.Module):
    def __init__(self):
        super().__init__()
        self.quant = tq.QuantStub()
        self.t = nn.ConvTranspose2d(4, 3, 3, stride=2, padding=1)

    def forward(self, x):
        return ir(self.t(self.quant(x)))


m = QM.static_quantize(Transposed(), (torch.randn(1, 4, 6, 5) for _ in range(3)),
                       qconfig=tq.QConfig(activation=tq.default_observer, weight=tq.default_weight_observer))
save("static_conv_transpose2d", m, [torch.randn(1, 4, 6, 5)], "exact",
     "quantized::conv_transpose2d (per-tensor weights, stride 2; PyTorch's onednn engine takes no output_padding)")


# torchvision's quantizable resnet18 (random weights), fused and eager-static quantized as its
# documentation shows; small input to keep the fixture fast. Exported, its logits in ONNX Runtime
# are within one quantum of PyTorch's (QuantizedExportOracle).
r18 = QM.torchvision_quantized("resnet18", 64)
save("static_resnet18", r18, [torch.randn(1, 3, 64, 64)], "exact", why=
     "torchvision's quantizable resnet18, fused, eager static (fbgemm qconfig): the float logits "
     "after the last quantized linear")


# torchvision's quantizable mobilenet_v2 the same way (depthwise and pointwise int8 convs,
# quantized adds, relu6 folded into the convs by fuse_model): the case the engine's int8 layers
# (issue 15 part 6) run with depthwise convolutions.
mv2 = QM.torchvision_quantized("mobilenet_v2", 64)
save("static_mobilenet_v2", mv2, [torch.randn(1, 3, 64, 64)], "exact",
     "torchvision's quantizable mobilenet_v2, fused, eager static (fbgemm qconfig): the float "
     "logits after the last quantized linear")


# FX graph mode static quantization (prepare_fx / convert_fx, x86 default qconfig mapping) of a
# float model with functional relu / add / flatten, traced as FX makes it: quantize_per_tensor,
# quantized::conv2d_relu, quantized::add, quantized::linear and dequantize in one graph.
class FxNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3, padding=1)
        self.conv2 = nn.Conv2d(8, 8, 3, padding=1)
        self.fc = nn.Linear(8 * 4 * 4, 5)

    def forward(self, x):
        a = F.relu(self.conv(x))
        b = self.conv2(a) + a
        b = F.max_pool2d(b, 2)
        return self.fc(torch.flatten(b, 1))


torch.manual_seed(0)
fx = QM.fx_quantize(FxNet(), (torch.randn(2, 3, 8, 8),), (torch.randn(2, 3, 8, 8) for _ in range(3)))
save("fx_static", fx, [torch.randn(2, 3, 8, 8)], "exact",
     "FX graph mode static quantization (prepare_fx / convert_fx): conv2d_relu, add, max_pool2d, "
     "flatten, linear; float output after dequantize", trace=True)

# Eager static quantization with the qnnpack qconfig (per-tensor weights, no reduce_range), as
# mobile models ship; run (here and by PyTorch for the expected outputs) with the default engine.
m = ConvBnRelu()
with torch.no_grad():
    m.bn.running_mean.uniform_(-0.5, 0.5)
    m.bn.running_var.uniform_(0.5, 2.0)
m = QM.static_quantize(m, (torch.randn(2, 3, 17, 15) for _ in range(3)), [["conv", "bn", "relu"]], "qnnpack")
save("static_qnnpack_qconfig", m, [torch.randn(2, 3, 17, 15)], "exact",
     "eager static quantization with the qnnpack qconfig (per-tensor qint8 weights, full quint8 "
     "range): conv+bn+relu fused, grouped conv, 1x1 conv")


# The same kind of model converted with PyTorch's QNNPACK engine (as on ARM phones: weights
# prepacked by QNNPACK, serialized back from its packed form) and its expected integers from
# QNNPACK's own kernels, whose requantization PyTorch keeps apart from fbgemm's.
class QnnpackNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.quant = tq.QuantStub()
        self.conv = nn.Conv2d(3, 8, 3, stride=2, padding=1)
        self.relu = nn.ReLU()
        self.conv2 = nn.Conv2d(8, 8, 3, padding=1, groups=4)
        self.add = nn.quantized.FloatFunctional()
        self.fc = nn.Linear(8 * 9 * 8, 10)

    def forward(self, x):
        a = self.relu(self.conv(self.quant(x)))
        b = self.conv2(a)
        c = self.add.add(a, b)
        d = self.fc(torch.flatten(c, 1))
        return ir(a), ir(b), ir(c), ir(d)


engine = torch.backends.quantized.engine
torch.backends.quantized.engine = "qnnpack"
m = QM.static_quantize(QnnpackNet(), (torch.randn(2, 3, 17, 15) for _ in range(3)), [["conv", "relu"]],
                       "qnnpack")
save("static_qnnpack_engine", m, [torch.randn(2, 3, 17, 15)], "quantum",
     "eager static quantization under PyTorch's QNNPACK engine (qnnpack qconfig, QNNPACK's packed "
     "weights), PyTorch's integers from QNNPACK's kernels: conv2d_relu, grouped conv2d, add, linear "
     "(1 quantum: QNNPACK's kernels round apart from fbgemm's, PyTorch's default engine's integers "
     "differ from these by 1 at a few values of every output)")
torch.backends.quantized.engine = engine


# ---- dynamic quantization ---------------------------------------------------------------------

class DynLinear(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(24, 32)
        self.fc2 = nn.Linear(32, 7)

    def forward(self, x):
        return self.fc2(torch.relu(self.fc1(x)))


m = tq.quantize_dynamic(DynLinear().eval(), {nn.Linear}, dtype=torch.qint8)
save("dynamic_linear", m, [torch.randn(3, 5, 24)], "float",
     "quantized::linear_dynamic (int8, reduce_range as quantize_dynamic saves it)", 1e-5, 1e-5)
# fp16 dynamic quantization: PyTorch 1.13 here (onednn engine, no fbgemm) cannot pack fp16
# weights ("linear_prepack_fp16 is currently not supported by ONEDNN"), so no oracle case.


class DynRnn(nn.Module):
    def __init__(self, cls, **kw):
        super().__init__()
        self.rnn = cls(10, 16, **kw)

    def forward(self, x):
        y, h = self.rnn(x)
        return y, h


class DynLstm(nn.Module):
    def __init__(self):
        super().__init__()
        self.rnn = nn.LSTM(10, 16, num_layers=2, bidirectional=True)

    def forward(self, x):
        y, (h, c) = self.rnn(x)
        return y, h, c


m = tq.quantize_dynamic(DynLstm().eval(), {nn.LSTM}, dtype=torch.qint8)
save("dynamic_lstm", m, [torch.randn(6, 2, 10)], "float",
     "aten::quantized_lstm (2 layers, bidirectional, int8 dynamic cells)", 1e-4, 1e-4)
m = tq.quantize_dynamic(DynRnn(nn.GRU, batch_first=True).eval(), {nn.GRU}, dtype=torch.qint8)
save("dynamic_gru", m, [torch.randn(2, 7, 10)], "float",
     "aten::quantized_gru (batch_first, int8 dynamic cells)", 1e-4, 1e-4)


class DynGruStack(nn.Module):
    """Two bidirectional layers from a given h0 (its rows: layer 0 fw / bw, layer 1 fw / bw)."""

    def __init__(self):
        super().__init__()
        self.rnn = nn.GRU(10, 16, num_layers=2, bidirectional=True)

    def forward(self, x, h0):
        y, h = self.rnn(x, h0)
        return y, h


class DynRnnPacked(nn.Module):
    """pack_padded_sequence -> dynamic-quantized GRU / LSTM -> pad_packed_sequence: the .data
    overloads, whose input qparams PyTorch picks per step over the rows still running."""

    def __init__(self, cls):
        super().__init__()
        self.rnn = cls(10, 16, bidirectional=True)

    def forward(self, x, lengths):
        p = nn.utils.rnn.pack_padded_sequence(x, lengths)
        y, h = self.rnn(p)
        y, _ = nn.utils.rnn.pad_packed_sequence(y)
        return (y,) + (h if isinstance(h, tuple) else (h,))  # traced: the LSTM's (h, c) flat


m = tq.quantize_dynamic(DynGruStack().eval(), {nn.GRU}, dtype=torch.qint8)
save("dynamic_gru_stack", m, [torch.randn(6, 3, 10), torch.randn(4, 3, 16) * 0.5], "float",
     "aten::quantized_gru (2 layers, bidirectional, given h0)", 1e-4, 1e-4)
packed_in = [torch.randn(5, 3, 10), torch.tensor([5, 3, 2])]
m = tq.quantize_dynamic(DynRnnPacked(nn.GRU).eval(), {nn.GRU}, dtype=torch.qint8)
save("dynamic_gru_packed", m, packed_in, "float",
     "aten::quantized_gru.data (packed sequences of lengths 5, 3, 2; bidirectional)", 1e-4, 1e-4,
     trace=True)
m = tq.quantize_dynamic(DynRnnPacked(nn.LSTM).eval(), {nn.LSTM}, dtype=torch.qint8)
save("dynamic_lstm_packed", m, packed_in, "float",
     "aten::quantized_lstm.data (packed sequences of lengths 5, 3, 2; bidirectional)", 1e-4, 1e-4,
     trace=True)


# ---- quantized embedding bags ------------------------------------------------------------------

class EmbeddingBags(nn.Module):
    def forward(self, byte_w, nibble_w, idx, off, psw):
        a = torch.ops.quantized.embedding_bag_byte_rowwise_offsets(byte_w, idx, off, False, 0, False,
                                                                   None, None, False)
        b = torch.ops.quantized.embedding_bag_4bit_rowwise_offsets(nibble_w, idx, off, False, 1, False,
                                                                   None, None, True)
        c = torch.ops.quantized.embedding_bag_byte_rowwise_offsets(byte_w, idx, off, False, 0, False,
                                                                   psw, None, False)
        return a, b, c


ew = torch.randn(10, 8)
save("embedding_bag", EmbeddingBags(),
     [torch.ops.quantized.embedding_bag_byte_prepack(ew), torch.ops.quantized.embedding_bag_4bit_prepack(ew),
      torch.tensor([1, 3, 3, 7, 0, 9, 2]), torch.tensor([0, 2, 5]), torch.rand(7)],
     "float", "quantized::embedding_bag_byte / 4bit_rowwise_offsets (sum; mode 1 with "
     "include_last_offset, which PyTorch 1.13 without fbgemm sums too; per_sample_weights) over "
     "PyTorch's packed rows", 1e-6, 1e-6)


# ---- the d2go detector's quantized body on PyTorch's resized input ---------------------------
# ../shared/wild/d2go_detector resizes its image with a float bilinear interpolate before the
# quantized network; this case feeds the network (TracingAdapter.model: FBNet backbone, RPN,
# ROI heads, all static-quantized, plus torchvision::roi_align / nms) PyTorch's resized image,
# so that the quantized kernels are checked on a real detector apart from that resize.

wild = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "shared", "wild",
                    "d2go_detector")
if os.path.exists(os.path.join(wild, "model.pt")):
    import torchvision  # noqa: F401  (registers torchvision::nms / roi_align for torch.jit.load)

    d2go = torch.jit.load(os.path.join(wild, "model.pt"))
    img = torch.from_numpy(np.load(os.path.join(wild, "in0.npy")))
    x = torch.mul(torch.unsqueeze(img, 0), 255)
    x = F.interpolate(x, None, 320. / min(x.shape[-2:]), "bilinear", True, True)
    d = os.path.join(OUT, "d2go_body")
    os.makedirs(d, exist_ok=True)
    d2go.model.save(os.path.join(d, "model.pt"))
    body = torch.jit.load(os.path.join(d, "model.pt"))
    x0 = torch.select(x, 0, 0).contiguous()
    with torch.no_grad():
        outs = body(x0)
    np.save(os.path.join(d, "in0.npy"), x0.numpy())
    for i, y in enumerate(outs):
        np.save(os.path.join(d, f"out{i}.npy"), y.numpy())
    with open(os.path.join(d, "meta.json"), "w") as f:
        json.dump({"compare": "float", "rtol": 1e-4, "atol": 1e-4,
                   "why": "d2go's static-quantized FBNet detector (boxes, class indices, scores, "
                          "image size) on PyTorch's resized image"}, f, indent=1)


# ---- torchvision's detection ops (the d2go detector's nms and roi_align) ---------------------

class VisionOps(nn.Module):
    def forward(self, x, rois, boxes, scores):
        return (torch.ops.torchvision.roi_align(x, rois, 0.0625, 6, 6, 0, True),
                torch.ops.torchvision.roi_align(x, rois, 0.125, 3, 4, 2, False),
                torch.ops.torchvision.nms(boxes, scores, 0.5))


import torchvision  # noqa: E402,F401  (registers torchvision::nms / roi_align)

r = torch.rand(7, 4) * 300
r[:, 2:] += r[:, :2]
vb = torch.rand(50, 4) * 100
vb[:, 2:] += vb[:, :2] + 10
save("torchvision_ops", VisionOps(),
     [torch.randn(2, 4, 20, 25), torch.cat([torch.tensor([0, 1, 0, 1, 1, 0, 1.]).unsqueeze(1), r], 1), vb,
      torch.rand(50)], "float",
     "torchvision::roi_align (aligned with adaptive sampling, unaligned with 2 samples; rois partly "
     "outside the map) and torchvision::nms", 1e-5, 1e-5)


# ---- threshold ---------------------------------------------------------------------------------

class Threshold(nn.Module):
    def forward(self, x):
        q = torch.quantize_per_tensor(x, 0.05, 60, torch.quint8)
        s = torch.quantize_per_tensor(x, 0.03, -7, torch.qint8)
        # thresholds off the quantization grids: a dequantized value equal to the threshold
        # compares differently in PyTorch's vector body (fma dequantize) and its scalar tail
        # ((q - zp) * scale), i.e. by the element's position and the CPU's vector width
        return (torch.ops.quantized.threshold(q, 0.52, -1.0).int_repr(), F.threshold(q, 0.33, 2.0).int_repr(),
                torch.ops.quantized.threshold(s, -0.215, 0.25).int_repr())


save("quantized_threshold", Threshold(), [torch.randn(2, 3, 7, 5)], "quantum",
     "quantized::threshold and aten::threshold on quint8 / qint8 (the input's qparams out; PyTorch's "
     "vector path dequantizes with an fma, its scalar tail without: 1 quantum at ties)")


# ---- group / instance / layer norm, bilinear upsampling, hardsigmoid ---------------------------

class Norms(nn.Module):
    def forward(self, x, w, b, lw, lb):
        q = torch.quantize_per_tensor(x, 0.05, 10, torch.quint8)
        s = torch.quantize_per_tensor(x, 0.04, 3, torch.qint8)
        cl = q.contiguous(memory_format=torch.channels_last)
        return (ir(torch.ops.quantized.group_norm(q, 4, w, b, 1e-5, 0.03, 128)),
                ir(torch.ops.quantized.group_norm(cl, 4, w, b, 1e-5, 0.03, 128)),
                ir(torch.ops.quantized.group_norm(s, 2, None, None, 0.5, 0.02, 0)),
                ir(torch.ops.quantized.instance_norm(q, w, b, 1e-5, 0.04, 120)),
                ir(torch.ops.quantized.instance_norm(cl, None, b, 1.0, 0.04, 120)),
                # eps large against the variance: PyTorch adds it in real units
                ir(torch.ops.quantized.layer_norm(q, [7, 9], lw, lb, 1.0, 0.03, 128)))


save("quantized_norms", Norms(),
     [torch.randn(2, 8, 7, 9) * 2, torch.rand(8) + 0.5, torch.randn(8) * 0.3, torch.rand(7, 9) + 0.5,
      torch.randn(7, 9) * 0.1], "exact",
     "quantized::group_norm (NCHW, channels-last: PyTorch's NHWC kernel, qint8 without affine), "
     "instance_norm, layer_norm with eps 1.0 (eps in real units)")


class StaticNorms(nn.Module):
    def __init__(self):
        super().__init__()
        self.quant = tq.QuantStub()
        self.conv = nn.Conv2d(3, 8, 3, padding=1)
        self.gn = nn.GroupNorm(2, 8)
        self.inorm = nn.InstanceNorm2d(8, affine=True)
        self.ln = nn.LayerNorm([8, 6, 5])

    def forward(self, x):
        a = self.gn(self.conv(self.quant(x)))
        b = self.inorm(a)
        c = self.ln(b)
        return ir(a), ir(b), ir(c)


m = StaticNorms()
with torch.no_grad():
    m.gn.weight.uniform_(0.5, 1.5)
    m.inorm.bias.uniform_(-0.3, 0.3)
save("static_norms", QM.static_quantize(m, [torch.randn(2, 3, 6, 5) for _ in range(3)]),
     [torch.randn(2, 3, 6, 5)], "exact",
     "eager static nn.GroupNorm / InstanceNorm2d / LayerNorm after a quantized conv (its "
     "channels-last output: PyTorch's NHWC group norm kernel)")


# (sizes and scale factors in two modules: an archive with both F.interpolate specializations
# does not run in torchless yet, float or quantized)
class Bilinear(nn.Module):
    def forward(self, x, y):
        q = torch.quantize_per_tensor(x, 0.05, 10, torch.quint8)
        s = torch.quantize_per_tensor(y, 0.03, -2, torch.qint8)
        cl = torch.quantize_per_tensor(y, 0.05, 10, torch.quint8).contiguous(memory_format=torch.channels_last)
        return (ir(F.interpolate(q, size=(5, 13), mode="bilinear", align_corners=True)),
                ir(F.interpolate(q, size=(4, 5), mode="bilinear")),
                ir(F.interpolate(s, size=(9, 4), mode="bilinear")),
                ir(F.interpolate(cl, size=(11, 6), mode="bilinear", align_corners=True)),
                ir(F.interpolate(cl, size=(13, 9), mode="bilinear")),
                ir(F.interpolate(q, size=(7, 8), mode="bilinear")))


class BilinearScale(nn.Module):
    def forward(self, x, y):
        q = torch.quantize_per_tensor(x, 0.05, 10, torch.quint8)
        cl = torch.quantize_per_tensor(y, 0.05, 10, torch.quint8).contiguous(memory_format=torch.channels_last)
        return (ir(F.interpolate(q, scale_factor=2.0, mode="bilinear")),
                ir(F.interpolate(q, scale_factor=0.6, mode="bilinear")),
                ir(F.interpolate(cl, scale_factor=1.7, mode="bilinear")))


bilinear_in = [torch.randn(2, 3, 7, 8) * 2, torch.randn(1, 11, 6, 5) * 2]
why = ("aten::upsample_bilinear2d on quint8 / qint8 (NCHW: float source indices, no fma; channels-last "
       "with 11 channels: PyTorch's NHWC kernel, its vector body and scalar tail fused as x86 builds "
       "compile them)")
save("quantized_upsample_bilinear", Bilinear(), bilinear_in, "exact",
     why + ", align_corners, downsampling, equal sizes (a copy)")
save("quantized_upsample_bilinear_scale", BilinearScale(), bilinear_in, "exact",
     why + ", by scale factor (1 / scale as the ratio)")


class Hardsigmoid(nn.Module):
    def forward(self, x):
        q = torch.quantize_per_tensor(x, 0.05, 60, torch.quint8)
        s = torch.quantize_per_tensor(x, 0.04, -3, torch.qint8)
        c = torch.quantize_per_tensor(x, 0.05, 60, torch.quint8).contiguous(memory_format=torch.channels_last)
        F.hardtanh(c, 0.0, 3.0, inplace=True)
        r = s.clone()
        F.relu(r, inplace=True)
        return ir(F.hardsigmoid(q)), ir(F.hardsigmoid(s)), ir(c), ir(r)


save("quantized_hardsigmoid", Hardsigmoid(), [torch.randn(2, 5, 6, 7) * 3], "quantum",
     "aten::hardsigmoid on quint8 / qint8 (fixed output qparams; PyTorch's vector path "
     "dequantizes with an fma, its scalar tail without: 1 quantum at ties), in-place hardtanh_ "
     "on a channels-last tensor, relu_")


class ChannelsLast(nn.Module):
    """Quantized elementwise ops on a channels-last input, each result's integers and strides:
    PyTorch allocates their outputs in the input's suggest_memory_format (the first input's for
    add / mul, unless it is the broadcast one), and the ops after them pick kernels by layout."""

    def forward(self, x, b, y):
        q = torch.quantize_per_tensor(x, 0.05, 60, torch.quint8).contiguous(memory_format=torch.channels_last)
        qb = torch.quantize_per_tensor(b, 0.04, 50, torch.quint8)
        qy = torch.quantize_per_tensor(y, 0.05, 60, torch.quint8)
        outs = [torch.ops.quantized.hardswish(q, 0.04, 30), torch.sigmoid(q), F.hardsigmoid(q), torch.tanh(q),
                F.leaky_relu(q, 0.1), torch.ops.quantized.add(q, qb, 0.1, 60),
                torch.ops.quantized.add(qb, q, 0.1, 60), torch.ops.quantized.add_relu(q, qy, 0.1, 60),
                torch.ops.quantized.add(qy, q, 0.1, 60), torch.ops.quantized.mul(q, qb, 0.1, 60),
                torch.ops.quantized.add_scalar(q, 0.3), torch.ops.quantized.mul_scalar(q, 0.5),
                torch.ops.quantized.cat([q, q], 1, 0.07, 60), torch.cat([q, q], 1)]
        res = []
        for t in outs:
            res.append(ir(t))
            res.append(torch.tensor(t.stride()))
        # a layout-dependent op after one: a channels-last mean sums in another order
        res.append(ir(torch.sigmoid(q).mean([2, 3])))
        return res


save("quantized_channels_last", ChannelsLast(), [torch.randn(2, 5, 6, 7) * 3, torch.randn(1, 5, 1, 1),
                                                 torch.randn(2, 5, 6, 7)], "quantum",
     "quantized hardswish, sigmoid, hardsigmoid, tanh, leaky_relu, add / add_relu / mul (broadcast "
     "either way, mixed layouts), add_scalar, mul_scalar, cat of channels-last quint8: the integers "
     "(1 quantum: PyTorch's vector paths, fma dequantize and Sleef exp) and the strides of the results")


class Logits(nn.Module):
    """The logits of googlenet / inception_v3, whose scripted forward returns a named tuple with
    the (None) auxiliary outputs."""

    def __init__(self, m):
        super().__init__()
        self.m = m

    def forward(self, x):
        return self.m(x)[0]


# torchvision's other quantizable networks (eager static) and FX graph mode quantization of
# float torchvision networks, small inputs to keep the fixture fast: every op they save runs.
for name, backend, size, why in [
        ("mobilenet_v3_large", "fbgemm", 64, "hardswish, hardsigmoid, quantized::mul (squeeze-excite)"),
        ("shufflenet_v2_x0_5", "qnnpack", 64, "channel shuffle (view / transpose / contiguous), cat"),
        ("googlenet", "fbgemm", 64, "cat of branches, ceil-mode max pools"),
        ("inception_v3", "fbgemm", 80, "cat of branches, avg pools")]:
    m = QM.torchvision_quantized(name, size, backend=backend)
    save(f"static_{name}", Logits(m) if name in ("googlenet", "inception_v3") else m, [torch.randn(1, 3, size, size)],
         "exact", f"torchvision's quantizable {name}, fused, eager static ({backend} qconfig): {why}; the "
         "float logits after the last quantized linear")
for name, backend, why in [("mobilenet_v2", "fbgemm", "relu6 as in-place hardtanh_ on quantized tensors"),
                           ("mobilenet_v3_large", "qnnpack", "hardswish / hardsigmoid modules")]:
    save(f"fx_{name}_{backend}", QM.torchvision_fx_quantized(name, 64, backend=backend), [torch.randn(1, 3, 64, 64)],
         "exact", f"FX graph mode static quantization of torchvision's float {name} ({backend}): {why}",
         trace=True)


# ---- quantized operators without a kernel -----------------------------------------------------
# Three quantized operators torchless has no kernel for, each in another function: a submodule's
# forward, a helper method of a second submodule called inside an `if`, and a free function.
# `torchless run` must name all three in one error (issue 15 part 4); PyTorch is not asked to
# run it (its onednn engine has no quantized prelu), so there are no out*.npy.

class MissingA(nn.Module):
    def forward(self, q):
        return torch.ops.quantized.dropout(q, 0.1, 3, 0.5, False)


class MissingB(nn.Module):
    def helper(self, q):
        return torch.ops.quantized.mul_scalar_relu(q, 2.0)

    def forward(self, q):
        return self.helper(q)


def missing_prelu(q: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    return torch.ops.quantized.prelu(q, w, 0.1, 3)


class MissingOps(nn.Module):
    def __init__(self):
        super().__init__()
        self.a = MissingA()
        self.b = MissingB()

    def forward(self, x):
        q = torch.quantize_per_tensor(x, 0.1, 3, torch.quint8)
        y = self.a(q)
        if bool(x.sum() > 0):
            y = self.b(y)
        return missing_prelu(y, torch.ones(3)).dequantize()


for name, mod in [("missing_ops", torch.jit.script(MissingOps())),  # training mode: not frozen
                  ("missing_ops_eval", torch.jit.script(MissingOps().eval()))]:
    d = os.path.join(OUT, name)
    os.makedirs(d, exist_ok=True)
    mod.save(os.path.join(d, "model.pt"))
    np.save(os.path.join(d, "in0.npy"), torch.rand(1, 3, 4, 4).numpy())
    with open(os.path.join(d, "meta.json"), "w") as f:
        json.dump({"missing": ["quantized::dropout", "quantized::mul_scalar_relu", "quantized::prelu"],
                   "why": "three quantized operators without a kernel in three functions"}, f, indent=1)


# ---- printing ---------------------------------------------------------------------------------

with open(os.path.join(OUT, "print.txt"), "w") as f:
    q = torch.quantize_per_tensor(torch.tensor([[0.5, -1.25], [3.0, 0.1]]), 0.25, 3, torch.quint8)
    f.write(str(q) + "\n")
    q = torch.quantize_per_channel(torch.tensor([[1.0, 2.0], [3., 4.]]), torch.tensor([0.1, 0.2]),
                                   torch.tensor([0, 1]), 0, torch.qint8)
    f.write(str(q) + "\n")


# ---- rounding at ties (appended last: the cases above keep their random inputs) -----------------

class BilinearTies(nn.Module):
    def forward(self, x):
        a = torch.quantize_per_tensor(x, 0.05, 10, torch.quint8).contiguous(memory_format=torch.channels_last)
        b = torch.quantize_per_tensor(x, 0.04, -3, torch.qint8).contiguous(memory_format=torch.channels_last)
        return (ir(F.interpolate(a, size=(17, 12), mode="bilinear")),
                ir(F.interpolate(a, size=(9, 7), mode="bilinear")),
                ir(F.interpolate(b, size=(5, 13), mode="bilinear", align_corners=True)))


save("quantized_upsample_bilinear_ties", BilinearTies(), [torch.randn(2, 19, 9, 7) * 2], "exact",
     "aten::upsample_bilinear2d on channels-last quint8 / qint8 with 19 channels: PyTorch's NHWC "
     "kernel contracts its vector body (16 channels) and its scalar tail (3) into fused "
     "multiply-adds in two different shapes; ties of both, equal sizes interpolated")


def legacy_ties(n, lo, hi, reduce_range):
    """n floats in (lo, hi) whose dynamic quantization (the qparams of [lo, hi]) differs between
    fma(x, 1 / scale, zp) rounded once and round(x * (1 / scale)) + zp: inputs at those ties."""
    scale, zp = torch._choose_qparams_per_tensor(torch.tensor([lo, hi]), reduce_range)
    inv = np.float32(1) / np.float32(scale)
    found = []
    rng = np.random.default_rng(0)
    while len(found) < n:
        k = rng.integers(1, 120)
        # x near (k + 0.5 - zp) / inv, stepped by ulps
        x0 = np.float32((k + 0.5 - zp) / float(inv))
        for step in range(-4, 5):
            x = np.nextafter(x0, np.float32(np.inf if step > 0 else -np.inf), dtype=np.float32)
            for _ in range(abs(step) - 1):
                x = np.nextafter(x, np.float32(np.inf if step > 0 else -np.inf), dtype=np.float32)
            x = x0 if step == 0 else x
            if not (lo < x < hi):
                continue
            fused = np.float32(np.float64(x) * np.float64(inv) + zp)
            legacy = np.rint(fused)
            new = np.rint(np.float32(x * inv)) + zp
            if legacy != new:
                found.append(x)
    return np.array(found[:n], dtype=np.float32)


class DynLinearTies(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(64, 8)

    def forward(self, x):
        return self.fc(x)


x = torch.empty(4, 64)
x.view(-1)[:] = torch.from_numpy(np.resize(legacy_ties(64, -1.3, 2.1, True), 256))
x.view(-1)[0], x.view(-1)[1] = -1.3, 2.1
m = tq.quantize_dynamic(DynLinearTies().eval(), {nn.Linear}, dtype=torch.qint8)
save("dynamic_linear_ties", m, [x], "float",
     "quantized::linear_dynamic on inputs at ties of its input quantization: the installed "
     "PyTorch (oneDNN engine; fbgemm's QuantizeAvx2 alike) quantizes as fma(x, 1 / scale, zp), "
     "rounded once", 1e-6, 1e-6)

