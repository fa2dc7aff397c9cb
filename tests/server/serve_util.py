"""Starting and stopping `torchless serve` in tests: free ports (the server picks them: port 0,
and prints them), a time limit on everything, and the process always killed at the end."""
import ctypes
import http.client
import json
import os
import signal
import subprocess
import threading
import time

BIN = os.environ.get("TORCHLESS_BIN", "torchless")
MODELS = os.environ.get("TORCHLESS_SERVE_MODELS", "")


def _die_with_parent():
    # PR_SET_PDEATHSIG: a server outlives no test runner (ctest's timeout kills pytest).
    ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGKILL)


class Server:
    def __init__(self, *args, ready=True, timeout=120):
        self.proc = subprocess.Popen([BIN, "serve", *args, "--http-port", "0", "--grpc-port", "0"],
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                     preexec_fn=_die_with_parent)
        self.log = []
        self.http_port = self.grpc_port = None
        deadline = time.time() + timeout
        # The two port lines come first on stdout.
        while self.http_port is None or self.grpc_port is None:
            line = self.proc.stdout.readline()
            if not line:
                self.kill()
                raise AssertionError("server ended before printing its ports: " + self.proc.stderr.read())
            if line.startswith("HTTP port "):
                self.http_port = int(line.split()[-1])
            elif line.startswith("gRPC port "):
                self.grpc_port = int(line.split()[-1])
            if time.time() > deadline:
                self.kill()
                raise AssertionError("no ports printed")
        self._reader = threading.Thread(target=self._read_log, daemon=True)
        self._reader.start()
        if ready:
            while True:
                status, _ = self.get("/v2/health/ready")
                if status == 200:
                    break
                if self.proc.poll() is not None or time.time() > deadline:
                    self.kill()
                    raise AssertionError("server not ready: " + "".join(self.log))
                time.sleep(0.1)

    def _read_log(self):
        for line in self.proc.stderr:
            self.log.append(line)

    def conn(self):
        return http.client.HTTPConnection("127.0.0.1", self.http_port, timeout=60)

    def request(self, method, path, body=None, headers=None):
        c = self.conn()
        try:
            c.request(method, path, body=body, headers=headers or {})
            r = c.getresponse()
            return r.status, r.getheaders(), r.read()
        finally:
            c.close()

    def get(self, path):
        status, _, body = self.request("GET", path)
        return status, body

    def get_json(self, path):
        status, body = self.get(path)
        return status, json.loads(body) if body else None

    def infer(self, model, payload, version=None):
        path = f"/v2/models/{model}" + (f"/versions/{version}" if version else "") + "/infer"
        status, _, body = self.request("POST", path, json.dumps(payload).encode(),
                                       {"Content-Type": "application/json"})
        return status, json.loads(body)

    def terminate(self, timeout=60):
        """SIGTERM; returns the exit code (kills and fails after `timeout` s)."""
        self.proc.send_signal(signal.SIGTERM)
        try:
            code = self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.kill()
            raise AssertionError("server did not stop within %d s after SIGTERM" % timeout)
        self._reader.join(timeout=10)
        return code

    def kill(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(timeout=30)


def in_flight(s, model):
    """The server's in-flight request gauge for `model` (Prometheus text of /metrics), 0 if absent."""
    _, body = s.get("/metrics")
    for line in body.decode().splitlines():
        if line.startswith('torchless_inference_requests_in_flight{model="%s"}' % model):
            return int(line.split()[-1])
    return 0
