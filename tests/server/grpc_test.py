"""`torchless serve` over gRPC (issue 20): the v2 GRPCInferenceService through grpcio, with
the proto in src/server/grpc_predict_v2.proto compiled here by grpc_tools.protoc."""
import os
import subprocess
import sys
import tempfile

import grpc
import numpy as np
import pytest
from grpc_tools import protoc

from serve_util import BIN, MODELS, Server

PROTO_DIR = os.path.join(os.path.dirname(__file__), "..", "..", "src", "server")
_gen = tempfile.mkdtemp(prefix="torchless_grpc_")
assert protoc.main(["protoc", f"-I{PROTO_DIR}", f"--python_out={_gen}", f"--grpc_python_out={_gen}",
                    os.path.join(PROTO_DIR, "grpc_predict_v2.proto")]) == 0
sys.path.insert(0, _gen)
import grpc_predict_v2_pb2 as pb  # noqa: E402
import grpc_predict_v2_pb2_grpc as pb_grpc  # noqa: E402

CASES = np.load(os.path.join(MODELS, "cases.npz"))


@pytest.fixture(scope="module")
def stub():
    s = Server(os.path.join(MODELS, "repo"), "--threads", "2")
    channel = grpc.insecure_channel(f"127.0.0.1:{s.grpc_port}")
    stub = pb_grpc.GRPCInferenceServiceStub(channel)
    stub._port = s.grpc_port
    yield stub
    channel.close()
    assert s.terminate() == 0, "".join(s.log)


def classify_request(x, raw=True):
    req = pb.ModelInferRequest(model_name="classifier", id="g1")
    t = req.inputs.add(name="x", datatype="FP32", shape=list(x.shape))
    if raw:
        req.raw_input_contents.append(x.astype(np.float32).tobytes())
    else:
        t.contents.fp32_contents.extend(x.flatten().tolist())
    return req


def test_health_and_metadata(stub):
    assert stub.ServerLive(pb.ServerLiveRequest(), timeout=30).live
    assert stub.ServerReady(pb.ServerReadyRequest(), timeout=30).ready
    assert stub.ModelReady(pb.ModelReadyRequest(name="classifier"), timeout=30).ready
    assert stub.ModelReady(pb.ModelReadyRequest(name="classifier", version="2"), timeout=30).ready
    md = stub.ModelMetadata(pb.ModelMetadataRequest(name="classifier"), timeout=30)
    assert md.name == "classifier" and list(md.versions) == ["2"]
    assert [(t.name, t.datatype, list(t.shape)) for t in md.inputs] == [("x", "FP32", [-1, 3, 8, 8])]
    assert [(t.name, t.datatype, list(t.shape)) for t in md.outputs] == [("logits", "FP32", [-1, 4])]
    assert "binary_tensor_data" in stub.ServerMetadata(pb.ServerMetadataRequest(), timeout=30).extensions


@pytest.mark.parametrize("raw", [True, False])
def test_infer_classifier(stub, raw):
    res = stub.ModelInfer(classify_request(CASES["x"], raw), timeout=60)
    assert res.model_name == "classifier" and res.model_version == "2" and res.id == "g1"
    out = res.outputs[0]
    assert out.name == "logits" and out.datatype == "FP32" and list(out.shape) == [3, 4]
    got = np.frombuffer(res.raw_output_contents[0], dtype=np.float32).reshape(3, 4)
    np.testing.assert_allclose(got, CASES["logits"], rtol=1e-4, atol=1e-5)


def test_several_inputs_and_outputs(stub):
    req = pb.ModelInferRequest(model_name="multi")
    req.inputs.add(name="x", datatype="FP32", shape=[2, 3]).contents.fp32_contents.extend(CASES["mx"].flatten())
    req.inputs.add(name="idx", datatype="INT64", shape=[2]).contents.int64_contents.extend(CASES["idx"].tolist())
    req.inputs.add(name="scale", datatype="FP64", shape=[1]).contents.fp64_contents.append(2.5)
    res = stub.ModelInfer(req, timeout=60)
    assert [o.name for o in res.outputs] == ["scaled", "picked"]
    np.testing.assert_allclose(np.frombuffer(res.raw_output_contents[0], np.float32).reshape(2, 3), CASES["scaled"], rtol=1e-6)
    np.testing.assert_array_equal(np.frombuffer(res.raw_output_contents[1], np.float32).reshape(2, 2), CASES["picked"])


def test_outputs_equal_torchless_run(stub, tmp_path):
    # multi (three inputs of three dtypes, two outputs) over gRPC's raw_input_contents, bit for
    # bit against `torchless run` of the same archive and inputs.
    x, idx = CASES["mx"].astype(np.float32), CASES["idx"].astype(np.int64)
    np.save(tmp_path / "x.npy", x)
    np.save(tmp_path / "idx.npy", idx)
    model = os.path.join(MODELS, "repo", "multi", "1", "model.pt")
    subprocess.run([BIN, "run", model, str(tmp_path / "x.npy"), str(tmp_path / "idx.npy"), "2.5",
                    "--output-dir", str(tmp_path)], check=True, capture_output=True, timeout=120)
    ran = [np.load(tmp_path / f"out{i}.npy") for i in range(2)]
    req = pb.ModelInferRequest(model_name="multi")
    req.inputs.add(name="x", datatype="FP32", shape=[2, 3])
    req.inputs.add(name="idx", datatype="INT64", shape=[2])
    req.inputs.add(name="scale", datatype="FP64", shape=[1])
    req.raw_input_contents.extend([x.tobytes(), idx.tobytes(), np.array([2.5]).tobytes()])
    res = stub.ModelInfer(req, timeout=60)
    assert [o.name for o in res.outputs] == ["scaled", "picked"]
    for i, r in enumerate(ran):
        assert res.outputs[i].datatype == "FP32" and list(res.outputs[i].shape) == list(r.shape)
        np.testing.assert_array_equal(np.frombuffer(res.raw_output_contents[i], np.float32).reshape(r.shape), r)


def test_strings(stub):
    req = pb.ModelInferRequest(model_name="words")
    req.inputs.add(name="words", datatype="BYTES", shape=[2]).contents.bytes_contents.extend([b"ab", b"c"])
    res = stub.ModelInfer(req, timeout=60)
    raw, words = res.raw_output_contents[0], []
    while raw:
        k = int.from_bytes(raw[:4], "little")
        words.append(raw[4:4 + k])
        raw = raw[4 + k:]
    assert res.outputs[0].datatype == "BYTES" and words == [b"AB", b"C", b"2"]


def test_errors_are_statuses(stub):
    with pytest.raises(grpc.RpcError) as e:
        stub.ModelInfer(pb.ModelInferRequest(model_name="nosuch"), timeout=30)
    assert e.value.code() == grpc.StatusCode.NOT_FOUND and "unknown model 'nosuch'" in e.value.details()
    with pytest.raises(grpc.RpcError) as e:
        stub.ModelReady(pb.ModelReadyRequest(name="nosuch"), timeout=30)
    assert e.value.code() == grpc.StatusCode.NOT_FOUND
    req = classify_request(CASES["x"])
    req.raw_input_contents[0] = req.raw_input_contents[0][:-4]
    with pytest.raises(grpc.RpcError) as e:
        stub.ModelInfer(req, timeout=30)
    assert e.value.code() == grpc.StatusCode.INVALID_ARGUMENT and "input 'x'" in e.value.details()
    req = pb.ModelInferRequest(model_name="raiser")
    req.inputs.add(name="x", datatype="FP32", shape=[1]).contents.fp32_contents.append(1.0)
    req.inputs.add(name="flag", datatype="INT64", shape=[1]).contents.int64_contents.append(2)
    with pytest.raises(grpc.RpcError) as e:
        stub.ModelInfer(req, timeout=30)
    assert e.value.code() == grpc.StatusCode.INTERNAL and "bad flag 2" in e.value.details()
    # And the server goes on.
    assert stub.ModelInfer(classify_request(CASES["x"][:1]), timeout=60).outputs[0].name == "logits"


def test_triton_rpcs_not_served_are_unimplemented(stub):
    # Triton's grpc_service.proto has more RPCs on the same service than torchless serves; a
    # client calling one (tritonclient's get_model_config, get_inference_statistics ...) gets
    # UNIMPLEMENTED, and the server goes on.
    channel = grpc.insecure_channel(f"127.0.0.1:{stub._port}")
    try:
        for method in ("ModelConfig", "ModelStatistics", "SystemSharedMemoryStatus", "TraceSetting"):
            call = channel.unary_unary(f"/inference.GRPCInferenceService/{method}")
            with pytest.raises(grpc.RpcError) as e:
                call(b"", timeout=30)
            assert e.value.code() == grpc.StatusCode.UNIMPLEMENTED, (method, e.value)
    finally:
        channel.close()
    assert stub.ServerLive(pb.ServerLiveRequest(), timeout=30).live


def test_full_queue_is_unavailable(stub):
    # slow: one instance, a queue of 2; eight at once leave some refused.
    x = np.eye(64, dtype=np.float32) * 0.5

    def request():
        req = pb.ModelInferRequest(model_name="slow")
        req.inputs.add(name="x", datatype="FP32", shape=[64, 64])
        req.inputs.add(name="iters", datatype="INT64", shape=[1]).contents.int64_contents.append(3000)
        req.raw_input_contents.append(x.tobytes())
        req.raw_input_contents.append(np.array([3000], np.int64).tobytes())
        return req

    futures = [stub.ModelInfer.future(request(), timeout=240) for _ in range(8)]
    codes = []
    for f in futures:
        try:
            f.result()
            codes.append(grpc.StatusCode.OK)
        except grpc.RpcError as e:
            codes.append(e.code())
            if e.code() == grpc.StatusCode.UNAVAILABLE:
                assert "queue is full" in e.details()
    assert set(codes) <= {grpc.StatusCode.OK, grpc.StatusCode.UNAVAILABLE}, codes
    assert grpc.StatusCode.UNAVAILABLE in codes and grpc.StatusCode.OK in codes
