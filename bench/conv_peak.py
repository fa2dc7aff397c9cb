"""Achieved convolution GFLOP/s of torchless beside oneDNN's on the same shapes (issue 13, part 5).

Usage (from the repository root, after a Release build):
    /usr/bin/python3 bench/conv_peak.py [--models resnet50,mobilenet_v2,efficientnet_b0]
                                        [--batches 1,8] [--threads 1,2] [--runs 20]

For each torchvision model it lists every convolution's shape (forward hooks on a PyTorch run),
builds bench/conv_peak.cpp (oneDNN alone: f32 inference, NHWC activations, weights in
oneDNN's layout, bias; benchdnn's measurement) into build/bench/conv_peak, and times each
convolution there: the sum of their medians is what oneDNN needs for the model's convolutions
on this machine ("oneDNN peak"). Then it times torchless on the whole model (`torchless bench
--profile` on bench.py's archive as PyTorch wrote it) and sums, per timed call, the time of its
engine's Convolution layers (the profile's "layer" events; a layer there is a convolution with
its fused batch norm, residual sum and activation). Reported:
  - conv GFLOP: 2 * N * OC * OH * OW * C/g * KH * KW summed;
  - oneDNN GFLOP/s: conv GFLOP / the summed convolution medians;
  - torchless conv ms: its Convolution layers' time per call (median over the timed calls);
    torchless GFLOP/s: conv GFLOP / that;
  - ratio: torchless GFLOP/s / oneDNN GFLOP/s (issue 13's target: at least 0.8 summed over
    resnet50's convolutions). Above 1 is possible: torchless runs 3x3 convolutions by
    Winograd's algorithm (fewer multiplications) where the peak runs them direct;
  - torchless model ms: the whole model's median (profiled; pools, adds and copies included).
"""
import argparse
import bisect
import json
import os
import statistics
import subprocess
import sys
import tempfile

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


def torchless_conv_ms(exe, path, npy_path, threads, runs):
    """(median ms of the Convolution layers per timed call, their count per call, median ms of
    the whole call, error) from `torchless bench --profile`."""
    with tempfile.TemporaryDirectory() as d:
        trace = os.path.join(d, "trace.json")
        r = bench.run([exe, "bench", path, npy_path, "--threads", str(threads), "--runs", str(runs),
                       "--warmup", "3", "--profile", trace, "--json"])
        if r.returncode != 0:
            return None, 0, None, bench.first_line(r)
        with open(trace) as f:
            events = json.load(f)["traceEvents"]
    calls = sorted((e["ts"], e["ts"] + e["dur"]) for e in events if e.get("cat") == "call")
    per_call = [0.0] * len(calls)
    count = [0] * len(calls)
    for e in events:
        if e.get("cat") != "layer" or not e.get("args", {}).get("detail", "").startswith("Convolution"):
            continue
        i = bisect.bisect_right(calls, (e["ts"], float("inf"))) - 1
        if 0 <= i < len(calls) and e["ts"] + e["dur"] <= calls[i][1] + 1:
            per_call[i] += e["dur"] / 1000
            count[i] += 1
    if not calls or not count[0]:
        return None, 0, None, "the profile has no Convolution layers"
    return (statistics.median(per_call), count[0],
            statistics.median((b - a) / 1000 for a, b in calls), None)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--models", default="resnet50,mobilenet_v2,efficientnet_b0")
    ap.add_argument("--batches", default="1")
    ap.add_argument("--threads", default="1")
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--torchless", default=bench.TORCHLESS)
    args = ap.parse_args()
    build_peak()
    print("| model | batch | threads | convs | conv GFLOP | oneDNN conv ms (sum) | oneDNN GFLOP/s | "
          "torchless conv ms | torchless conv GFLOP/s | ratio | torchless model ms |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    batches = [int(b) for b in args.batches.split(",")]
    for name in args.models.split(","):
        p = bench.prepare(name, batches, args.torchless, False)
        for batch in batches:
            shapes = conv_shapes(name, batch)
            for threads in [int(t) for t in args.threads.split(",")]:
                env = dict(os.environ, OMP_NUM_THREADS=str(threads))
                r = subprocess.run([PEAK, str(args.runs)],
                                   input="\n".join(" ".join(map(str, s)) for s in shapes) + "\n",
                                   capture_output=True, text=True, env=env, check=True)
                rows = [tuple(map(float, line.split())) for line in r.stdout.split("\n") if line.strip()]
                dnnl_ms = sum(ms for ms, _ in rows)
                gflop = sum(gf for _, gf in rows)
                conv_ms, n_conv, model_ms, err = torchless_conv_ms(
                    args.torchless, p["pt"], p["inputs"][batch], threads, args.runs)
                if err:
                    print(f"torchless failed on {name}: {err}", file=sys.stderr)
                    conv_s = rate = ratio = model_s = "—"
                else:
                    conv_s = f"{conv_ms:.2f} ({n_conv} layers)"
                    rate = f"{gflop / (conv_ms / 1000):.1f}"
                    ratio = f"{dnnl_ms / conv_ms:.2f}"
                    model_s = f"{model_ms:.2f}"
                print(f"| {name} | {batch} | {threads} | {len(rows)} | {gflop:.2f} | {dnnl_ms:.2f} | "
                      f"{gflop / (dnnl_ms / 1000):.1f} | {conv_s} | {rate} | {ratio} | {model_s} |", flush=True)


if __name__ == "__main__":
    main()
