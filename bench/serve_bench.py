"""Load tests of `torchless serve` (issue 20), on loopback, bounded in count and time.

    /usr/bin/python3 bench/serve_bench.py [--exe build/bin/torchless] [--window 4] [--windows 4]
        [--clients 8] [--threads 2] [--rounds 7] [--warmup 5] [--memory-requests 10000]
        [--parts overhead,load,memory] [--kinds http.client,lean,cpp-http] [--forward-times]
        [--write bench/RESULTS.md]

The machine is shared (2 cores, other engineers' builds): every comparison is made in
alternation (A, B, A, B ...), so that a change in the machine's load hits both sides alike,
and CPU time (load-independent) is reported next to wall time.

1. overhead at batch 1: `torchless bench` of the archive (--runs 30 --warmup 5) and 30 sequential
   requests of one client to the served archive after --warmup (5) requests, in --rounds
   alternating rounds: median, p99, min and the server's CPU time per request. Both sides get
   the same warm-up: on this machine (a VM) a forward after the process idled pays again for
   what the first call pays (resnet18: 11-30 ms instead of 4 after 1 s of sleep, in a plain
   loop without any server), and the server idles while `torchless bench` runs. Two clients (binary tensor extension): http.client, and a lean
   one (one keep-alive socket, the request's bytes built once, the answer read by its
   Content-Length), as a compiled client (tritonclient's C++ one, perf_analyzer) would cost; and
   the same for a model that does next to nothing (a mean, of a 1x3x64x64 input and of a
   1x3x224x224 one: mean_224), whose served time is the server's and the transport's own cost
   per request. With --forward-times the server runs at
   --log-level info and the table adds the median of its forward_ms (the forward alone, timed
   inside the server) beside `torchless bench`'s median: what is left of the difference is the
   request's path; the log line costs a write(2) per request, so the served times grow a little.
   --kinds picks the clients: http.client, lean, json (http.client with tensors as JSON both
   ways), grpc (grpcio, raw_input_contents), cpp-http and cpp-grpc (bench/serve_client.cpp,
   compiled here with g++ against cpp-httplib and gRPC++: a client whose own time is next to
   nothing, so its served median is the one to hold against the target);
2. load and the batching gain: --clients client threads (each an http.client connection,
   every answer checked against `torchless run`'s) for --window s on the model without and
   then with dynamic batching, --windows times alternating: req/s, p50, p99, lost, wrong; for
   a conv net (resnet18), an MLP and a wide MLP whose 100 MB of weights make batch 1 as slow
   as reading them (the case dynamic batching is for: a batch reads them once);
3. memory: RSS of the server over --memory-requests requests of batch sizes 1..8 from 4 clients
   to the batched and the unbatched conv net, sampled every tenth, after a warm-up of one request
   per batch size and a tenth of the requests.
The tables are printed; with --write FILE (e.g. bench/RESULTS.md) they also replace the
"## torchless serve (issue 20)" section of FILE (every part's tables: run all the parts you want
kept).
"""
import argparse
import atexit
import http.client
import json
import os
import re
import shutil
import signal
import socket
import statistics
import subprocess
import tempfile
import threading
import time

import grpc
import numpy as np
import torch
import torchvision

HERE = os.path.dirname(os.path.abspath(__file__))
STARTED = []
# Models measured only in the overhead part (no batched copy, not in the load part).
OVERHEAD_ONLY = ("r18_224", "mean_224")


@atexit.register
def _kill_servers():  # a failed run leaves no server behind
    for p in STARTED:
        if p.poll() is None:
            p.kill()


def start(exe, repo, *args, log=None):
    # log: a file for the server's stderr at --log-level info (one line per request). Returns the
    # process and its HTTP and gRPC ports.
    level = "info" if log else "warning"
    p = subprocess.Popen([exe, "serve", repo, "--http-port", "0", "--grpc-port", "0", "--log-level", level, *args],
                         stdout=subprocess.PIPE, stderr=log or subprocess.DEVNULL, text=True)
    STARTED.append(p)
    ports = {}
    while len(ports) < 2:  # "HTTP port N" and "gRPC port N" come first on stdout
        line = p.stdout.readline()
        if not line:
            raise SystemExit("server ended before printing its ports")
        ports[line.split()[0]] = int(line.split()[-1])
    port = ports["HTTP"]
    deadline = time.time() + 300
    while time.time() < deadline:
        try:
            c = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
            c.request("GET", "/v2/health/ready")
            if c.getresponse().status == 200:
                return p, port, ports["gRPC"]
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


def json_request(model, x):
    body = json.dumps({"inputs": [{"name": "x", "shape": list(x.shape), "datatype": "FP32",
                                   "data": x.astype(np.float32).flatten().tolist()}]}).encode()
    return f"/v2/models/{model}/infer", body, {"Content-Type": "application/json"}


def infer_json(conn, req, rows):
    # Tensors as JSON both ways (no binary tensor extension).
    path, body, headers = req
    conn.request("POST", path, body, headers)
    r = conn.getresponse()
    data = r.read()
    if r.status != 200:
        return r.status, None
    return 200, np.array(json.loads(data)["outputs"][0]["data"], dtype=np.float32).reshape(rows, -1)


def grpc_modules(work):
    # The v2 proto compiled by grpc_tools, as tests/server/grpc_test.py does.
    import sys
    from grpc_tools import protoc
    proto_dir = os.path.join(HERE, "..", "src", "server")
    assert protoc.main(["protoc", f"-I{proto_dir}", f"--python_out={work}", f"--grpc_python_out={work}",
                        os.path.join(proto_dir, "grpc_predict_v2.proto")]) == 0
    sys.path.insert(0, work)
    import grpc_predict_v2_pb2
    import grpc_predict_v2_pb2_grpc
    return grpc_predict_v2_pb2, grpc_predict_v2_pb2_grpc


def grpc_request(pb, model, x):
    req = pb.ModelInferRequest(model_name=model)
    req.inputs.add(name="x", datatype="FP32", shape=list(x.shape))
    req.raw_input_contents.append(x.astype(np.float32).tobytes())
    return req


def infer_grpc(stub, req, rows):
    res = stub.ModelInfer(req, timeout=120)
    return 200, np.frombuffer(res.raw_output_contents[0], dtype=np.float32).reshape(rows, -1)


def build_cpp_client(work):
    # bench/serve_client.cpp, built once per run (cpp-httplib and gRPC++, as the server uses).
    exe = os.path.join(work, "serve_client")
    flags = subprocess.run(["pkg-config", "--cflags", "--libs", "cpp-httplib", "grpc++"], check=True,
                           capture_output=True, text=True).stdout.split()
    subprocess.run(["g++", "-O2", "-std=c++17", os.path.join(HERE, "serve_client.cpp"), "-o", exe, *flags],
                   check=True, timeout=900)
    return exe


def run_cpp_client(exe, kind, port, path, request_file, header_len, warmup, count, answer_file):
    r = subprocess.run([exe, kind, str(port), path, request_file, str(header_len), str(warmup), str(count),
                        answer_file], check=True, capture_output=True, text=True, timeout=600)
    return [float(v) for v in r.stdout.split()]


def cpp_answer(kind, answer, n):
    # The compiled client's last answer: REST, the binary extension's body (the n floats last);
    # gRPC, a serialized ModelInferResponse.
    if kind == "cpp-http":
        return np.frombuffer(answer[-4 * n:], dtype=np.float32).reshape(1, -1)
    return np.frombuffer(PB[0].ModelInferResponse.FromString(answer).raw_output_contents[0], np.float32).reshape(1, -1)


KIND_NAMES = {"http.client": "http.client", "lean": "lean", "json": "http.client, JSON", "grpc": "grpcio",
              "cpp-http": "C++ httplib", "cpp-grpc": "C++ gRPC"}
PB = []


class LeanClient:
    """One keep-alive connection; each request's bytes built once; answers read by Content-Length."""

    def __init__(self, port):
        self.port = port
        self.sock = None

    def _connect(self):
        self.sock = socket.create_connection(("127.0.0.1", self.port), timeout=120)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    @staticmethod
    def prepare(req):
        path, body, headers = req
        head = f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: {len(body)}\r\n"
        head += "".join(f"{k}: {v}\r\n" for k, v in headers.items())
        return (head + "\r\n").encode() + body

    def _recv(self):
        data = self.sock.recv(1 << 16)
        if not data:
            raise ConnectionError("closed")
        return data

    def infer(self, raw, rows):
        for attempt in (0, 1):  # the server closes a keep-alive connection after 1000 requests
            if self.sock is None:
                self._connect()
            try:
                self.sock.sendall(raw)
                buf = b""
                while b"\r\n\r\n" not in buf:
                    buf += self._recv()
                break
            except (ConnectionError, BrokenPipeError):
                self.sock.close()
                self.sock = None
                if attempt:
                    raise
        head, rest = buf.split(b"\r\n\r\n", 1)
        fields = dict(l.split(b":", 1) for l in head.split(b"\r\n")[1:])
        fields = {k.strip().lower(): v.strip() for k, v in fields.items()}
        n = int(fields[b"content-length"])
        while len(rest) < n:
            rest += self._recv()
        status = int(head.split(b" ", 2)[1])
        if status != 200:
            return status, None
        h = int(fields[b"inference-header-content-length"])
        return 200, np.frombuffer(rest[h:], dtype=np.float32).reshape(rows, -1)


def percentile(xs, q):
    if not xs:  # a window so short (or a machine so loaded) that nothing was answered in it
        return float("nan")
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(q / 100 * (len(xs) - 1))))]


def cpu_seconds(pid):
    # The process's CPU time in ns resolution, threads that ended included (gRPC's come and go):
    # the kernel's process CPU clock of another process, MAKE_PROCESS_CPUCLOCK(pid, CPUCLOCK_SCHED)
    # (what clock_getcpuclockid(3) returns), not /proc/PID/stat's 10-ms ticks (a round of 30
    # requests of the mean model takes a few ms in all).
    return time.clock_gettime((~pid << 3) | 2)


def rss_kb(pid):
    with open(f"/proc/{pid}/status") as f:
        return int(re.search(r"VmRSS:\s+(\d+)", f.read()).group(1))


def _client(port, model, reqs, expected, stop_at, out):
    # One client thread: its own connection, in a loop until stop_at; each answer checked.
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
    lat, lost, wrong, k = [], 0, 0, 0
    while time.time() < stop_at:
        j = k % len(reqs)
        t = time.perf_counter()
        try:
            status, y = infer(conn, reqs[j], 1)
        except Exception:  # noqa: BLE001 - counted as lost
            lost += 1
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
            continue
        dt = (time.perf_counter() - t) * 1e3
        if status != 200:
            lost += 1
        elif not np.allclose(y, expected[j], rtol=1e-4, atol=1e-5):
            wrong += 1
        else:
            lat.append(dt)
        k += 1
    out.append((lat, lost, wrong))


def load_window(port, pid, model, inputs, expected, clients, seconds):
    # Client threads of this process (http.client releases the GIL while it waits): the
    # clients' Python work stays within about one core of the two, as it would be on other
    # machines in a deployment; client processes would take the cores the server needs in
    # bursts, right when a batch's answers wake them all at once.
    reqs = [binary_request(model, x) for x in inputs]
    out = []
    cpu0 = cpu_seconds(pid)
    stop_at = time.time() + seconds
    threads = [threading.Thread(target=_client, args=(port, model, reqs[i % len(reqs):] + reqs[:i % len(reqs)],
                                                      expected[i % len(reqs):] + expected[:i % len(reqs)], stop_at, out))
               for i in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=seconds + 300)
    lat = [x for r in out for x in r[0]]
    return {"lat": lat, "seconds": seconds, "lost": sum(r[1] for r in out), "wrong": sum(r[2] for r in out),
            "cpu": cpu_seconds(pid) - cpu0}


def summary(windows):
    lat = [x for w in windows for x in w["lat"]]
    secs = sum(w["seconds"] for w in windows)
    return {"rps": len(lat) / secs, "p50": percentile(lat, 50), "p99": percentile(lat, 99), "n": len(lat),
            "cpu": sum(w["cpu"] for w in windows) / max(1, len(lat)) * 1e3,
            "lost": sum(w["lost"] for w in windows), "wrong": sum(w["wrong"] for w in windows)}


def run_expected(exe, model_pt, inputs, work, threads, net):
    expected = []
    for i, x in enumerate(inputs):  # what `torchless run` answers for each input
        np.save(os.path.join(work, f"{net}_x{i}.npy"), x)
        subprocess.run([exe, "run", model_pt, os.path.join(work, f"{net}_x{i}.npy"), "--output-dir", work,
                        "--threads", str(threads)], check=True, capture_output=True, timeout=300)
        expected.append(np.load(os.path.join(work, "out0.npy")))
    return expected


class MeanNet(torch.nn.Module):
    """Next to no work: what a served request costs besides the model."""

    def forward(self, x):
        return x.mean(dim=(2, 3))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--exe", default=os.path.join(HERE, "..", "build", "bin", "torchless"))
    ap.add_argument("--window", type=float, default=4)
    ap.add_argument("--windows", type=int, default=4)
    ap.add_argument("--clients", type=int, default=8)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--warmup", type=int, default=5, help="overhead part: requests before each timed 30 (bench: --warmup)")
    ap.add_argument("--memory-requests", type=int, default=10000)
    ap.add_argument("--parts", default="overhead,load,memory")
    ap.add_argument("--kinds", default="http.client,lean,cpp-http",
                    help="overhead part: clients, of " + ",".join(KIND_NAMES) +
                    " (json: tensors as JSON; cpp-*: bench/serve_client.cpp, compiled here)")
    ap.add_argument("--forward-times", action="store_true",
                    help="overhead part: the server at --log-level info, its forward_ms in the table")
    ap.add_argument("--write", default="", help="also replace the serve section of this file (bench/RESULTS.md)")
    a = ap.parse_args()
    parts = set(a.parts.split(","))
    kinds = a.kinds.split(",")
    for k in kinds:
        if k not in KIND_NAMES:
            ap.error(f"--kinds: unknown client '{k}' (known: {', '.join(KIND_NAMES)})")
    torch.manual_seed(0)
    work = tempfile.mkdtemp(prefix="serve_bench_")
    atexit.register(shutil.rmtree, work, True)  # its archives and inputs: 330 MB a run
    repo = os.path.join(work, "repo")
    delay = {"dynamic_batching": {"max_queue_delay_microseconds": 2000}}
    nets = {
        "r18": (torch.jit.script(torchvision.models.resnet18(num_classes=100).eval()), [3, 64, 64], 100),
        # The same classifier at the input size it is served at (ImageNet's 224x224, 1000 classes).
        "r18_224": (torch.jit.script(torchvision.models.resnet18().eval()), [3, 224, 224], 1000),
        "mlp": (torch.jit.script(torch.nn.Sequential(
            torch.nn.Linear(512, 2048), torch.nn.ReLU(), torch.nn.Linear(2048, 2048), torch.nn.ReLU(),
            torch.nn.Linear(2048, 512)).eval()), [512], 512),
        "mlp_wide": (torch.jit.script(torch.nn.Sequential(
            torch.nn.Linear(1024, 4096), torch.nn.ReLU(), torch.nn.Linear(4096, 4096), torch.nn.ReLU(),
            torch.nn.Linear(4096, 1024)).eval()), [1024], 1024),
        "mean": (torch.jit.script(MeanNet()), [3, 64, 64], 3),
        "mean_224": (torch.jit.script(MeanNet()), [3, 224, 224], 3),
    }
    for net, (scripted, shape, classes) in nets.items():
        base = {"max_batch_size": 8, "input": [{"name": "x", "data_type": "TYPE_FP32", "dims": shape}],
                "output": [{"name": "y", "data_type": "TYPE_FP32", "dims": [classes]}], "threads": a.threads}
        for name, extra in [(net, {})] + ([] if net in OVERHEAD_ONLY else [(net + "_batched", delay)]):
            os.makedirs(os.path.join(repo, name, "1"))
            torch.jit.save(scripted, os.path.join(repo, name, "1", "model.pt"))
            with open(os.path.join(repo, name, "config.json"), "w") as f:
                json.dump({**base, **extra}, f)
    inputs, expected = {}, {}
    for net, (_, shape, _) in nets.items():
        inputs[net] = [torch.randn(1, *shape).numpy() for _ in range(4)]
        expected[net] = run_expected(a.exe, os.path.join(repo, net, "1", "model.pt"), inputs[net], work, a.threads, net)
    pb = pb_grpc = client_exe = None
    if "overhead" in parts:
        if "grpc" in kinds or "cpp-grpc" in kinds:
            pb, pb_grpc = grpc_modules(work)
            PB.append(pb)
        if any(k.startswith("cpp-") for k in kinds):
            client_exe = build_cpp_client(work)
    load_before = os.getloadavg()
    lines = []
    log_path = os.path.join(work, "server.log")
    log = open(log_path, "w") if a.forward_times else None
    p, port, grpc_port = start(a.exe, repo, "--threads", str(a.threads), log=log)

    def forward_ms(start_at, net):
        # The server's forward_ms of `net`'s requests logged after byte `start_at` of its log.
        with open(log_path) as f:
            f.seek(start_at)
            return [float(m.group(1)) for m in re.finditer(r'model="%s" .*?forward_ms=([0-9.]+)' % net, f.read())]

    if "overhead" in parts:
        lines += [
            f"Overhead at batch 1, {a.threads} thread{'s' if a.threads != 1 else ''}: {a.rounds} alternating rounds of `torchless bench --runs 30 --warmup {a.warmup}` "
            f"and 30 sequential requests of one client of each kind after {a.warmup} (the binary tensor extension, or raw_input_contents "
            "over gRPC, except the JSON row; each answer checked); "
            "resnet18 (100 classes) at 1x3x64x64, resnet18 (1000 classes) at 1x3x224x224 (r18_224), and a model that only takes a mean of the same inputs (mean, mean_224: what a "
            "request costs besides the model). Medians are the median of the rounds' medians; CPU is the server "
            "process's per request (the bench process's per call; for the C++ clients, one process per round, "
            "averaged over the warm-up requests too)." + (
                " forward is the median of the server's forward_ms (the forward alone, timed inside the "
                "server; --forward-times: the server logs a line per request)." if a.forward_times else ""),
            "",
            "| model | client | `torchless bench` median | served median | added | min: bench / served | "
            "p99 served | CPU per call: bench / served |" + (" served forward |" if a.forward_times else ""),
            "|---|---|---|---|---|---|---|---|" + ("---|" if a.forward_times else ""),
        ]
        for net in ("r18", "r18_224", "mean", "mean_224"):
            model_pt = os.path.join(repo, net, "1", "model.pt")
            x0 = inputs[net][0]
            req = binary_request(net, x0)
            lean_req = LeanClient.prepare(req)
            jreq = json_request(net, x0)
            if "grpc" in kinds or "cpp-grpc" in kinds:
                greq = grpc_request(pb, net, x0)
            bench = []
            served, cpu, fwd = ({k: [] for k in kinds} for _ in range(3))
            # The compiled client's request and answer files (REST: the binary extension's body).
            cpp_files = {"cpp-http": (os.path.join(work, f"{net}_http.req"), req[1], req[2]["Inference-Header-Content-Length"]),
                         "cpp-grpc": (os.path.join(work, f"{net}_grpc.req"), greq.SerializeToString() if "cpp-grpc" in kinds else b"", "-")}
            for f, data, _ in cpp_files.values():
                with open(f, "wb") as fh:
                    fh.write(data)
            for _ in range(a.rounds):
                r = subprocess.run([a.exe, "bench", model_pt, os.path.join(work, f"{net}_x0.npy"), "--threads",
                                    str(a.threads), "--runs", "30", "--warmup", str(a.warmup), "--json"], check=True,
                                   capture_output=True, text=True, timeout=600)
                bench.append(json.loads(r.stdout))
                # New connections each round: the bench run may outlast the server's keep-alive timeout.
                conn, lean = http.client.HTTPConnection("127.0.0.1", port, timeout=120), LeanClient(port)
                jconn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
                channel = grpc.insecure_channel(f"127.0.0.1:{grpc_port}") if "grpc" in kinds else None
                stub = pb_grpc.GRPCInferenceServiceStub(channel) if channel is not None else None
                calls = {"http.client": lambda: infer(conn, req, 1), "lean": lambda: lean.infer(lean_req, 1),
                         "json": lambda: infer_json(jconn, jreq, 1),
                         "grpc": lambda: infer_grpc(stub, greq, 1)}
                for kind in kinds:
                    if log:
                        log.flush()
                        log_at = os.path.getsize(log_path)
                    if kind.startswith("cpp-"):
                        # One process: --warmup requests, then 30 timed; the server's CPU and
                        # forward_ms over all of them (the warm-up's log lines skipped).
                        c0 = cpu_seconds(p.pid)
                        f, _, header_len = cpp_files[kind]
                        seq = run_cpp_client(client_exe, kind[4:], grpc_port if kind == "cpp-grpc" else port,
                                             req[0], f, header_len, a.warmup, 30, os.path.join(work, "answer"))
                        cpu[kind].append((cpu_seconds(p.pid) - c0) / (30 + a.warmup) * 1e3)
                        with open(os.path.join(work, "answer"), "rb") as fh:
                            answer = fh.read()
                        y = cpp_answer(kind, answer, expected[net][0].size)
                        assert np.allclose(y, expected[net][0], rtol=1e-4, atol=1e-5), kind
                        skip = a.warmup
                    else:
                        call = calls[kind]
                        for _ in range(a.warmup):
                            call()
                        if log:
                            log.flush()
                            log_at = os.path.getsize(log_path)
                        c0, seq = cpu_seconds(p.pid), []
                        for _ in range(30):
                            t = time.perf_counter()
                            status, y = call()
                            seq.append((time.perf_counter() - t) * 1e3)
                            assert status == 200 and np.allclose(y, expected[net][0], rtol=1e-4, atol=1e-5), kind
                        cpu[kind].append((cpu_seconds(p.pid) - c0) / 30 * 1e3)
                        skip = 0
                    if log:
                        time.sleep(0.05)  # the last line written
                        fwd[kind] += forward_ms(log_at, net)[skip:]
                    served[kind].append(seq)
                conn.close()
                jconn.close()
                if channel is not None:
                    channel.close()
            b_med = statistics.median(b["median_ms"] for b in bench)
            b_min = min(b["min_ms"] for b in bench)
            b_cpu = statistics.median(b["median_cpu_ms"] for b in bench)
            for kind in served:
                s_med = statistics.median(statistics.median(x) for x in served[kind])
                s_min = min(min(x) for x in served[kind])
                s_all = [v for x in served[kind] for v in x]
                added = f"{s_med - b_med:+.2f} ms"
                if net.startswith("r18"):
                    added += f" ({(s_med / b_med - 1) * 100:+.1f}%; target at most +10%)"
                lines.append(f"| {net} | {KIND_NAMES[kind]} | {b_med:.3f} ms | {s_med:.3f} ms | {added} | {b_min:.3f} / "
                             f"{s_min:.3f} ms | {percentile(s_all, 99):.3f} ms | {b_cpu:.3f} / "
                             f"{statistics.median(cpu[kind]):.3f} ms |" +
                             (f" {statistics.median(fwd[kind]):.3f} ms |" if a.forward_times else ""))
        lines.append("")

    if "load" in parts:
        lines += [
            f"Load: {a.clients} client threads (http.client, binary tensor extension, every answer checked against "
            f"`torchless run`'s), {a.windows} alternating windows of {a.window:g} s per mode; one instance with "
            f"{a.threads} thread{'s' if a.threads != 1 else ''}; batching: max 8, max_queue_delay 2 ms.",
            "",
            "| model | mode | req/s | p50 | p99 | answered | lost | wrong | server CPU per request | gain in req/s "
            "(per window) | gain in CPU per request |",
            "|---|---|---|---|---|---|---|---|---|---|---|",
        ]
        for net in [n for n in nets if n != "mean" and n not in OVERHEAD_ONLY]:
            plain, batched = [], []
            for _ in range(a.windows):
                plain.append(load_window(port, p.pid, net, inputs[net], expected[net], a.clients, a.window))
                batched.append(load_window(port, p.pid, net + "_batched", inputs[net], expected[net], a.clients, a.window))
            sp, sb = summary(plain), summary(batched)
            gains = [len(b["lat"]) / max(1, len(q["lat"])) for q, b in zip(plain, batched)]
            for mode, s in [("no batching", sp), ("dynamic batching", sb)]:
                lines.append(f"| {net} | {mode} | {s['rps']:.1f} | {s['p50']:.1f} ms | {s['p99']:.1f} ms | {s['n']} | "
                             f"{s['lost']} | {s['wrong']} | {s['cpu']:.2f} ms | " + (
                                 f"{sb['rps'] / sp['rps']:.2f}x ({min(gains):.2f}x..{max(gains):.2f}x) | "
                                 f"{sp['cpu'] / sb['cpu']:.2f}x" if mode != "no batching" else " | ") + " |")
        lines.append("")
    assert stop(p) == 0

    if "memory" in parts:
        lines += [
            f"Memory: {a.memory_requests} requests of batch sizes 1..8 from 4 clients, after one request per batch "
            "size and a tenth of the requests as warm-up; server RSS at each tenth (MiB).",
            "",
            "| model | after warm-up | at each tenth | growth after warm-up |",
            "|---|---|---|---|",
        ]
        for model in ("r18_batched", "r18"):
            p, port, _ = start(a.exe, repo, "--threads", str(a.threads))
            x8 = np.concatenate([inputs["r18"][r % 4] for r in range(8)])
            reqs = {b: binary_request(model, x8[:b]) for b in range(1, 9)}
            warm = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
            for b in range(1, 9):
                assert infer(warm, reqs[b], b)[0] == 200
            counts, rss, lock = [0], [], threading.Lock()
            tenth = a.memory_requests // 10

            def memory_client(i):
                conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
                k = 0
                while True:
                    with lock:
                        if counts[0] >= a.memory_requests:
                            return
                        counts[0] += 1
                        n = counts[0]
                    b = 1 + (3 * i + 5 * k) % 8
                    k += 1
                    assert infer(conn, reqs[b], b)[0] == 200
                    if n % tenth == 0:
                        rss.append(rss_kb(p.pid))

            threads = [threading.Thread(target=memory_client, args=(i,)) for i in range(4)]
            for t in threads:
                t.start()
            for t in threads:
                t.join(timeout=3600)
            assert stop(p) == 0
            lines.append(f"| {model} | {rss[0] / 1024:.0f} | {', '.join(f'{v / 1024:.0f}' for v in rss)} | "
                         f"{(max(rss[1:]) - rss[0]) / 1024:+.1f} MiB |")
        lines.append("")

    load_after = os.getloadavg()
    head = [
        "## torchless serve (issue 20)",
        "",
        f"`/usr/bin/python3 bench/serve_bench.py --parts {a.parts} --window {a.window:g} --windows {a.windows} "
        f"--clients {a.clients} --threads {a.threads} --rounds {a.rounds} --warmup {a.warmup} --memory-requests {a.memory_requests}"
        f" --kinds {a.kinds}"
        f"{' --forward-times' if a.forward_times else ''}`, "
        f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, on loopback. Load average (1 min) "
        f"{load_before[0]:.1f} before and {load_after[0]:.1f} after, on {os.cpu_count()} cores: on a shared machine "
        "wall times are indications, CPU times and the alternating comparisons hold better.",
        "",
    ]
    text = "\n".join(head + lines).rstrip("\n") + "\n"
    print(text)
    if a.write:
        old = open(a.write).read() if os.path.exists(a.write) else ""
        section = re.compile(r"## torchless serve \(issue 20\)\n.*?(?=\n## |\Z)", re.S)
        new = section.sub(lambda _: text, old) if section.search(old) else old.rstrip("\n") + "\n\n" + text
        with open(a.write, "w") as f:
            f.write(new if new.endswith("\n") else new + "\n")


if __name__ == "__main__":
    main()
