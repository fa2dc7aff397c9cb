#!/usr/bin/python3
"""Issue 14's done-when check on real archives (not run in CI: it takes minutes): for each
archive of ../shared/wild (or the folders given), whether torch.onnx 1.13 exports it (opset 17)
and whether `torchless export` does and ONNX Runtime then matches PyTorch's recorded outputs.
Prints one line per archive and, last, the archives torch.onnx exports and torchless does not.

Usage: scripts/onnx_wild_check.py TORCHLESS_BIN [ARCHIVE_DIR ...]
"""
import io
import json
import os
import subprocess
import sys
import tempfile

import numpy as np
import torch
import torchvision  # noqa: F401  (registers torchvision::nms / roi_align for torch.jit.load)

HERE = os.path.dirname(os.path.abspath(__file__))
RUN_ORT = os.path.join(HERE, "..", "tests", "convert", "run_ort.js")


def list_input(meta):
    # d2go_detector's forward takes List[Tensor] (its meta's notes say so).
    return "List[Tensor] in" in meta.get("notes", "")


def torch_onnx(d, meta):
    args = []
    for i, s in enumerate(meta["input_shapes"]):
        if isinstance(s, str) and s.startswith("tensor"):
            t = torch.from_numpy(np.load(os.path.join(d, "in%d.npy" % i)))
            args.append([t] if list_input(meta) else t)
        else:
            args.append(json.loads(s) if isinstance(s, str) else s)
    try:
        # tiny_nerf_traced's tensors were saved on cuda:0.
        m = torch.jit.load(os.path.join(d, "model.pt"), map_location="cpu")
        m.eval()
        try:
            torch.onnx.export(m, tuple(args), io.BytesIO(), opset_version=17)
        except RuntimeError as e:
            # tchrs_foo4's forward takes its three numbers as one Tuple[float, float, int].
            if "expected at most 2 argument" not in str(e):
                raise
            torch.onnx.export(m, (tuple(args),), io.BytesIO(), opset_version=17)
        return "ok"
    except Exception as e:  # noqa: BLE001  (any refusal is a result here)
        return "refused: " + (str(e).strip().splitlines() or [type(e).__name__])[0][:160]


def ours(binary, d, meta, out_dir):
    ins = []
    n = 0
    while os.path.exists(os.path.join(d, "in%d.npy" % n)):
        ins.append(os.path.join(d, "in%d.npy" % n))
        n += 1
    if list_input(meta):
        ins = ["@list:" + ",".join(ins)]
    # Non-tensor arguments (silero_vad_v4's sample rate, tchrs_foo4's numbers) as literals.
    ins += [s for s in meta["input_shapes"] if isinstance(s, str) and not s.startswith("tensor")]
    out = os.path.join(out_dir, os.path.basename(d) + ".onnx")
    p = subprocess.run([binary, "export", os.path.join(d, "model.pt")] + ins + ["-o", out],
                       capture_output=True, text=True, timeout=600)
    if not os.path.exists(out):
        return "refused: " + (p.stderr.strip().splitlines() or ["?"])[0][:160]
    r = subprocess.run(["node", RUN_ORT, out, d, str(n), "1e-4", "1e-4"], capture_output=True, text=True)
    try:
        res = json.loads(r.stdout)
    except ValueError:
        return "ORT failed: " + r.stderr[:160]
    return "ok" if res.get("ok") else "mismatch: " + json.dumps(res)[:160]


def main():
    binary = sys.argv[1]
    dirs = sys.argv[2:] or sorted(os.path.join(HERE, "..", "..", "shared", "wild", x)
                                  for x in os.listdir(os.path.join(HERE, "..", "..", "shared", "wild")))
    behind = []
    with tempfile.TemporaryDirectory() as tmp:
        for d in dirs:
            if not os.path.exists(os.path.join(d, "meta.json")):
                continue
            meta = json.load(open(os.path.join(d, "meta.json")))
            theirs, mine = torch_onnx(d, meta), ours(binary, d, meta, tmp)
            print("%-24s torch.onnx: %-40.40s torchless: %s" % (os.path.basename(d), theirs, mine), flush=True)
            if theirs == "ok" and mine != "ok":
                behind.append(os.path.basename(d))
    print("torch.onnx exports, torchless does not:", " ".join(behind) or "(none)")
    return 1 if behind else 0


if __name__ == "__main__":
    sys.exit(main())
