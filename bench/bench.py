"""Latency of torchless against PyTorch and ONNX Runtime, measured in one run on one machine.

Usage (from the repository root, after scripts/setup.sh and a Release build):
    /usr/bin/python3 bench/bench.py [--models resnet50,...] [--batches 1,8] [--threads 1,2]
                                    [--runs 30] [--warmup 5] [--out bench/RESULTS.md]

The models are issue 13's: torchvision's resnet50, mobilenet_v2, efficientnet_b0, convnext_tiny
and vit_b_16 (random weights, traced), two BERT-like encoders built on nn.TransformerEncoder
(bert_small: 2 layers, d=128, T=16; bert_like: 4 layers, d=256, T=128; scripted) and an LSTM
language model (lstm_lm: embedding 256, 2-layer LSTM 512, T=35; scripted). For each model the
harness writes build/bench/<model>.pt once (reused on later runs unless --rebuild), its
torch.onnx.export file (dynamic batch) and inputs per batch (the files torchless writes,
`torchless export`'s and `torchless compile`'s, again whenever the binary is newer than they
are: a stale compiled archive measures the binary that wrote it), then measures for every batch and
thread count the median latency of:
  - PyTorch 1.13: torch.jit.load, torch.jit.freeze, torch.jit.optimize_for_inference;
  - ONNX Runtime (npm onnxruntime-node, CPU, all graph optimizations, intra-op threads = N) on
    torch.onnx.export's file and on `torchless export`'s;
  - torchless on the archive as PyTorch wrote it (`torchless bench MODEL.pt INPUT.npy`; no
    manual step: the ratios use this column) and on the archive `torchless compile` wrote (a
    failure is recorded, not fatal).
A PyTorch call that takes over 5 s (vit_b_16 and convnext_tiny on Debian's build) is timed once
after its first call. It writes --out (default bench/RESULTS.md) with the machine, the command,
the table and the ratio torchless / min(PyTorch, ONNX Runtime): below 1 means torchless is faster; issue 13's
target is at most 0.9. "first" is torchless's first call (building included) over its median.
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
ORT_RUNNER = os.path.join(ROOT, "bench", "ort_bench.js")
ALL_MODELS = "resnet50,mobilenet_v2,efficientnet_b0,convnext_tiny,vit_b_16,bert_small,bert_like,lstm_lm"


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


class LstmLM(torch.nn.Module):
    def __init__(self, vocab=10000, d=256, hidden=512, layers=2):
        super().__init__()
        self.emb = torch.nn.Embedding(vocab, d)
        self.lstm = torch.nn.LSTM(d, hidden, layers, batch_first=True)
        self.out = torch.nn.Linear(hidden, vocab)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        h, _ = self.lstm(self.emb(ids))
        return self.out(h)


def make_model(name):
    """(module in eval mode, input maker batch -> tensor, 'script' or 'trace')."""
    torch.manual_seed(0)
    if name == "bert_like":
        return BertLike().eval(), lambda b: torch.randint(0, 30522, (b, 128)), "script"
    if name == "bert_small":
        return BertLike(d=128, heads=4, layers=2, seq=16).eval(), lambda b: torch.randint(0, 30522, (b, 16)), "script"
    if name == "lstm_lm":
        return LstmLM().eval(), lambda b: torch.randint(0, 10000, (b, 35)), "script"
    import torchvision.models as tvm
    return getattr(tvm, name)().eval(), lambda b: torch.randn(b, 3, 224, 224), "trace"


def run(cmd, **kw):
    return subprocess.run(cmd, capture_output=True, text=True, **kw)


def first_line(r):
    lines = (r.stderr or r.stdout or "").strip().splitlines()
    return lines[0] if lines else f"exit {r.returncode}"


SLOW_CALL_S = 5.0  # a system whose first call takes longer gets one warm-up and one timed call


def median_ms(fn, runs, warmup):
    t = time.perf_counter()
    fn()
    if time.perf_counter() - t > SLOW_CALL_S:
        runs, warmup = 1, 0  # noted in RESULTS.md: PyTorch takes tens of seconds on some models
    for _ in range(max(warmup - 1, 0)):
        fn()
    times = []
    for _ in range(runs):
        t = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t) * 1000)
    return statistics.median(times)


def bench_pytorch(path, x, threads, runs, warmup):
    torch.set_num_threads(threads)
    try:
        m = torch.jit.optimize_for_inference(torch.jit.freeze(torch.jit.load(path).eval()))
        with torch.no_grad():
            return median_ms(lambda: m(x), runs, warmup), None
    except Exception as e:  # noqa: BLE001 - recorded in the table
        return None, str(e).strip().splitlines()[0]


def bench_ort(onnx_path, npy_path, threads, runs, warmup):
    if onnx_path is None:
        return None, "no ONNX file"
    r = run(["node", ORT_RUNNER, onnx_path, npy_path, str(threads), str(runs), str(warmup)], cwd=ROOT)
    if r.returncode != 0:
        return None, (r.stderr.strip().splitlines() or ["failed"])[-1]
    return json.loads(r.stdout)["median_ms"], None


def bench_torchless(exe, path, npy_path, threads, runs, warmup):
    """(median ms, first call ms, error)."""
    if path is None:
        return None, None, "no archive"
    r = run([exe, "bench", path, npy_path, "--threads", str(threads), "--runs", str(runs),
             "--warmup", str(max(warmup, 1)), "--json"])
    if r.returncode != 0:
        return None, None, first_line(r)
    j = json.loads(r.stdout)
    return j["median_ms"], j.get("first_call_ms"), None


def cpu_name():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor()


def cpu_flags():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("flags"):
                    flags = line.split(":", 1)[1].split()
                    return ", ".join(f for f in ("avx2", "avx512f", "avx512_vnni", "amx_tile") if f in flags)
    except OSError:
        pass
    return "?"


def prepare(name, batches, exe, rebuild):
    """Writes the archive, ONNX files and inputs of one model; returns paths and errors."""
    model, make_input, how = make_model(name)
    d = os.path.join(OUT, name)
    os.makedirs(d, exist_ok=True)
    p = dict(pt=os.path.join(d, "model.pt"), onnx=os.path.join(d, "torch_onnx.onnx"),
             own_onnx=os.path.join(d, "torchless.onnx"), compiled=os.path.join(d, "compiled.pt"),
             inputs={}, errors={})
    torch.manual_seed(1)
    for b in batches:
        p["inputs"][b] = os.path.join(d, f"input_b{b}.npy")
        if rebuild or not os.path.exists(p["inputs"][b]):
            np.save(p["inputs"][b], make_input(b).numpy())
    x1 = torch.from_numpy(np.load(p["inputs"][batches[0]]))
    if rebuild or not os.path.exists(p["pt"]):
        with torch.no_grad():
            m = torch.jit.script(model) if how == "script" else torch.jit.trace(model, x1)
        m.save(p["pt"])
    if rebuild or not os.path.exists(p["onnx"]):
        try:
            torch.onnx.export(model, (x1,), p["onnx"], opset_version=14, input_names=["input"],
                              dynamic_axes={"input": {0: "batch"}})
        except Exception as e:  # noqa: BLE001 - recorded in the table
            p["errors"]["onnx"] = str(e).strip().splitlines()[0]
            p["onnx"] = None
    for key, cmd in (("own_onnx", [exe, "export", p["pt"], p["inputs"][batches[0]], "-o", p["own_onnx"],
                                   "--dynamic-axes", "input:0", "--input-names", "input"]),
                     ("compiled", [exe, "compile", p["pt"], p["inputs"][batches[0]], "-o", p["compiled"]])):
        # Made by the torchless binary: rewritten when it is newer than the file, so that the
        # column measures this binary's engines, not those of the binary that wrote the file.
        if rebuild or not os.path.exists(p[key]) or os.path.getmtime(exe) > os.path.getmtime(p[key]):
            r = run(cmd)
            if r.returncode != 0:
                p["errors"][key] = first_line(r)
                p[key] = None
    return p


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=30)
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--models", default=ALL_MODELS)
    ap.add_argument("--batches", default="1,8")
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--torchless", default=TORCHLESS, help="the torchless binary to measure")
    ap.add_argument("--out", default=os.path.join(ROOT, "bench", "RESULTS.md"), help="the results file to write")
    ap.add_argument("--rebuild", action="store_true", help="rewrite the models, ONNX files and inputs")
    args = ap.parse_args()
    exe = args.torchless
    batches = [int(b) for b in args.batches.split(",")]
    threads_list = [int(t) for t in args.threads.split(",")]
    rows = []
    for name in args.models.split(","):
        p = prepare(name, batches, exe, args.rebuild)
        for b in batches:
            x = torch.from_numpy(np.load(p["inputs"][b]))
            npy = p["inputs"][b]
            for threads in threads_list:
                pt, pt_err = bench_pytorch(p["pt"], x, threads, args.runs, args.warmup)
                ort, ort_err = bench_ort(p["onnx"], npy, threads, args.runs, args.warmup)
                ort_own, ort_own_err = bench_ort(p["own_onnx"], npy, threads, args.runs, args.warmup)
                tl, tl_first, tl_err = bench_torchless(exe, p["pt"], npy, threads, args.runs, args.warmup)
                tlc, _, tlc_err = bench_torchless(exe, p["compiled"], npy, threads, args.runs, args.warmup)
                row = dict(model=name, batch=b, threads=threads, pytorch=pt, ort=ort, ort_own=ort_own,
                           torchless=tl, torchless_first=tl_first, compiled=tlc,
                           errors={k: v for k, v in dict(pytorch=pt_err, ort=ort_err, ort_own=ort_own_err,
                                                         torchless=tl_err, compiled=tlc_err).items() if v})
                for k in ("onnx", "own_onnx", "compiled"):
                    if k in p["errors"]:
                        row["errors"]["prepare " + k] = p["errors"][k]
                rows.append(row)
                print(json.dumps(row), flush=True)
    write_results(rows, args)


def fmt(v):
    return "—" if v is None else f"{v:.2f}"


def ratio(a, b):
    return "—" if a is None or b is None else f"{a / b:.2f}"


def best_other(r):
    others = [v for v in (r["pytorch"], r["ort"]) if v is not None]
    return min(others) if others else None


def write_results(rows, args):
    command = (f"/usr/bin/python3 bench/bench.py --runs {args.runs} --warmup {args.warmup} "
               f"--models {args.models} --batches {args.batches} --threads {args.threads}")
    if args.torchless != TORCHLESS:
        command += f" --torchless {os.path.relpath(args.torchless, ROOT)}"
    lines = [
        "# Benchmark results",
        "",
        f"Machine: {cpu_name()} ({cpu_flags()}), {os.cpu_count()} cores; PyTorch {torch.__version__}; "
        f"measured {time.strftime('%Y-%m-%d')}.",
        "",
        f"Command: `{command}`",
        "",
        "Median latency in milliseconds over the timed runs. PyTorch runs the frozen, "
        "optimize_for_inference'd module; ONNX Runtime runs torch.onnx.export's file (opset 14) and "
        "`torchless export`'s; torchless runs the archive as PyTorch wrote it and the archive "
        "`torchless compile` wrote. **ratio** = torchless (as written) / the faster of PyTorch and ONNX "
        "Runtime (torch.onnx): below 1 means torchless is faster, issue 13's target is at most 0.9. "
        "**first** = torchless's first call (building included) / its median (target at most 2).",
        "",
        "| model | batch | threads | PyTorch | ORT (torch.onnx) | ORT (torchless export) | torchless | "
        "torchless compile | ratio | ratio (compile) | first |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    notes = []
    for r in rows:
        best = best_other(r)
        lines.append(f"| {r['model']} | {r['batch']} | {r['threads']} | {fmt(r['pytorch'])} | {fmt(r['ort'])} | "
                     f"{fmt(r['ort_own'])} | {fmt(r['torchless'])} | {fmt(r['compiled'])} | "
                     f"{ratio(r['torchless'], best)} | {ratio(r['compiled'], best)} | "
                     f"{ratio(r['torchless_first'], r['torchless'])} |")
        for what, err in r["errors"].items():
            if err in ("no archive", "no ONNX file"):
                continue  # the preparing step's own failure is listed
            err = err.replace("`", "'")
            notes.append(f"- {r['model']}: {what} failed: `{err}`")
    if notes:
        lines += ["", "Failures:", ""] + sorted(set(notes))
    with open(args.out, "w") as f:
        f.write("\n".join(lines) + "\n")
    print(f"wrote {args.out}", file=sys.stderr)


if __name__ == "__main__":
    main()
