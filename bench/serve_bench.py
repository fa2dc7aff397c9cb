"""Load tests of `torchless serve` (issue 20), on loopback, bounded in count and time.

    /usr/bin/python3 bench/serve_bench.py [--exe build/bin/torchless] [--seconds 15] [--clients 8]
                                          [--memory-requests 10000] [--write bench/RESULTS.md]

1. overhead at batch 1: one client's sequential requests (binary tensor extension) against
   `torchless bench` of the same archive with the same threads (median to median), measured
   in turns so that the machine's load hits both alike;
2. load: --clients concurrent clients for --seconds, each checking every answer against
   `torchless run`'s output for its input: requests/s, p50 and p99, lost or wrong answers;
3. the batching gain: the same load on the same model with dynamic batching;
4. memory: RSS of the server over --memory-requests requests of batch sizes 1..8, after one
   warm-up request of each size.
Results go to the "torchless serve" section of RESULTS.md (replaced on each run).
"""
import argparse
import atexit
import http.client
import json
import os
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time

import numpy as np
import torch
import torchvision

HERE = os.path.dirname(os.path.abspath(__file__))


STARTED = []


@atexit.register
def _kill_servers():  # a failed run leaves no server behind
    for p in STARTED:
        if p.poll() is None:
            p.kill()


def start(exe, repo, *args):
    p = subprocess.Popen([exe, "serve", repo, "--http-port", "0", "--grpc-port", "-1", "--log-level", "warning", *args],
                         stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    STARTED.append(p)
    port = int(p.stdout.readline().split()[-1])
    deadline = time.time() + 300
    while time.time() < deadline:
        try:
            c = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
            c.request("GET", "/v2/health/ready")
            if c.getresponse().status == 200:
                return p, port
        except OSError:
            pass
        time.sleep(0.2)
    p.kill()
    raise SystemExit("server not ready")


def stop(p):
    p.send_signal(signal.SIGTERM)
    try:
        return p.wait(timeout=120)
    except subprocess.TimeoutExpired:
        p.kill()
        raise


def binary_request(model, x):
    raw = x.astype(np.float32).tobytes()
    header = json.dumps({"inputs": [{"name": "x", "shape": list(x.shape), "datatype": "FP32",
                                     "parameters": {"binary_data_size": len(raw)}}],
                         "outputs": [{"name": "y", "parameters": {"binary_data": True}}]}).encode()
    return f"/v2/models/{model}/infer", header + raw, {"Inference-Header-Content-Length": str(len(header))}


def infer(conn, req, rows):
    path, body, headers = req
    conn.request("POST", path, body, headers)
    r = conn.getresponse()
    data = r.read()
    if r.status != 200:
        return r.status, None
    n = int(r.getheader("Inference-Header-Content-Length"))
    return 200, np.frombuffer(data[n:], dtype=np.float32).reshape(rows, -1)


def percentile(xs, q):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(q / 100 * (len(xs) - 1))))]


def load(port, model, inputs, expected, clients, seconds, batch_sizes=(1,)):
    lat, bad, lost = [], [], []
    lock = threading.Lock()
    stop_at = time.time() + seconds

    def client(i):
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
        k = 0
        while time.time() < stop_at:
            b = batch_sizes[(i + k) % len(batch_sizes)]
            j = (i + k) % len(inputs)
            x = np.concatenate([inputs[(j + r) % len(inputs)] for r in range(b)])
            want = np.concatenate([expected[(j + r) % len(inputs)] for r in range(b)])
            t = time.perf_counter()
            try:
                status, y = infer(conn, binary_request(model, x), b)
            except Exception as e:  # noqa: BLE001 - counted as lost
                with lock:
                    lost.append(repr(e))
                conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
                continue
            dt = (time.perf_counter() - t) * 1e3
            with lock:
                if status != 200:
                    lost.append(status)
                elif not np.allclose(y, want, rtol=1e-4, atol=1e-5):
                    bad.append((i, k))
                else:
                    lat.append(dt)
            k += 1

    threads = [threading.Thread(target=client, args=(i,)) for i in range(clients)]
    t0 = time.time()
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=seconds + 300)
    wall = time.time() - t0
    return {"requests": len(lat), "rps": len(lat) / wall, "p50": percentile(lat, 50), "p99": percentile(lat, 99),
            "lost": len(lost), "wrong": len(bad)}


def rss_kb(pid):
    with open(f"/proc/{pid}/status") as f:
        return int(re.search(r"VmRSS:\s+(\d+)", f.read()).group(1))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--exe", default=os.path.join(HERE, "..", "build", "bin", "torchless"))
    ap.add_argument("--seconds", type=float, default=15)
    ap.add_argument("--clients", type=int, default=8)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--memory-requests", type=int, default=10000)
    ap.add_argument("--write", default=os.path.join(HERE, "RESULTS.md"))
    a = ap.parse_args()
    torch.manual_seed(0)
    work = tempfile.mkdtemp(prefix="serve_bench_")
    repo = os.path.join(work, "repo")
    shape = [3, 64, 64]
    net = torchvision.models.resnet18(num_classes=100).eval()
    scripted = torch.jit.script(net)
    base = {"max_batch_size": 8, "input": [{"name": "x", "data_type": "TYPE_FP32", "dims": shape}],
            "output": [{"name": "y", "data_type": "TYPE_FP32", "dims": [100]}], "threads": a.threads}
    for name, extra in [("r18", {}), ("r18_batched", {"dynamic_batching": {"max_queue_delay_microseconds": 2000}})]:
        os.makedirs(os.path.join(repo, name, "1"))
        torch.jit.save(scripted, os.path.join(repo, name, "1", "model.pt"))
        with open(os.path.join(repo, name, "config.json"), "w") as f:
            json.dump({**base, **extra}, f)
    model_pt = os.path.join(repo, "r18", "1", "model.pt")
    inputs = [torch.randn(1, *shape).numpy() for _ in range(4)]
    expected = []
    for i, x in enumerate(inputs):  # what `torchless run` answers for each input
        np.save(os.path.join(work, f"x{i}.npy"), x)
        subprocess.run([a.exe, "run", model_pt, os.path.join(work, f"x{i}.npy"), "--output-dir", work,
                        "--threads", str(a.threads)], check=True, capture_output=True, timeout=300)
        expected.append(np.load(os.path.join(work, "out0.npy")))

    # 1. overhead at batch 1: `torchless bench` and the served model measured in turns (five
    # rounds of 20 runs each), so that a change in the machine's load hits both alike.
    p, port = start(a.exe, repo, "--threads", str(a.threads))
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
    req = binary_request("r18", inputs[0])
    for _ in range(5):
        infer(conn, req, 1)
    bench_runs, seq = [], []
    for _ in range(5):
        r = subprocess.run([a.exe, "bench", model_pt, os.path.join(work, "x0.npy"), "--threads", str(a.threads),
                            "--runs", "20", "--warmup", "3", "--json"], check=True, capture_output=True, text=True,
                           timeout=600)
        bench_runs.append(json.loads(r.stdout)["median_ms"])
        conn.close()  # the bench run outlasted the server's keep-alive timeout
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
        infer(conn, req, 1)
        for _ in range(20):
            t = time.perf_counter()
            status, y = infer(conn, req, 1)
            seq.append((time.perf_counter() - t) * 1e3)
            assert status == 200 and np.allclose(y, expected[0], rtol=1e-4, atol=1e-5)
    bench_median = statistics.median(bench_runs)
    serve_median = statistics.median(seq)

    # 2. and 3. load without and with dynamic batching
    plain = load(port, "r18", inputs, expected, a.clients, a.seconds)
    batched = load(port, "r18_batched", inputs, expected, a.clients, a.seconds)
    assert stop(p) == 0

    # 4. memory over many requests of varying batch sizes
    p, port = start(a.exe, repo, "--threads", str(a.threads))
    warm = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
    for b in range(1, 9):  # each batch size once: plans for every shape are built
        x = np.concatenate([inputs[r % 4] for r in range(b)])
        assert infer(warm, binary_request("r18_batched", x), b)[0] == 200
    mem = {"before": rss_kb(p.pid)}
    counts, rss = 0, []
    conns = [http.client.HTTPConnection("127.0.0.1", port, timeout=120) for _ in range(4)]
    lock = threading.Lock()

    def memory_client(i):
        nonlocal counts
        k = 0
        while True:
            with lock:
                if counts >= a.memory_requests:
                    return
                counts += 1
                n = counts
            b = 1 + (i + k) % 8
            x = np.concatenate([inputs[(i + r) % 4] for r in range(b)])
            status, _ = infer(conns[i], binary_request("r18_batched", x), b)
            assert status == 200
            if n % (a.memory_requests // 10) == 0:
                rss.append(rss_kb(p.pid))
            k += 1

    threads = [threading.Thread(target=memory_client, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=3600)
    assert stop(p) == 0

    load_avg = os.getloadavg()
    lines = [
        "## torchless serve (issue 20)",
        "",
        f"`/usr/bin/python3 bench/serve_bench.py --seconds {a.seconds:g} --clients {a.clients} --threads {a.threads} "
        f"--memory-requests {a.memory_requests}`, {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, same machine; "
        f"load average at the end {load_avg[0]:.1f} (other engineers' builds ran: numbers are indications). "
        f"Model: torchvision resnet18 (100 classes, random weights, scripted) at 3x64x64, one instance with "
        f"{a.threads} threads; REST with the binary tensor extension on loopback; every answer checked against "
        "`torchless run`'s output for its input.",
        "",
        "| measure | value |",
        "|---|---|",
        f"| `torchless bench` median, batch 1 (median of 5 runs of 20) | {bench_median:.2f} ms |",
        f"| served median, batch 1, one client (100 sequential requests, in turns with the bench runs) | {serve_median:.2f} ms "
        f"({(serve_median / bench_median - 1) * 100:+.1f}%; target at most +10%) |",
    ]
    for name, r in [("no batching", plain), ("dynamic batching (max 8, 2 ms)", batched)]:
        lines.append(f"| {a.clients} clients x {a.seconds:g} s, {name} | {r['rps']:.1f} req/s, p50 {r['p50']:.1f} ms, "
                     f"p99 {r['p99']:.1f} ms, {r['requests']} answered, {r['lost']} lost, {r['wrong']} wrong |")
    lines.append(f"| batching gain (req/s) | {batched['rps'] / plain['rps']:.2f}x |")
    lines.append(f"| server RSS over {a.memory_requests} requests of batch 1..8 | start {mem['before'] / 1024:.0f} MiB; "
                 f"at each tenth: {', '.join(f'{v / 1024:.0f}' for v in rss)} MiB (after one warm-up request per batch size) |")
    text = "\n".join(lines) + "\n"
    print(text)
    if a.write:
        old = open(a.write).read() if os.path.exists(a.write) else ""
        section = re.compile(r"## torchless serve \(issue 20\)\n.*?(?=\n## |\Z)", re.S)
        new = section.sub(lambda _: text.rstrip("\n"), old) if section.search(old) else old.rstrip("\n") + "\n\n" + text
        with open(a.write, "w") as f:
            f.write(new if new.endswith("\n") else new + "\n")


if __name__ == "__main__":
    main()
