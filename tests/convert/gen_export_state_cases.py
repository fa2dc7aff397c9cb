"""Writes the module-state export cases (issue 14; convert/onnx/module_state.h): scripted modules
that keep state in attributes (prim::SetAttr), and the streaming archives silero_vad_v4 and
kws_crnn_streaming of ../shared/wild, each called twice in PyTorch on a fresh module.
tests/convert/export_oracle_test.cpp (StateExportOracle) exports each and runs it twice in ONNX
Runtime (tests/convert/run_ort_state.js), the second call fed the state outputs of the first.

Usage: gen_export_state_cases.py OUT_DIR

Each case folder holds model.pt, args.txt (the export command's literal arguments after the
tensors: silero's sample rate), meta.json (tolerances, the state attributes' paths) and, for
calls 1 and 2, callC/inK.npy (the method's tensor arguments), callC/outK.npy (its outputs,
flattened) and callC/state/PATH.npy (each state attribute after the call; a list of tensors
stacked on a new first axis).
"""
import json
import os
import sys
from typing import List

import numpy as np
import torch
import torch.nn as nn

HERE = os.path.dirname(os.path.abspath(__file__))
WILD = os.path.join(HERE, "..", "..", "..", "shared", "wild")


class TensorState(nn.Module):
    """A recurrent state written once per call (h <- tanh(W x + h))."""

    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 4)
        self.h = torch.zeros(1, 4)

    def forward(self, x):
        self.h = torch.tanh(self.lin(x) + self.h)
        return self.h * 2.0


class StateInBranchAndLoop(nn.Module):
    """Writes inside an if on data and inside a loop over the rows; a read after the writes;
    an in-place write through a view of the state; a counter (an int: each call starts from
    its value at export time, as module_state.h says) that the output does not use."""

    def __init__(self):
        super().__init__()
        self.acc = torch.ones(3)
        self.scale = torch.full((3,), 0.5)
        self.calls = 0

    def forward(self, x):
        if bool(x.sum() > 0):
            self.acc = self.acc + x[0]
        else:
            self.acc = self.acc - x[0]
        for i in range(x.size(0)):
            self.scale = self.scale * 0.9 + x[i].abs() * 0.1
        self.scale[0] = 1.0
        self.calls += 1
        return self.acc * self.scale


class ListState(nn.Module):
    """A window of the last frames kept as a list attribute (a streaming model's frame buffer):
    the oldest dropped, the new one appended, in a loop over the chunk's frames."""

    def __init__(self):
        super().__init__()
        self.frames: List[torch.Tensor] = [torch.zeros(1, 2) for _ in range(3)]

    def forward(self, x):
        out = torch.zeros(1, 2)
        for i in range(x.size(0)):
            self.frames = self.frames[1:]
            self.frames.append(x[i:i + 1] * float(i + 1))
            out = out + torch.stack(self.frames, 0).sum(0)
        return out


def attr(m, path):
    # Through the C++ module: `_c` (silero's cell state) is the Python wrapper's own name.
    m = m._c
    for name in path.split("."):
        m = m.getattr(name)
    return m


def state_value(m, path):
    v = attr(m, path)
    if isinstance(v, list):
        v = torch.stack(v, 0)
    return v.detach().numpy()


def flatten(x):
    if isinstance(x, (tuple, list)):
        return [y for e in x for y in flatten(e)]
    if isinstance(x, float):
        return [np.array(x, dtype=np.float32)]
    return [x.detach().numpy()]


def write_case(out_dir, name, model, calls, state, args=(), rtol=1e-4, atol=1e-5):
    d = os.path.join(out_dir, name)
    os.makedirs(d, exist_ok=True)
    if isinstance(model, str):
        m = torch.jit.load(model)
        m_ref = model
    else:
        m = torch.jit.script(model)
        m_ref = os.path.join(d, "model.pt")
        m.save(m_ref)
    if m_ref != os.path.join(d, "model.pt"):
        with open(m_ref, "rb") as f, open(os.path.join(d, "model.pt"), "wb") as g:
            g.write(f.read())
    m = torch.jit.load(os.path.join(d, "model.pt"))
    for c, inputs in enumerate(calls, 1):
        cd = os.path.join(d, "call%d" % c)
        os.makedirs(os.path.join(cd, "state"), exist_ok=True)
        for k, t in enumerate(inputs):
            np.save(os.path.join(cd, "in%d.npy" % k), t.numpy())
        with torch.no_grad():
            out = m(*inputs, *args)
        for k, o in enumerate(flatten(out)):
            np.save(os.path.join(cd, "out%d.npy" % k), o)
        for p in state:
            np.save(os.path.join(cd, "state", p + ".npy"), state_value(m, p))
    with open(os.path.join(d, "args.txt"), "w") as f:
        f.write(" ".join(str(a) for a in args))
    json.dump({"state": state, "rtol": rtol, "atol": atol},
              open(os.path.join(d, "meta.json"), "w"))


def main():
    out_dir = sys.argv[1]
    os.makedirs(out_dir, exist_ok=True)
    torch.manual_seed(0)
    write_case(out_dir, "tensor_state", TensorState(),
               [(torch.randn(1, 4),), (torch.randn(1, 4),)], ["h"])
    write_case(out_dir, "branch_loop_state", StateInBranchAndLoop(),
               [(torch.randn(5, 3) + 0.5,), (torch.randn(5, 3) - 0.5,)], ["acc", "scale"])
    write_case(out_dir, "list_state", ListState(),
               [(torch.randn(4, 2),), (torch.randn(4, 2),)], ["frames"])
    # silero_vad_v4: `_h`, `_c` start empty ([0]) and are [2, 1, 64] after the first call.
    vad = os.path.join(WILD, "silero_vad_v4")
    x = torch.from_numpy(np.load(os.path.join(vad, "in0.npy")))
    write_case(out_dir, "silero_vad_v4", os.path.join(vad, "model.pt"),
               [(x,), (torch.flip(x, [1]) * 0.5,)], ["_h", "_c"], args=(16000,))
    # kws_crnn_streaming: a MelSpectrogram (aten::stft), then a while loop over its frames
    # that keeps the last ones in `frame_buffer` (a list, stacked: [0] before the first call)
    # and runs a dynamic-quantized GRU (aten::quantized_gru) on each window from
    # `last_hidden_state`. Call 1 is the archive's own in0.npy on a fresh module: out0.npy.
    kws = os.path.join(WILD, "kws_crnn_streaming")
    x = torch.from_numpy(np.load(os.path.join(kws, "in0.npy")))
    write_case(out_dir, "kws_crnn_streaming", os.path.join(kws, "model.pt"),
               [(x,), (torch.flip(x, [1]) * 0.5,)], ["frame_buffer", "last_hidden_state"])
    got = np.load(os.path.join(out_dir, "kws_crnn_streaming", "call1", "out0.npy"))
    want = np.load(os.path.join(kws, "out0.npy"))
    assert abs(float(got) - float(want)) < 1e-6, (got, want)


if __name__ == "__main__":
    main()
