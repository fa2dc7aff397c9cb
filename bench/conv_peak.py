"""Achieved convolution GFLOP/s of torchless beside oneDNN's on the same shapes (issue 13, part 5).

Usage (from the repository root, after a Release build):
    /usr/bin/python3 bench/conv_peak.py [--models resnet50,mobilenet_v2,efficientnet_b0]
                                        [--batch 1] [--threads 1] [--runs 20]

For each torchvision model it lists every convolution's shape (forward hooks on a PyTorch run),
builds bench/conv_peak.cpp (oneDNN alone: f32 inference, NHWC activations, weights in
oneDNN's layout, bias; benchdnn's measurement) into build/bench/conv_peak, and times each
convolution there: the sum of their medians is what oneDNN needs for the model's convolutions
on this machine ("oneDNN peak"). Then it times torchless on the whole model (`torchless bench`
on bench.py's archive as PyTorch wrote it). Reported:
  - conv GFLOP: 2 * N * OC * OH * OW * C/g * KH * KW summed;
  - oneDNN GFLOP/s: conv GFLOP / the summed convolution medians;
  - torchless GFLOP/s: conv GFLOP / torchless's median for the whole model. The model also
    pools, adds and copies, so this is a lower bound of the rate its convolutions reach;
  - ratio: torchless GFLOP/s / oneDNN GFLOP/s (issue 13's target: at least 0.8 for resnet50).
"""
import argparse
import json
import os
import subprocess
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench  # noqa: E402  (the archives and inputs bench.py writes)

ROOT = bench.ROOT
PEAK = os.path.join(bench.OUT, "conv_peak")


def conv_shapes(name, batch):
    model, make_input, _ = bench.make_model(name)
    shapes = []

    def hook(m, inp, out):
        x = inp[0]
        shapes.append([x.shape[0], x.shape[1], x.shape[2], x.shape[3], m.out_channels, m.kernel_size[0],
                       m.kernel_size[1], m.stride[0], m.stride[1], m.padding[0], m.padding[1], m.groups,
                       m.dilation[0]])

    for m in model.modules():
        if isinstance(m, torch.nn.Conv2d):
            m.register_forward_hook(hook)
    with torch.no_grad():
        model(make_input(batch))
    return shapes


def build_peak():
    src = os.path.join(ROOT, "bench", "conv_peak.cpp")
    if not os.path.exists(PEAK) or os.path.getmtime(PEAK) < os.path.getmtime(src):
        os.makedirs(bench.OUT, exist_ok=True)
        subprocess.run(["g++", "-O2", "-std=c++17", src, "-o", PEAK, "-ldnnl"], check=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--models", default="resnet50,mobilenet_v2,efficientnet_b0")
    ap.add_argument("--batch", type=int, default=1)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--torchless", default=bench.TORCHLESS)
    args = ap.parse_args()
    build_peak()
    env = dict(os.environ, OMP_NUM_THREADS=str(args.threads))
    print("| model | batch | threads | convs | conv GFLOP | oneDNN conv ms (sum) | oneDNN GFLOP/s | "
          "torchless model ms | torchless GFLOP/s | ratio |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for name in args.models.split(","):
        shapes = conv_shapes(name, args.batch)
        r = subprocess.run([PEAK, str(args.runs)], input="\n".join(" ".join(map(str, s)) for s in shapes) + "\n",
                           capture_output=True, text=True, env=env, check=True)
        rows = [tuple(map(float, line.split())) for line in r.stdout.split("\n") if line.strip()]
        dnnl_ms = sum(ms for ms, _ in rows)
        gflop = sum(gf for _, gf in rows)
        p = bench.prepare(name, [args.batch], args.torchless, False)
        tl, _, err = bench.bench_torchless(args.torchless, p["pt"], p["inputs"][args.batch], args.threads,
                                           args.runs, 3)
        tl_s = "—" if tl is None else f"{tl:.2f}"
        tl_rate = "—" if tl is None else f"{gflop / (tl / 1000):.1f}"
        ratio = "—" if tl is None else f"{dnnl_ms / tl:.2f}"
        print(f"| {name} | {args.batch} | {args.threads} | {len(rows)} | {gflop:.2f} | {dnnl_ms:.2f} | "
              f"{gflop / (dnnl_ms / 1000):.1f} | {tl_s} | {tl_rate} | {ratio} |", flush=True)
        if err:
            print(f"torchless failed on {name}: {err}", file=sys.stderr)


if __name__ == "__main__":
    main()
