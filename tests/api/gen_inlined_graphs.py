#!/usr/bin/python3
"""Writes real PyTorch archives and the node kinds of their inlined graphs (PyTorch 1.13).

usage: gen_inlined_graphs.py OUT_DIR

For each model below: OUT_DIR/<name>.pt (torch.jit.save), then the archive is loaded back
with torch.jit.load and, for every method of the root module, the node kinds of two inlined
graphs are counted (nested blocks included, prim::Constant excluded) into OUT_DIR/<name>.json:

    {"inlined": {"forward": {"aten::conv2d": 20, "prim::If": 3, ...}, ...},
     "inlined_as_compiled": {"forward": {...}, ...}}

"inlined" is PyTorch's `<method>.inlined_graph`: its inliner inserts each callee's
optimized_graph(), i.e. the callee after Inline, PeepholeOptimize, constant propagation on
immutable types and ConstantPooling (preoptimizeGraph, torch/csrc/jit/api/function_impl.cpp).
"inlined_as_compiled" inlines the callees as the emitter compiled them, as our inline pass
does: the graph executor's optimization is switched off (optimized_graph() is then the plain
graph) and torch._C._jit_pass_inline runs until no call is left (it inlines one level a
run; at most 100 runs), on a second torch.jit.load of the archive so no optimized graph is
cached.

OUT_DIR/index.json lists the names. Run by the ctest fixture api.gen_corpus_graphs; the
CorpusGraphsOracle suite of api_test compares these counts with our frontend's inlined
graphs. Nothing it writes is committed.
"""
import collections
import json
import os
import shutil
import sys

import torch
import torch.nn as nn
import torchvision

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "frontend"))

from gen_corpus import LSTMLanguageModel  # noqa: E402


def build():
    """Returns {name: scripted or traced module} (a subset of gen_corpus.py's list)."""
    torch.manual_seed(0)
    tv = torchvision.models
    models = {}
    models["resnet18_traced"] = torch.jit.trace(tv.resnet18(weights=None).eval(),
                                                torch.randn(1, 3, 64, 64))
    models["resnet18_scripted"] = torch.jit.script(tv.resnet18(weights=None))
    models["mobilenet_v2_scripted"] = torch.jit.script(tv.mobilenet_v2(weights=None))
    models["fcn_resnet50_scripted"] = torch.jit.script(
        tv.segmentation.fcn_resnet50(weights=None, weights_backbone=None))
    layer = nn.TransformerEncoderLayer(d_model=32, nhead=4, dim_feedforward=64, batch_first=True)
    models["transformer_encoder_scripted"] = torch.jit.script(nn.TransformerEncoder(layer, 2))
    models["lstm_lm_scripted"] = torch.jit.script(LSTMLanguageModel())
    return models


def count_kinds(block, counts):
    for node in block.nodes():
        if node.kind() != "prim::Constant":
            counts[node.kind()] += 1
        for b in node.blocks():
            count_kinds(b, counts)


def has_calls(block):
    for node in block.nodes():
        if node.kind() in ("prim::CallMethod", "prim::CallFunction"):
            return True
        if any(has_calls(b) for b in node.blocks()):
            return True
    return False


def method_counts(module, as_compiled):
    out = {}
    for name in module._c._method_names():
        if as_compiled:
            graph = getattr(module, name).graph.copy()
            for _ in range(100):
                if not has_calls(graph):
                    break
                torch._C._jit_pass_inline(graph)
        else:
            graph = getattr(module, name).inlined_graph
        counts = collections.Counter()
        count_kinds(graph, counts)
        out[name] = dict(sorted(counts.items()))
    return out


def main(argv):
    if len(argv) != 2:
        sys.stderr.write(__doc__)
        return 2
    out = argv[1]
    tmp = out + ".tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    os.makedirs(tmp)
    names = []
    counts = {}
    for name, model in build().items():
        path = os.path.join(tmp, name + ".pt")
        torch.jit.save(model, path)
        counts[name] = {"inlined": method_counts(torch.jit.load(path), False)}
        names.append(name)
    torch._C._set_graph_executor_optimize(False)
    try:
        for name in names:
            path = os.path.join(tmp, name + ".pt")
            counts[name]["inlined_as_compiled"] = method_counts(torch.jit.load(path), True)
    finally:
        torch._C._set_graph_executor_optimize(True)
    for name in names:
        with open(os.path.join(tmp, name + ".json"), "w") as f:
            json.dump(counts[name], f, indent=1)
    with open(os.path.join(tmp, "index.json"), "w") as f:
        json.dump(names, f, indent=1)
    shutil.rmtree(out, ignore_errors=True)
    os.rename(tmp, out)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
