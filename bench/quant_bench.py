"""Quantized models (issue 15 part 7): eager static quantization of torchvision's quantizable
resnet18 and mobilenet_v2 (random weights, calibrated on random inputs), timed in PyTorch, in
torchless (`torchless bench` on the archive PyTorch wrote) and in ONNX Runtime on
`torchless export`'s QDQ file. Appends a section to bench/RESULTS.md with --append.

Usage: /usr/bin/python3 bench/quant_bench.py [--runs 10] [--warmup 3] [--threads 1,2] [--append]

PyTorch here is Debian's 1.13 build: no fbgemm, its quantized engine is onednn (x86).
"""
import argparse
import os
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench as B  # noqa: E402  (run, median_ms, bench_ort, bench_torchless, cpu_name)

sys.path.insert(0, os.path.join(B.ROOT, "tests", "api"))
import quant_models as QM  # noqa: E402  (the models api.gen_quantized makes, at 224x224)

OUT = os.path.join(B.ROOT, "build", "bench_quant")


def make(name):
    """torchvision's quantizable `name`, fused, eager static (fbgemm qconfig), calibrated on four
    random [2, 3, 224, 224] batches; scripted."""
    return torch.jit.script(QM.torchvision_quantized(name, 224, batches=4))


def bench_pytorch(path, x, threads, runs, warmup):
    torch.set_num_threads(threads)
    m = torch.jit.load(path).eval()
    try:
        m = torch.jit.freeze(m)
    except Exception:  # noqa: BLE001 - the module as loaded then
        pass
    with torch.no_grad():
        return B.median_ms(lambda: m(x), runs, warmup)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--models", default="resnet18,mobilenet_v2")
    ap.add_argument("--exe", default=os.path.join(B.ROOT, "build", "bin", "torchless"))
    ap.add_argument("--append", action="store_true", help="append the table to bench/RESULTS.md")
    args = ap.parse_args()
    os.makedirs(OUT, exist_ok=True)
    rows = []
    for name in args.models.split(","):
        path = os.path.join(OUT, f"{name}_qstatic.pt")
        make(name).save(path)
        x = torch.randn(1, 3, 224, 224)
        npy = os.path.join(OUT, f"{name}_in.npy")
        np.save(npy, x.numpy())
        onnx_path = os.path.join(OUT, f"{name}_qdq.onnx")
        r = B.run([args.exe, "export", path, npy, "-o", onnx_path])
        if r.returncode != 0:
            print(name, "export failed:", B.first_line(r))
            onnx_path = None
        for t in [int(s) for s in args.threads.split(",")]:
            pt = bench_pytorch(path, x, t, args.runs, args.warmup)
            ort, ort_err = B.bench_ort(onnx_path, npy, t, args.runs, args.warmup)
            tl, first, tl_err = B.bench_torchless(args.exe, path, npy, t, args.runs, args.warmup)
            rows.append((name, t, pt, ort, tl, ort_err or tl_err))
            print(rows[-1], flush=True)
    load = os.getloadavg()
    lines = ["", "## Quantized models (issue 15): eager static, random weights", "",
             f"Load average (1 / 5 / 15 min) when the run ended: {load[0]:.1f} / {load[1]:.1f} / {load[2]:.1f} "
             f"on {os.cpu_count()} cores: the machine was shared, the numbers are rough.", "",
             f"Machine: {B.cpu_name()}; PyTorch {torch.__version__} (quantized engine "
             f"{torch.backends.quantized.engine}: Debian's build has no fbgemm). Command: "
             f"`/usr/bin/python3 bench/quant_bench.py --runs {args.runs} --warmup {args.warmup} "
             f"--threads {args.threads}`. Median ms, batch 1, 224x224. ORT runs `torchless export`'s "
             "file (quantized convs and linears as ConvInteger / MatMulInteger with PyTorch's requantization, "
             "exact rather than fused into QLinearConv); torchless runs the "
             "archive as loaded: frozen, its quantized convs and linears as the engine's int8 layers "
             "(oneDNN u8 x s8, channels-last), the other quantized ops as plugin layers.", "",
             "| model | threads | PyTorch | ORT (torchless QDQ export) | torchless | ratio (torchless / best) |",
             "|---|---|---|---|---|---|"]
    for name, t, pt, ort, tl, err in rows:
        best = min(v for v in (pt, ort) if v is not None)
        lines.append(f"| {name} | {t} | {B.fmt(pt)} | {B.fmt(ort)} | {B.fmt(tl)} | "
                     f"{B.fmt(tl / best) if tl else '—'} |" + (f" {err}" if err else ""))
    text = "\n".join(lines) + "\n"
    print(text)
    if args.append:
        with open(os.path.join(B.ROOT, "bench", "RESULTS.md"), "a") as f:
            f.write(text)


if __name__ == "__main__":
    main()
