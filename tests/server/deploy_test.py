"""deploy/ (issue 20): the manifests parse, agree with each other, and name the ports, paths and
flags the server really has: each manifest's args start a real server (ports swapped for free
ones, the repository for the test one) whose probe and metrics paths answer 200."""
import os
import re

import yaml

from serve_util import MODELS, Server

DEPLOY = os.path.join(os.path.dirname(__file__), "..", "..", "deploy")


def load(path):
    with open(os.path.join(DEPLOY, path)) as f:
        return list(yaml.safe_load_all(f))


def by_kind(docs):
    return {d["kind"]: d for d in docs}


def serve_with(args):
    """A server started with a manifest's arguments: repository and ports swapped."""
    assert args[0] == "/mnt/models", args
    args = list(args[1:])
    for flag in ("--http-port", "--grpc-port", "--host"):
        i = args.index(flag)
        del args[i:i + 2]
    return Server(os.path.join(MODELS, "repo"), *args)


def check_paths(server, paths):
    for p in paths:
        status, _ = server.get(p)
        assert status == 200, p


def test_kubernetes():
    k = by_kind(load("kubernetes/torchless.yaml"))
    assert set(k) == {"Deployment", "Service", "HorizontalPodAutoscaler"}
    pod = k["Deployment"]["spec"]["template"]
    c = pod["spec"]["containers"][0]
    ports = {p["name"]: p["containerPort"] for p in c["ports"]}
    args = c["args"]
    assert ports == {"http": int(args[args.index("--http-port") + 1]), "grpc": int(args[args.index("--grpc-port") + 1])}
    assert args[args.index("--host") + 1] == "0.0.0.0"
    assert c["readinessProbe"]["httpGet"] == {"path": "/v2/health/ready", "port": "http"}
    assert c["livenessProbe"]["httpGet"] == {"path": "/v2/health/live", "port": "http"}
    annotations = pod["metadata"]["annotations"]
    assert int(annotations["prometheus.io/port"]) == ports["http"]
    assert {p["targetPort"] for p in k["Service"]["spec"]["ports"]} == set(ports)
    assert k["Service"]["spec"]["selector"] == k["Deployment"]["spec"]["selector"]["matchLabels"]
    assert k["HorizontalPodAutoscaler"]["spec"]["scaleTargetRef"]["name"] == k["Deployment"]["metadata"]["name"]
    s = serve_with(args)
    try:
        check_paths(s, [c["readinessProbe"]["httpGet"]["path"], c["livenessProbe"]["httpGet"]["path"],
                        annotations["prometheus.io/path"]])
    finally:
        assert s.terminate() == 0


def test_kserve():
    rt = by_kind(load("kserve/servingruntime.yaml"))["ServingRuntime"]
    isvc = by_kind(load("kserve/inferenceservice.yaml"))["InferenceService"]
    assert isvc["spec"]["predictor"]["model"]["runtime"] == rt["metadata"]["name"]
    fmt = isvc["spec"]["predictor"]["model"]["modelFormat"]["name"]
    assert fmt in [f["name"] for f in rt["spec"]["supportedModelFormats"]]
    assert "v2" in rt["spec"]["protocolVersions"] and isvc["spec"]["predictor"]["model"]["protocolVersion"] == "v2"
    c = rt["spec"]["containers"][0]
    args = c["args"]
    http_port = int(args[args.index("--http-port") + 1])
    assert [p["containerPort"] for p in c["ports"]] == [http_port]
    assert c["readinessProbe"]["httpGet"] == {"path": "/v2/health/ready", "port": http_port}
    assert c["livenessProbe"]["httpGet"] == {"path": "/v2/health/live", "port": http_port}
    s = serve_with(args)
    try:
        check_paths(s, ["/v2/health/ready", "/v2/health/live"])
    finally:
        assert s.terminate() == 0


def test_dockerfile():
    with open(os.path.join(DEPLOY, "Dockerfile")) as f:
        text = f.read()
    assert re.search(r"^FROM debian:bookworm AS build$", text, re.M)
    assert re.search(r"^FROM debian:bookworm-slim$", text, re.M)
    assert re.search(r"^EXPOSE 8000 8001$", text, re.M)
    assert 'ENTRYPOINT ["/opt/torchless/bin/torchless", "serve"]' in text
    assert 'CMD ["/mnt/models", "--host", "0.0.0.0", "--http-port", "8000", "--grpc-port", "8001"]' in text
    # Every package the build stage installs is one scripts/setup.sh installs too.
    with open(os.path.join(DEPLOY, "..", "scripts", "setup.sh")) as f:
        setup = f.read()
    build = text.split("FROM debian:bookworm-slim")[0]
    for pkg in re.findall(r"\b(lib[\w.+-]+-dev|protobuf-compiler(?:-grpc)?)\b", build):
        assert pkg in setup, pkg
