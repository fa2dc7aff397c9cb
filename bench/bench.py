"""Latency of torchless against PyTorch and ONNX Runtime, measured in the same run.

Usage (from the repository root, after scripts/setup.sh):
    /usr/bin/python3 bench/bench.py [--runs 30] [--warmup 5] [--models resnet50,...]

For each model it writes build/bench/<model>.pt (random weights), <model>.onnx and input.npy,
then measures the median latency at batch 1 with 1 and 2 threads of:
  - PyTorch: torch.jit.load, then torch.jit.freeze and torch.jit.optimize_for_inference;
  - ONNX Runtime (npm onnxruntime-node, CPU, intra-op threads = N) on torch.onnx.export's file;
  - torchless: `torchless bench MODEL.pt input.npy --threads N --json`, on the saved archive, on
    the archive `torchless freeze MODEL.pt -o F.pt --optimize` writes (the whole pipeline without
    Python; the ratios use this column), and on the archive of torch.jit.freeze's module.
and writes bench/RESULTS.md with the machine, the command and the ratios (torchless / other;
below 1 means torchless is faster). A model torchless cannot run yet is listed with its error.
"""
import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import time

import numpy as np
import torch

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(ROOT, "build", "bench")
TORCHLESS = os.path.join(ROOT, "build", "bin", "torchless")
ARGS_TORCHLESS = [TORCHLESS]  # --torchless overrides
ORT_RUNNER = os.path.join(ROOT, "bench", "ort_bench.js")


def bert_like():
    class BertLike(torch.nn.Module):
        def __init__(self, vocab=30522, d=256, heads=4, layers=4, seq=128):
            super().__init__()
            self.tok = torch.nn.Embedding(vocab, d)
            self.pos = torch.nn.Embedding(seq, d)
            layer = torch.nn.TransformerEncoderLayer(d, heads, 4 * d, batch_first=True)
            self.encoder = torch.nn.TransformerEncoder(layer, layers)
            self.norm = torch.nn.LayerNorm(d)
            self.pool = torch.nn.Linear(d, d)

        def forward(self, ids: torch.Tensor) -> torch.Tensor:
            positions = torch.arange(ids.size(1)).unsqueeze(0)
            h = self.tok(ids) + self.pos(positions)
            h = self.norm(self.encoder(h))
            return torch.tanh(self.pool(h[:, 0]))

    return BertLike().eval(), torch.randint(0, 30522, (1, 128))


def make_model(name):
    import torchvision.models as tvm
    torch.manual_seed(0)
    if name == "bert_like":
        return bert_like()
    model = getattr(tvm, name)().eval()
    return model, torch.randn(1, 3, 224, 224)


def median_ms(fn, runs, warmup):
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(runs):
        t = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t) * 1000)
    return statistics.median(times)


def bench_pytorch(path, x, threads, runs, warmup):
    torch.set_num_threads(threads)
    m = torch.jit.optimize_for_inference(torch.jit.freeze(torch.jit.load(path).eval()))
    with torch.no_grad():
        return median_ms(lambda: m(x), runs, warmup)


def bench_ort(onnx_path, npy_path, threads, runs, warmup):
    r = subprocess.run(["node", ORT_RUNNER, onnx_path, npy_path, str(threads), str(runs), str(warmup)],
                       capture_output=True, text=True, cwd=ROOT)
    if r.returncode != 0:
        return None, r.stderr.strip().splitlines()[-1] if r.stderr.strip() else "failed"
    return json.loads(r.stdout)["median_ms"], None


def bench_torchless(path, npy_path, threads, runs, warmup):
    r = subprocess.run([ARGS_TORCHLESS[0], "bench", path, npy_path, "--threads", str(threads), "--runs", str(runs),
                        "--warmup", str(warmup), "--json"], capture_output=True, text=True)
    if r.returncode != 0:
        return None, (r.stderr.strip().splitlines() or ["failed"])[0]
    return json.loads(r.stdout)["median_ms"], None


def cpu_name():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=30)
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--models", default="resnet50,mobilenet_v2,efficientnet_b0,bert_like")
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--torchless", default=TORCHLESS, help="the torchless binary to measure")
    args = ap.parse_args()
    ARGS_TORCHLESS[0] = args.torchless
    os.makedirs(OUT, exist_ok=True)
    rows = []
    for name in args.models.split(","):
        model, x = make_model(name)
        pt_path = os.path.join(OUT, name + ".pt")
        onnx_path = os.path.join(OUT, name + ".onnx")
        npy_path = os.path.join(OUT, name + "_input.npy")
        with torch.no_grad():
            scripted = torch.jit.script(model) if name == "bert_like" else torch.jit.trace(model, x)
        scripted.save(pt_path)
        frozen_path = os.path.join(OUT, name + "_frozen.pt")
        torch.jit.freeze(torch.jit.load(pt_path).eval()).save(frozen_path)
        own_frozen_path = os.path.join(OUT, name + "_torchless_frozen.pt")
        r = subprocess.run([ARGS_TORCHLESS[0], "freeze", pt_path, "-o", own_frozen_path, "--optimize"],
                           capture_output=True, text=True)
        own_frozen_err = None if r.returncode == 0 else (r.stderr.strip().splitlines() or ["failed"])[0]
        np.save(npy_path, x.numpy())
        try:
            torch.onnx.export(model, (x,), onnx_path, opset_version=14, input_names=["input"])
        except Exception as e:  # noqa: BLE001 - recorded in the table
            onnx_path = None
            print(f"{name}: torch.onnx.export failed: {e}", file=sys.stderr)
        for threads in [int(t) for t in args.threads.split(",")]:
            pt = bench_pytorch(pt_path, x, threads, args.runs, args.warmup)
            ort, ort_err = bench_ort(onnx_path, npy_path, threads, args.runs, args.warmup) if onnx_path else (None, "export failed")
            tl, tl_err = bench_torchless(pt_path, npy_path, threads, args.runs, args.warmup)
            tlf, tlf_err = bench_torchless(frozen_path, npy_path, threads, args.runs, args.warmup)
            if own_frozen_err is None:
                tlo, tlo_err = bench_torchless(own_frozen_path, npy_path, threads, args.runs, args.warmup)
            else:
                tlo, tlo_err = None, "torchless freeze: " + own_frozen_err
            rows.append(dict(model=name, threads=threads, pytorch=pt, ort=ort, ort_err=ort_err, torchless=tl, tl_err=tl_err,
                             torchless_frozen=tlf, tlf_err=tlf_err, torchless_own=tlo, tlo_err=tlo_err))
            print(rows[-1], flush=True)
    write_results(rows, args)


def fmt(v):
    return "—" if v is None else f"{v:.2f}"


def ratio(a, b):
    return "—" if a is None or b is None else f"{a / b:.2f}"


def write_results(rows, args):
    lines = [
        "# Benchmark results",
        "",
        f"Machine: {cpu_name()}, {os.cpu_count()} cores; PyTorch {torch.__version__}; "
        f"measured {time.strftime('%Y-%m-%d')}.",
        "",
        f"Command: `/usr/bin/python3 bench/bench.py --runs {args.runs} --warmup {args.warmup} "
        f"--models {args.models} --threads {args.threads}"
        + ("" if args.torchless == TORCHLESS else f" --torchless {os.path.relpath(args.torchless, ROOT)}") + "`",
        "",
        "Median latency at batch 1 in milliseconds. Ratios are torchless / other: below 1 means "
        "torchless is faster. PyTorch runs the frozen, optimize_for_inference'd module; ONNX Runtime "
        "runs torch.onnx.export's file (opset 14). torchless runs the saved archive as loaded, the "
        "archive `torchless freeze --optimize` wrote from it (no Python anywhere; the ratios use this "
        "column), and the archive of torch.jit.freeze's module.",
        "",
        "| model | threads | PyTorch ms | ONNX Runtime ms | torchless ms (as loaded) | torchless ms (torchless freeze) | torchless ms (torch.jit.freeze) | vs PyTorch | vs ORT |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    notes = []
    for r in rows:
        best = r["torchless_own"] if r["torchless_own"] is not None else r["torchless"]
        lines.append(f"| {r['model']} | {r['threads']} | {fmt(r['pytorch'])} | {fmt(r['ort'])} | "
                     f"{fmt(r['torchless'])} | {fmt(r['torchless_own'])} | {fmt(r['torchless_frozen'])} | "
                     f"{ratio(best, r['pytorch'])} | {ratio(best, r['ort'])} |")
        if r["tl_err"]:
            notes.append(f"- {r['model']} ({r['threads']} threads): torchless failed: `{r['tl_err']}`")
        if r["tlf_err"]:
            notes.append(f"- {r['model']} ({r['threads']} threads): torchless (frozen archive) failed: `{r['tlf_err']}`")
        if r["tlo_err"]:
            notes.append(f"- {r['model']} ({r['threads']} threads): torchless (torchless freeze) failed: `{r['tlo_err']}`")
        if r["ort_err"]:
            notes.append(f"- {r['model']} ({r['threads']} threads): ONNX Runtime failed: `{r['ort_err']}`")
    if notes:
        lines += ["", "Failures:", ""] + sorted(set(notes))
    with open(os.path.join(ROOT, "bench", "RESULTS.md"), "w") as f:
        f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
