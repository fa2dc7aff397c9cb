"""`torchless serve`: Triton's model repository extension (index, load, unload) over HTTP and
gRPC, and request timeouts (Triton's `timeout` parameter, gRPC deadlines), with real clients.

Each test runs its own server on a copy of the generated repository (so that it can add
versions and models), on free loopback ports; every bad request is followed by a good one."""
import json
import os
import shutil
import sys
import threading
import time

import grpc
import numpy as np
import pytest

from serve_util import MODELS, Server, in_flight

sys.path.insert(0, os.path.dirname(__file__))
from grpc_test import pb, pb_grpc  # noqa: E402 - the proto compiled at test time

CASES = np.load(os.path.join(MODELS, "cases.npz"))
SRC = os.path.join(MODELS, "repo")


def tensor(name, arr, datatype):
    return {"name": name, "shape": list(arr.shape), "datatype": datatype, "data": arr.flatten().tolist()}


def classify(s, model="classifier"):
    return s.infer(model, {"inputs": [tensor("x", CASES["x"][:1], "FP32")]})


def post(s, path, body=b""):
    status, _, data = s.request("POST", path, body)
    return status, json.loads(data) if data else None


def index(s, ready=None):
    status, body = post(s, "/v2/repository/index", json.dumps({} if ready is None else {"ready": ready}).encode())
    assert status == 200, body
    return {m["name"]: m for m in body}


@pytest.fixture
def repo(tmp_path):
    r = tmp_path / "repo"
    r.mkdir()
    for name in ("classifier", "slow"):
        shutil.copytree(os.path.join(SRC, name), r / name)
    return r


def test_http_index_unload_load_and_reload(repo):
    s = Server(str(repo), "--threads", "2")
    try:
        status, md = s.get_json("/v2")
        assert "model_repository" in md["extensions"]
        assert index(s)["classifier"] == {"name": "classifier", "version": "2", "state": "READY"}

        # Unload: refused with a message naming why; readiness says so; the index too.
        assert post(s, "/v2/repository/models/classifier/unload") == (200, None)
        status, body = classify(s)
        assert status == 400 and "model 'classifier' is not loaded" in body["error"] and "unloaded" in body["error"]
        status, body = s.get_json("/v2/models/classifier/ready")
        assert status == 503 and body["ready"] is False
        assert index(s)["classifier"]["state"] == "UNAVAILABLE"
        assert "classifier" not in index(s, ready=True) and "slow" in index(s, ready=True)
        # Unloading again is no error (as Triton).
        assert post(s, "/v2/repository/models/classifier/unload", b'{"parameters": {"unload_dependents": false}}')[0] == 200

        # Load: served again, the same numbers.
        assert post(s, "/v2/repository/models/classifier/load", b"{}") == (200, None)
        status, body = classify(s)
        assert status == 200
        np.testing.assert_allclose(np.array(body["outputs"][0]["data"]).reshape(1, 4), CASES["logits"][:1],
                                   rtol=1e-4, atol=1e-5)

        # Reload picks up a new version (a copy of version 1, other weights) and serves it.
        shutil.copytree(repo / "classifier" / "1", repo / "classifier" / "3")
        assert post(s, "/v2/repository/models/classifier/load")[0] == 200
        status, md = s.get_json("/v2/models/classifier")
        assert md["versions"] == ["3"]
        status, body = classify(s)
        assert status == 200 and not np.allclose(np.array(body["outputs"][0]["data"]).reshape(1, 4),
                                                 CASES["logits"][:1], rtol=1e-4, atol=1e-5)

        # A reload that fails leaves the model serving as it was, and the index tells why.
        config = (repo / "classifier" / "config.json").read_text()
        (repo / "classifier" / "config.json").write_text('{"max_batch_size": "eight"}')
        status, body = post(s, "/v2/repository/models/classifier/load")
        assert status == 400 and "failed to load model 'classifier'" in body["error"], body
        assert "max_batch_size" in body["error"]
        entry = index(s)["classifier"]
        assert entry["state"] == "READY" and "max_batch_size" in entry["reason"]
        assert classify(s)[0] == 200
        (repo / "classifier" / "config.json").write_text(config)

        # A model added to the repository after start-up: listed, not loaded, then loaded.
        shutil.copytree(os.path.join(SRC, "multi"), repo / "multi")
        assert index(s)["multi"] == {"name": "multi", "version": "1", "state": "UNAVAILABLE", "reason": "not loaded"}
        assert post(s, "/v2/repository/models/multi/load")[0] == 200
        status, body = s.infer("multi", {"inputs": [tensor("x", CASES["mx"], "FP32"), tensor("idx", CASES["idx"], "INT64"),
                                                    {"name": "scale", "shape": [1], "datatype": "FP64", "data": [2.5]}]})
        assert status == 200, body
        np.testing.assert_allclose(np.array(body["outputs"][0]["data"]).reshape(2, 3), CASES["scaled"], rtol=1e-6)
    finally:
        assert s.terminate() == 0, "".join(s.log)


@pytest.mark.parametrize("path,body,message", [
    ("/v2/repository/models/nosuch/load", b"", "no model 'nosuch' in the repository"),
    ("/v2/repository/models/nosuch/unload", b"", "unknown model 'nosuch'"),
    ("/v2/repository/models/.hidden/load", b"", "'.hidden' is not a model name"),
    ("/v2/repository/models/classifier/load", b'{"parameters": ', "malformed JSON"),
    ("/v2/repository/models/classifier/load", b"[1, 2]", "must be a JSON object"),
    ("/v2/repository/models/classifier/load", b'{"parameters": {"config": "{}"}}', "parameter 'config' is not supported"),
    ("/v2/repository/models/classifier/unload", b'{"parameters": {"unload_dependents": 3}}', "must be true or false"),
    ("/v2/repository/models/classifier/load", b'{"model": 1}', "unknown key 'model'"),
    ("/v2/repository/index", b'{"ready": "yes"}', "'ready' must be true or false"),
    ("/v2/repository/index", b"{", "malformed JSON"),
])
def test_http_repository_bad_requests(repo, path, body, message):
    s = Server(str(repo), "--threads", "1")
    try:
        status, reply = post(s, path, body)
        assert status == 400 and message in reply["error"], reply
        assert classify(s)[0] == 200  # nothing changed, the server goes on
    finally:
        assert s.terminate() == 0, "".join(s.log)


def test_grpc_repository(repo):
    s = Server(str(repo), "--threads", "1")
    channel = grpc.insecure_channel(f"127.0.0.1:{s.grpc_port}")
    stub = pb_grpc.GRPCInferenceServiceStub(channel)
    try:
        assert "model_repository" in stub.ServerMetadata(pb.ServerMetadataRequest(), timeout=30).extensions
        models = {m.name: m for m in stub.RepositoryIndex(pb.RepositoryIndexRequest(), timeout=30).models}
        assert models["classifier"].state == "READY" and models["classifier"].version == "2"
        stub.RepositoryModelUnload(pb.RepositoryModelUnloadRequest(model_name="slow"), timeout=30)
        assert not stub.ModelReady(pb.ModelReadyRequest(name="slow"), timeout=30).ready
        ready = [m.name for m in stub.RepositoryIndex(pb.RepositoryIndexRequest(ready=True), timeout=30).models]
        assert ready == ["classifier"]
        stub.RepositoryModelLoad(pb.RepositoryModelLoadRequest(model_name="slow"), timeout=120)
        assert stub.ModelReady(pb.ModelReadyRequest(name="slow"), timeout=30).ready

        # Bad input: statuses with messages, and the server goes on.
        with pytest.raises(grpc.RpcError) as e:
            stub.RepositoryModelLoad(pb.RepositoryModelLoadRequest(model_name="nosuch"), timeout=30)
        assert e.value.code() == grpc.StatusCode.NOT_FOUND and "no model 'nosuch'" in e.value.details()
        with pytest.raises(grpc.RpcError) as e:
            stub.RepositoryModelLoad(pb.RepositoryModelLoadRequest(model_name="../repo/classifier"), timeout=30)
        assert e.value.code() == grpc.StatusCode.NOT_FOUND and "is not a model name" in e.value.details()
        with pytest.raises(grpc.RpcError) as e:
            stub.RepositoryModelUnload(pb.RepositoryModelUnloadRequest(model_name=""), timeout=30)
        assert e.value.code() == grpc.StatusCode.NOT_FOUND
        req = pb.RepositoryModelLoadRequest(model_name="classifier")
        req.parameters["config"].string_param = "{}"
        with pytest.raises(grpc.RpcError) as e:
            stub.RepositoryModelLoad(req, timeout=30)
        assert e.value.code() == grpc.StatusCode.INVALID_ARGUMENT and "'config' is not supported" in e.value.details()
        for method in ("RepositoryIndex", "RepositoryModelLoad", "RepositoryModelUnload"):  # not a protobuf message
            garbled = channel.unary_unary(f"/inference.GRPCInferenceService/{method}")
            with pytest.raises(grpc.RpcError) as e:
                garbled(b"\xff\xff\xff\xff", timeout=30)
            assert e.value.code() in (grpc.StatusCode.INTERNAL, grpc.StatusCode.INVALID_ARGUMENT), e.value
        assert [m.name for m in stub.RepositoryIndex(pb.RepositoryIndexRequest(ready=True), timeout=30).models] == \
            ["classifier", "slow"]
        assert classify(s)[0] == 200
    finally:
        channel.close()
        assert s.terminate() == 0, "".join(s.log)


def slow_payload(iters, timeout_us=None):
    x = np.eye(64, dtype=np.float32) * 0.5
    p = {"inputs": [tensor("x", x, "FP32"), {"name": "iters", "shape": [1], "datatype": "INT64", "data": [iters]}]}
    if timeout_us is not None:
        p["parameters"] = {"timeout": timeout_us}
    return p


def test_timeouts(repo):
    # slow: one instance. A long request holds it; requests with a timeout behind it are
    # answered 504 / DEADLINE_EXCEEDED at their deadline, not when the instance is free.
    s = Server(str(repo), "--threads", "1")
    channel = grpc.insecure_channel(f"127.0.0.1:{s.grpc_port}")
    stub = pb_grpc.GRPCInferenceServiceStub(channel)
    try:
        # Bad timeouts are 400.
        for bad in (-1, "soon", 1.5):
            status, body = s.infer("slow", slow_payload(1, bad))
            assert status == 400 and "parameter 'timeout'" in body["error"], body

        results = {}
        long = threading.Thread(target=lambda: results.setdefault("long", s.infer("slow", slow_payload(8000))))
        long.start()
        deadline = time.time() + 60
        while in_flight(s, "slow") < 1 and time.time() < deadline:
            time.sleep(0.01)
        status, body = s.infer("slow", slow_payload(1, 20000))  # 20 ms
        assert status == 504 and "timeout passed" in body["error"] and "model 'slow'" in body["error"], body

        req = pb.ModelInferRequest(model_name="slow")
        req.inputs.add(name="x", datatype="FP32", shape=[64, 64]).contents.fp32_contents.extend([0.5] * 4096)
        req.inputs.add(name="iters", datatype="INT64", shape=[1]).contents.int64_contents.append(1)
        req.parameters["timeout"].int64_param = 20000
        with pytest.raises(grpc.RpcError) as e:
            stub.ModelInfer(req, timeout=60)
        assert e.value.code() == grpc.StatusCode.DEADLINE_EXCEEDED and "timeout passed" in e.value.details()
        del req.parameters["timeout"]
        # The client's own deadline: this request outlasts 50 ms by itself (8000 products), as
        # on a quiet machine the long request may already have left the instance free.
        req.inputs[1].contents.int64_contents[0] = 8000
        with pytest.raises(grpc.RpcError) as e:
            stub.ModelInfer(req, timeout=0.05)
        assert e.value.code() == grpc.StatusCode.DEADLINE_EXCEEDED
        req.parameters["timeout"].string_param = "soon"
        with pytest.raises(grpc.RpcError) as e:
            stub.ModelInfer(req, timeout=30)
        assert e.value.code() == grpc.StatusCode.INVALID_ARGUMENT and "parameter 'timeout'" in e.value.details()

        long.join(timeout=240)
        assert results["long"][0] == 200  # the request that held the instance is answered
        # Timed-out requests left nothing behind: the model answers, nothing is in flight.
        status, body = s.infer("slow", slow_payload(1, 60_000_000))
        assert status == 200, body
        assert in_flight(s, "slow") == 0
        # A far deadline (60 s; grpcio's timeout=) on an idle instance runs on the request's
        # thread as a request without one does, not handed to the worker: no time queued
        # (Note [Serving execution]). Near ones were queued above.
        for protocol in ("http", "grpc"):
            if protocol == "http":
                p = slow_payload(1, 60_000_000)
                p["id"] = "far-http"
                assert s.infer("slow", p)[0] == 200
            else:
                req.id = "far-grpc"
                req.inputs[1].contents.int64_contents[0] = 1
                del req.parameters["timeout"]
                assert stub.ModelInfer(req, timeout=60).outputs[0].name
            time.sleep(0.1)
            far = [l for l in s.log if f'id="far-{protocol}"' in l]
            assert far and " queue_ms=0.000 " in far[0], far
        assert any("status=504" in l for l in s.log)

        # config.json's Triton default_queue_policy: a 1-us default that requests may not
        # lengthen times every request out in the queue; DELAY is refused at load.
        cfg = json.loads((repo / "classifier" / "config.json").read_text())
        cfg["dynamic_batching"]["default_queue_policy"] = {"default_timeout_microseconds": 1,
                                                           "allow_timeout_override": True, "timeout_action": "REJECT"}
        (repo / "classifier" / "config.json").write_text(json.dumps(cfg))
        assert post(s, "/v2/repository/models/classifier/load")[0] == 200
        payload = {"inputs": [tensor("x", CASES["x"][:1], "FP32")], "parameters": {"timeout": 60_000_000}}
        status, body = s.infer("classifier", payload)
        assert status == 504 and "waiting in the queue" in body["error"], body
        cfg["dynamic_batching"]["default_queue_policy"]["timeout_action"] = "DELAY"
        (repo / "classifier" / "config.json").write_text(json.dumps(cfg))
        status, body = post(s, "/v2/repository/models/classifier/load")
        assert status == 400 and "timeout_action" in body["error"], body
    finally:
        channel.close()
        assert s.terminate() == 0, "".join(s.log)


def test_far_deadline_after_a_slow_forward(repo):
    # Whether a deadline is far (run on the request's thread) is judged against the slowest of
    # the last 64-128 forwards (Note [Serving execution]): one slow forward makes a deadline of
    # 10 times it near (queued), and 128 fast forwards later the same deadline is far again.
    s = Server(str(repo), "--threads", "1")

    def logged(rid, iters, timeout_us=None):
        p = slow_payload(iters, timeout_us)
        p["id"] = rid
        status, body = s.infer("slow", p)
        assert status == 200, body
        deadline = time.time() + 10
        while time.time() < deadline:
            lines = [l for l in s.log if f'id="{rid}"' in l]
            if lines:
                return lines[0]
            time.sleep(0.01)
        raise AssertionError(f"no log line for {rid}: " + "".join(s.log))

    try:
        line = logged("slow-one", 30000)
        forward_ms = float(line.split(" forward_ms=")[1].split()[0])
        assert forward_ms >= 60, line  # 20 times it must pass the 1.5 s below
        timeout_us = int(max(1.5, forward_ms * 10 / 1000) * 1e6)
        near = logged("near", 1, timeout_us)
        assert " queue_ms=0.000 " not in near, near
        for _ in range(2 * 64):
            assert s.infer("slow", slow_payload(1))[0] == 200
        far = logged("far", 1, timeout_us)
        assert " queue_ms=0.000 " in far, far
    finally:
        assert s.terminate() == 0, "".join(s.log)
