#!/usr/bin/env python3
"""Archives holding TorchBind objects, for the serialize TorchBind oracle (see extra.cmake).

Usage: gen_torchbind.py OUTDIR

Writes into OUTDIR (via a temporary folder renamed at the end):
  mobile.pt          optimize_for_mobile(script(M)): xnnpack Conv2dOpContext (with a clamp from
                     a fused ReLU / Hardtanh), TransposeConv2dOpContext, LinearOpContext in
                     CONSTANTS; mobile_in.npy and mobile_out0.npy, mobile_out1.npy (PyTorch's
                     outputs);
  quant_static.pt    eager static quantization (conv1d, conv2d, linear): packed params through
                     the modules' __setstate__ and quantized::*_prepack;
  quant_dynamic.pt   dynamic quantization (linear, GRU): LinearPackedParamsBase in data.pkl,
                     rnn.CellParamsBase holding packed params;
  crc_bad.pt         a small scripted module whose first tensor record has one byte flipped
                     (its CRC-32 no longer matches); crc_good_out.npy is the output before;
  manifest.json      per archive, what PyTorch sees: unpacked weights (int_repr bytes as a
                     checksum, scales, zero points), strides/paddings, and for mobile.pt the
                     context fields.
"""
import json
import os
import shutil
import struct
import sys
import zipfile

import numpy as np
import torch
import torch.nn as nn


def checksum(t: torch.Tensor) -> str:
    t = t.detach()
    if t.is_quantized:
        t = t.int_repr()
    b = t.contiguous().reshape(-1).view(torch.uint8).numpy().astype(np.uint64)
    w = (np.arange(b.size, dtype=np.uint64) % np.uint64(251)) + np.uint64(1)
    return str(int(np.sum(b * w, dtype=np.uint64)))


def tensor_info(t):
    if t is None:
        return None
    d = {"shape": list(t.shape), "dtype": str(t.dtype).replace("torch.", ""),
         "checksum": checksum(t)}
    if t.is_quantized:
        if t.qscheme() in (torch.per_tensor_affine, torch.per_tensor_symmetric):
            d["scale"] = t.q_scale()
            d["zero_point"] = t.q_zero_point()
        else:
            d["scales"] = t.q_per_channel_scales().tolist()
            d["zero_points"] = t.q_per_channel_zero_points().tolist()
            d["axis"] = t.q_per_channel_axis()
    return d


class Mobile(nn.Module):
    def __init__(self):
        super().__init__()
        self.c1 = nn.Conv2d(3, 8, (1, 7), stride=(1, 2), padding=(0, 3))
        self.c2 = nn.Conv2d(8, 8, 3, padding=1, groups=2)
        self.t = nn.ConvTranspose2d(8, 4, 3, stride=2, padding=1, output_padding=1)
        self.l1 = nn.Linear(8, 16)
        self.l2 = nn.Linear(16, 5)

    def forward(self, x):
        y = torch.relu(self.c1(x))
        y = torch.nn.functional.hardtanh(self.c2(y), 0.0, 6.0)
        z = self.t(y)
        h = torch.relu(self.l1(y.mean([2, 3])))
        return self.l2(h), z


class StaticQ(nn.Module):
    def __init__(self):
        super().__init__()
        self.quant = torch.quantization.QuantStub()
        self.conv = nn.Conv2d(2, 4, 3, stride=2, padding=1)
        self.conv1d = nn.Conv1d(4, 4, 3, padding=1)
        self.fc = nn.Linear(4, 3)
        self.dequant = torch.quantization.DeQuantStub()

    def forward(self, x):
        x = self.quant(x)
        x = self.conv(x)
        x = x.mean([3])
        x = self.conv1d(x)
        x = x.mean([2])
        x = self.fc(x)
        return self.dequant(x)


class DynQ(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(6, 4)
        self.gru = nn.GRU(4, 5, batch_first=True)

    def forward(self, x):
        y, h = self.gru(self.fc(x))
        return y


class Small(nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("w", torch.arange(8, dtype=torch.float32))

    def forward(self, x):
        return x + self.w


def flip_first_tensor_byte(src, dst):
    """Copies src to dst with one byte of the first data/ record flipped (CRC left as is)."""
    shutil.copy(src, dst)
    with zipfile.ZipFile(src) as z:
        info = next(i for i in z.infolist() if "/data/" in i.filename)
    with open(dst, "r+b") as f:
        f.seek(info.header_offset)
        hdr = f.read(30)
        name_len, extra_len = struct.unpack("<HH", hdr[26:30])
        pos = info.header_offset + 30 + name_len + extra_len
        f.seek(pos)
        b = f.read(1)
        f.seek(pos)
        f.write(bytes([b[0] ^ 0x40]))


def packed_conv_info(p):
    w, b = p.unpack()
    return {"weight": tensor_info(w), "bias": tensor_info(b), "stride": p.stride(),
            "padding": p.padding(), "dilation": p.dilation(), "groups": p.groups(),
            "transpose": bool(p.transpose())}


def main():
    out = sys.argv[1]
    tmp = out + ".tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    os.makedirs(tmp)
    torch.manual_seed(0)
    manifest = {"torch": torch.__version__}

    # ---- mobile (xnnpack contexts) ----
    from torch.utils.mobile_optimizer import optimize_for_mobile
    m = Mobile().eval()
    mob = optimize_for_mobile(torch.jit.script(m))
    mob.save(os.path.join(tmp, "mobile.pt"))
    x = torch.randn(2, 3, 6, 20)
    np.save(os.path.join(tmp, "mobile_in.npy"), x.numpy())
    mob2 = torch.jit.load(os.path.join(tmp, "mobile.pt"))
    y, z = mob2(x)
    np.save(os.path.join(tmp, "mobile_out0.npy"), y.detach().numpy())
    np.save(os.path.join(tmp, "mobile_out1.npy"), z.detach().numpy())
    manifest["mobile"] = {
        "code": mob2.code,
        "c1": {"weight": tensor_info(m.c1.weight), "stride": [1, 2], "padding": [0, 3]},
    }

    # ---- static quantization (conv2d, conv1d, linear) ----
    q = StaticQ().eval()
    q.qconfig = torch.quantization.get_default_qconfig("qnnpack")
    torch.backends.quantized.engine = "qnnpack"
    qp = torch.quantization.prepare(q)
    qp(torch.randn(4, 2, 8, 8))
    qc = torch.quantization.convert(qp)
    qs = torch.jit.script(qc)
    qs.save(os.path.join(tmp, "quant_static.pt"))
    ql = torch.jit.load(os.path.join(tmp, "quant_static.pt"))
    w, b = ql.fc._packed_params._packed_params.unpack()
    manifest["quant_static"] = {
        "conv": packed_conv_info(ql.conv._packed_params),
        "conv1d": packed_conv_info(ql.conv1d._packed_params),
        "conv1d_unpacked": tensor_info(torch.ops.quantized.conv1d_unpack(ql.conv1d._packed_params)[0]),
        "fc": {"weight": tensor_info(w), "bias": tensor_info(b)},
    }

    # ---- dynamic quantization (linear, GRU) ----
    d = torch.quantization.quantize_dynamic(DynQ().eval(), {nn.Linear, nn.GRU}, dtype=torch.qint8)
    ds = torch.jit.script(d)
    ds.save(os.path.join(tmp, "quant_dynamic.pt"))
    dl = torch.jit.load(os.path.join(tmp, "quant_dynamic.pt"))
    w, b = dl.fc._packed_params._packed_params.unpack()
    manifest["quant_dynamic"] = {"fc": {"weight": tensor_info(w), "bias": tensor_info(b)}}

    # ---- CRC ----
    s = torch.jit.script(Small())
    good = os.path.join(tmp, "crc_good.pt")
    s.save(good)
    flip_first_tensor_byte(good, os.path.join(tmp, "crc_bad.pt"))
    np.save(os.path.join(tmp, "crc_good_w.npy"), s.w.numpy())

    with open(os.path.join(tmp, "manifest.json"), "w") as f:
        json.dump(manifest, f, indent=1)
    shutil.rmtree(out, ignore_errors=True)
    os.rename(tmp, out)


if __name__ == "__main__":
    main()
