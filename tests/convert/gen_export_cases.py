"""Writes the ONNX export oracle cases (tests/convert/export_oracle_test.cpp reads them).

Usage: gen_export_cases.py OUT_DIR [name-substring ...]

The corpus: small op-family models, torchvision classification models (scripted and traced),
fcn_resnet50, DCGAN generator / discriminator, the super-resolution net (pixel_shuffle), word
language models (Embedding + LSTM / GRU / RNN), nn.TransformerEncoder scripted in eval, a
BERT-like encoder, and a scripted model with value-dependent control flow (a loop over a
dynamic dim, a while loop and an if on tensor values). The models are this file's own copies
of tests/runtime/gen_graph_cases.py's and tests/api/gen_models.py's.

Per case, OUT_DIR/<case>/ holds
  graph.txt      an inlined graph whose parameters are extra graph inputs: the prim::GetAttr
                 chains of a scripted module's (or a trace's) inlined graph are replaced by new
                 inputs after the real ones (a list of tensors, as nn.LSTM's _flat_weights, by a
                 prim::ListConstruct of new inputs), bool/int/float/None attributes by constants;
  meta.json      {"inputs": N, "params": [names in input order], "rtol", "atol", "traced",
                  "dynamic": {input name: [axes]}, "alt": bool (alt/ holds a second input set),
                  "torch_onnx_ops": {"13": {op: count}, "17": {...}} from torch.onnx.export of
                  the eager model (an opset missing when torch.onnx.export failed),
                  "torch_onnx_error": {"13": "first line of the error"}};
  model.pt       the scripted (or traced) module, for `torchless export` (CLI cases only);
  in<i>.npy      the example inputs, p<j>.npy the parameter values,
  out<k>.npy     PyTorch's outputs for the inputs (the scripted / traced module's, flattened:
                 tuples in order, None dropped);
  alt/           (control flow) other inputs and PyTorch's outputs for them;
  dyn/           (issue 14 part 8) inputs of other sizes along the axes meta.json's "dyn"
                 declares dynamic ({input name: [axes]}), and PyTorch's outputs for them: the
                 case is also exported with those axes dynamic, and ONNX Runtime runs the file
                 at both shapes.
Models are built once and shared by their scripted and traced cases; torch.onnx.export runs
once per model and opset.
"""
import json
import os
import re
import sys
import tempfile
import warnings
from typing import Optional

import numpy as np
import onnx
import torch
import torch.nn as nn
import torch.nn.functional as F
import torchvision

warnings.filterwarnings("ignore")
torch.manual_seed(0)
torch.set_num_threads(1)
OUT = sys.argv[1]
ONLY = sys.argv[2:]
TORCH_ONNX_OPSETS = (13, 17)
# Cases `torchless export` (the CLI) also runs on: model.pt is written for these only.
CLI_CASES = {"mlp", "conv_bn_relu", "view_traced", "resnet18_scripted", "word_lm_lstm", "control_flow",
             "image_list"}


def lift_params(module, graph):
    """GetAttr chains from self -> new graph inputs (tensors) or constants (scalars)."""
    self_v = list(graph.inputs())[0]
    objs = {self_v: module}
    paths = {self_v: ""}
    params = []
    by_path = {}
    getattrs = graph.findAllNodes("prim::GetAttr", True)
    kept = set()

    def new_input(path, t, ty):
        if path not in by_path:
            inp = graph.addInput()
            inp.setDebugName("p%d" % len(params))
            inp.setType(ty)
            by_path[path] = inp
            params.append((path, t.detach().clone()))
        return by_path[path]

    for node in getattrs:
        src = node.input()
        if src not in objs:
            if src.node().kind() == "prim::CreateObject":
                kept.add(node)
                continue  # an object forward builds (ImageList): the export lowers it
            raise RuntimeError("GetAttr on something other than self: " + str(node))
        parent = objs[src]
        name = node.s("name")
        obj = getattr(parent, name)
        out = node.output()
        path = (paths[src] + "." if paths[src] else "") + name
        paths[out] = path
        if isinstance(obj, torch.Tensor):
            out.replaceAllUsesWith(new_input(path, obj, out.type()))
        elif isinstance(obj, list) and obj and all(isinstance(t, torch.Tensor) for t in obj):
            # nn.RNNBase._flat_weights: named by _flat_weights_names when the module has them.
            names = getattr(parent, "_flat_weights_names", None) if name == "_flat_weights" else None
            prefix = paths[src] + "." if paths[src] else ""
            ins = [new_input(prefix + names[i] if names else "%s.%d" % (path, i), t,
                             torch._C.TensorType.get()) for i, t in enumerate(obj)]
            lc = graph.create("prim::ListConstruct", ins)
            lc.output().setType(out.type())
            lc.insertBefore(node)
            out.replaceAllUsesWith(lc.output())
        elif isinstance(obj, dict) and all(isinstance(k, str) and isinstance(v, str) for k, v in obj.items()):
            # IntermediateLayerGetter.return_layers: a prim::DictConstruct of constants.
            ins = []
            for k, v in obj.items():
                ins += [graph.insertConstant(k), graph.insertConstant(v)]
            for i in ins:
                i.node().moveBefore(node)
            dc = graph.create("prim::DictConstruct", ins)
            dc.output().setType(out.type())
            dc.insertBefore(node)
            out.replaceAllUsesWith(dc.output())
        elif isinstance(obj, (str, tuple, list)) and all(isinstance(e, (int, float, bool, str)) for e in obj):
            # strings (StochasticDepth.mode) and int tuples (LayerNorm2d.normalized_shape).
            c = graph.insertConstant(obj)
            c.node().moveBefore(node)
            out.replaceAllUsesWith(c)
        elif isinstance(obj, (bool, int, float)) or obj is None:
            c = graph.create("prim::Constant")
            if isinstance(obj, bool):
                c.i_("value", int(obj))
                c.output().setType(torch._C.BoolType.get())
            elif isinstance(obj, int):
                c.i_("value", obj)
                c.output().setType(torch._C.IntType.get())
            elif isinstance(obj, float):
                c.f_("value", obj)
                c.output().setType(torch._C.FloatType.get())
            else:
                c.output().setType(torch._C.NoneType.get())
            c.insertBefore(node)
            out.replaceAllUsesWith(c.output())
        else:
            objs[out] = obj
    for node in reversed(getattrs):
        if node not in kept:
            node.destroy()
    graph.eraseInput(0)
    torch._C._jit_pass_dce(graph)
    return params


def count_ops(graph, out):
    for n in graph.node:
        out[n.op_type] = out.get(n.op_type, 0) + 1
        for a in n.attribute:
            if a.type == onnx.AttributeProto.GRAPH:
                count_ops(a.g, out)
    return out


def torch_onnx_counts(model, inputs, dynamic=None):
    """torch.onnx.export of the eager (or scripted) model at each opset: op counts, errors."""
    counts, errors = {}, {}
    names = ["input_%d" % i for i in range(len(inputs))]
    for opset in TORCH_ONNX_OPSETS:
        try:
            with tempfile.TemporaryDirectory() as d:
                path = os.path.join(d, "m.onnx")
                torch.onnx.export(model, tuple(inputs), path, opset_version=opset, input_names=names,
                                  dynamic_axes={names[i]: axes for i, axes in (dynamic or {}).items()})
                counts[str(opset)] = count_ops(onnx.load(path).graph, {})
        except Exception as e:  # noqa: BLE001 - recorded, not fatal
            msg = (str(e).strip().splitlines() or [""])[0][:200]
            errors[str(opset)] = "%s: %s" % (type(e).__name__, msg)
            print("  torch.onnx.export opset %d failed: %s" % (opset, errors[str(opset)]), file=sys.stderr)
    return counts, errors


def randomize_norms(model):
    """Non-trivial batch-norm statistics, so that deep nets do not output near-constants."""
    with torch.no_grad():
        for mod in model.modules():
            if isinstance(mod, nn.modules.batchnorm._BatchNorm) and mod.running_mean is not None:
                mod.running_mean.uniform_(-0.2, 0.2)
                mod.running_var.uniform_(0.5, 1.5)
                if mod.weight is not None:
                    mod.weight.uniform_(0.5, 1.5)
                    mod.bias.uniform_(-0.2, 0.2)


def flatten(v, out):
    if isinstance(v, torch.Tensor):
        out.append(v.detach())
    elif isinstance(v, list) and v and all(isinstance(e, (int, float)) for e in v):
        out.append(torch.tensor(v))  # a list of numbers is one 1-d output, as the export's
    elif isinstance(v, (tuple, list)):
        for e in v:
            flatten(e, out)
    elif isinstance(v, dict):
        for k in v:
            flatten(v[k], out)
    elif v is not None:
        raise TypeError("cannot flatten %s" % type(v))
    return out


def save_io(d, inputs, outputs):
    os.makedirs(d, exist_ok=True)
    for i, x in enumerate(inputs):
        np.save(os.path.join(d, "in%d.npy" % i), x.numpy())
    for k, y in enumerate(outputs):
        # C order: a transposed output would otherwise be written in Fortran order (np.array,
        # not np.ascontiguousarray, which makes a 0-d result 1-d).
        np.save(os.path.join(d, "out%d.npy" % k), np.array(y.numpy(), order="C"))


def wanted(name):
    return not ONLY or any(s in name for s in ONLY)


def write_model(name, model, inputs, variants=("scripted",), rtol=1e-4, atol=1e-4, dynamic=None,
                alt_inputs=None, torch_onnx=True, script_for_onnx=False, min_opset=13, dyn=None):
    """Writes one case per variant ("scripted", "traced"; a variant "" names the case `name`).
    min_opset: the oldest opset the case exports at (scatter_add's reduction needs 16).
    dyn: ({input index: [axes]}, inputs of other sizes along those axes) for dyn/."""
    cases = [(name if not v else "%s_%s" % (name, v), v) for v in variants]
    cases = [(c, v) for c, v in cases if wanted(c)]
    if not cases:
        return
    model.eval()
    randomize_norms(model)
    # torch.onnx.export traces an eager model (loops unrolled): control flow goes in scripted.
    onnx_model = torch.jit.script(model) if script_for_onnx else model
    counts, errors = torch_onnx_counts(onnx_model, inputs, dynamic) if torch_onnx else ({}, {})
    for case, variant in cases:
        d = os.path.join(OUT, case)
        os.makedirs(d, exist_ok=True)
        with torch.no_grad():
            m = torch.jit.trace(model, tuple(inputs)) if variant == "traced" else torch.jit.script(model)
            outs = flatten(m(*inputs), [])
            if case in CLI_CASES:
                torch.jit.save(m, os.path.join(d, "model.pt"))
            g = m.graph.copy()
            torch._C._jit_pass_inline(g)
            params = lift_params(m, g)
            # Arguments left out (TransformerEncoder's masks) become constants of their defaults.
            schema_args = m.forward.schema.arguments[1:]
            n_real = len(list(g.inputs())) - len(params)
            for k in range(n_real - 1, len(inputs) - 1, -1):
                c = g.insertConstant(schema_args[k].default_value)
                c.node().moveBefore(next(iter(g.nodes())))
                list(g.inputs())[k].replaceAllUsesWith(c)
                g.eraseInput(k)
            alt_outs = flatten(m(*alt_inputs), []) if alt_inputs else None
            dyn_outs = flatten(m(*dyn[1]), []) if dyn else None
        # Trace scopes (", scope: __module.conv") carry no semantics.
        text = re.sub(r", scope: [^ #\n]*", "", str(g))
        with open(os.path.join(d, "graph.txt"), "w") as f:
            f.write(text)
        save_io(d, inputs, outs)
        if alt_inputs:
            save_io(os.path.join(d, "alt"), alt_inputs, alt_outs)
        if dyn:
            save_io(os.path.join(d, "dyn"), dyn[1], dyn_outs)
        for j, (_, p) in enumerate(params):
            np.save(os.path.join(d, "p%d.npy" % j), p.numpy())
        meta = {"inputs": len(inputs), "params": [p for p, _ in params], "rtol": rtol, "atol": atol,
                "traced": variant == "traced", "dynamic": {"input_%d" % i: a for i, a in (dynamic or {}).items()},
                "alt": alt_inputs is not None, "torch_onnx_ops": counts, "torch_onnx_error": errors,
                "min_opset": min_opset,
                "dyn": {"input_%d" % i: a for i, a in (dyn[0] if dyn else {}).items()}}
        with open(os.path.join(d, "meta.json"), "w") as f:
            json.dump(meta, f, indent=1)
        print("wrote", case, "(%d params)" % len(params), flush=True)


# ---- op-family models ---------------------------------------------------------------------------

class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(16, 32)
        self.fc2 = nn.Linear(32, 4)

    def forward(self, x):
        return self.fc2(torch.relu(self.fc1(x)))


class ConvBnRelu(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3, padding=1)
        self.bn = nn.BatchNorm2d(8)
        self.relu = nn.ReLU(inplace=True)

    def forward(self, x):
        return self.relu(self.bn(self.conv(x)))


class ViewNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 4, 3, stride=2)
        self.fc = nn.Linear(4 * 3 * 3, 5)

    def forward(self, x):
        y = self.conv(x)
        y = y.view(y.size(0), -1)
        z = torch.flatten(x, 1).sum(1, keepdim=True)
        return self.fc(y) + z


class Softmaxes(nn.Module):
    def forward(self, x):
        return torch.softmax(x, dim=1), torch.log_softmax(x * 2.0, dim=-1)


class Pools(nn.Module):
    def forward(self, x):
        a = F.max_pool2d(x, 3, 2, ceil_mode=True)
        b = F.avg_pool2d(x, 2, 2, ceil_mode=False)
        c = F.max_pool1d(x.flatten(2), 4, 3, ceil_mode=True)
        d = F.adaptive_avg_pool2d(x, (3, 4))  # 10 -> 3 and 10 -> 4 do not divide
        return a, b, c, d


class LayerNormNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.ln = nn.LayerNorm(16)
        self.fc = nn.Linear(16, 16)

    def forward(self, x):
        return F.gelu(self.fc(self.ln(x)))


class EmbeddingNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(20, 8)

    def forward(self, idx):
        return self.emb(idx).mean(1)


class Elementwise(nn.Module):
    def forward(self, x, y):
        a = torch.clamp(x, -0.5, 0.5) + torch.abs(y) * 2 - torch.neg(x) / 3
        b = torch.where(x > y, torch.exp(x), torch.sigmoid(y))
        c = F.leaky_relu(x, 0.2) + F.elu(y) + F.hardswish(x) + F.relu6(y) + F.silu(x)
        d = torch.cat([a, b], 1).transpose(0, 1).contiguous()
        e = torch.tanh(x).pow(2) + torch.sin(y) + torch.cos(x)
        return d, c + e, torch.max(x, y), torch.sqrt(torch.abs(x) + 1)


class ImageListModel(nn.Module):
    """A TorchScript class object built and read inside forward: torchvision's ImageList, as the
    detection models' transform makes it (prim::CreateObject and prim::SetAttr once scripted
    and inlined), written again after it is first read."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        images = torchvision.models.detection.image_list.ImageList(
            x * 2.0, [(x.shape[-2], x.shape[-1])])
        t = images.tensors
        h = images.image_sizes[0][0]
        images.tensors = t.flip(-1)
        return images.tensors + t * float(h)


class ControlFlow(nn.Module):
    """Value-dependent control flow: a loop over a dim that is dynamic at export, a while loop
    on a tensor value, an if on a tensor value."""

    def __init__(self):
        super().__init__()
        self.w = nn.Parameter(torch.randn(4))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        acc = torch.zeros_like(x[0])
        for i in range(x.size(0)):
            acc = acc + x[i] * self.w * float(i + 1)
        while bool(acc.abs().sum() > 4.0):
            acc = acc * 0.5
        if bool(acc.sum() > 0):
            y = acc * 2.0 + 1.0
        else:
            y = acc - x.mean(0)
        return y


# ---- DCGAN, super-resolution --------------------------------------------------------------------

class DCGANGenerator(nn.Module):
    def __init__(self, nz=16, ngf=8, nc=3):
        super().__init__()
        self.main = nn.Sequential(
            nn.ConvTranspose2d(nz, ngf * 8, 4, 1, 0, bias=False), nn.BatchNorm2d(ngf * 8), nn.ReLU(True),
            nn.ConvTranspose2d(ngf * 8, ngf * 4, 4, 2, 1, bias=False), nn.BatchNorm2d(ngf * 4), nn.ReLU(True),
            nn.ConvTranspose2d(ngf * 4, ngf * 2, 4, 2, 1, bias=False), nn.BatchNorm2d(ngf * 2), nn.ReLU(True),
            nn.ConvTranspose2d(ngf * 2, ngf, 4, 2, 1, bias=False), nn.BatchNorm2d(ngf), nn.ReLU(True),
            nn.ConvTranspose2d(ngf, nc, 4, 2, 1, bias=False), nn.Tanh())

    def forward(self, x):
        return self.main(x)


class DCGANDiscriminator(nn.Module):
    def __init__(self, ndf=8, nc=3):
        super().__init__()
        self.main = nn.Sequential(
            nn.Conv2d(nc, ndf, 4, 2, 1, bias=False), nn.LeakyReLU(0.2, inplace=True),
            nn.Conv2d(ndf, ndf * 2, 4, 2, 1, bias=False), nn.BatchNorm2d(ndf * 2), nn.LeakyReLU(0.2, inplace=True),
            nn.Conv2d(ndf * 2, ndf * 4, 4, 2, 1, bias=False), nn.BatchNorm2d(ndf * 4), nn.LeakyReLU(0.2, inplace=True),
            nn.Conv2d(ndf * 4, ndf * 8, 4, 2, 1, bias=False), nn.BatchNorm2d(ndf * 8), nn.LeakyReLU(0.2, inplace=True),
            nn.Conv2d(ndf * 8, 1, 4, 1, 0, bias=False), nn.Sigmoid())

    def forward(self, x):
        return self.main(x).view(-1, 1).squeeze(1)


class SuperResolutionNet(nn.Module):
    """The torch.onnx tutorial's super-resolution model."""

    def __init__(self, upscale_factor=3):
        super().__init__()
        self.relu = nn.ReLU()
        self.conv1 = nn.Conv2d(1, 64, (5, 5), (1, 1), (2, 2))
        self.conv2 = nn.Conv2d(64, 64, (3, 3), (1, 1), (1, 1))
        self.conv3 = nn.Conv2d(64, 32, (3, 3), (1, 1), (1, 1))
        self.conv4 = nn.Conv2d(32, upscale_factor ** 2, (3, 3), (1, 1), (1, 1))
        self.pixel_shuffle = nn.PixelShuffle(upscale_factor)

    def forward(self, x):
        x = self.relu(self.conv1(x))
        x = self.relu(self.conv2(x))
        x = self.relu(self.conv3(x))
        return self.pixel_shuffle(self.conv4(x))


# ---- word language model (pytorch/examples), transformers ---------------------------------------

class RNNModel(nn.Module):
    def __init__(self, rnn_type, ntoken=50, ninp=16, nhid=24, nlayers=2):
        super().__init__()
        self.drop = nn.Dropout(0.2)
        self.encoder = nn.Embedding(ntoken, ninp)
        if rnn_type == "LSTM":
            self.rnn = nn.LSTM(ninp, nhid, nlayers, dropout=0.2)
        elif rnn_type == "GRU":
            self.rnn = nn.GRU(ninp, nhid, nlayers, dropout=0.2)
        else:
            self.rnn = nn.RNN(ninp, nhid, nlayers, nonlinearity="tanh", dropout=0.2)
        self.decoder = nn.Linear(nhid, ntoken)

    def forward(self, input: torch.Tensor):
        emb = self.drop(self.encoder(input))
        output, hidden = self.rnn(emb)
        output = self.drop(output)
        decoded = self.decoder(output)
        return F.log_softmax(decoded.view(-1, 50), dim=1)


class BertLike(nn.Module):
    """Token + position embeddings, LayerNorm, a GELU TransformerEncoder, a tanh pooler."""

    def __init__(self, vocab=100, d=32, heads=4, layers=2, maxlen=16):
        super().__init__()
        self.tok = nn.Embedding(vocab, d)
        self.pos = nn.Embedding(maxlen, d)
        self.norm = nn.LayerNorm(d)
        self.encoder = nn.TransformerEncoder(nn.TransformerEncoderLayer(d, heads, 4 * d, activation="gelu"),
                                             layers, enable_nested_tensor=False)
        self.pooler = nn.Linear(d, d)

    def forward(self, ids):
        positions = torch.arange(ids.size(1), device=ids.device).unsqueeze(0)
        x = self.norm(self.tok(ids) + self.pos(positions))
        x = self.encoder(x.transpose(0, 1)).transpose(0, 1)
        return x, torch.tanh(self.pooler(x[:, 0]))


def small_classifier(model, attr, first, sizes):
    """Replaces a torchvision classifier's big Linear layers (vgg's 25088 x 4096) by narrow ones."""
    seq = getattr(model, attr)
    linears = [i for i, m in enumerate(seq) if isinstance(m, nn.Linear)]
    dims = [first] + sizes
    for k, i in enumerate(linears):
        seq[i] = nn.Linear(dims[k], dims[k + 1])
    return model


# Inputs of the dyn/ sets come from their own generator, so that the models' weights and the
# example inputs stay what they were without them.
DYN_GEN = torch.Generator().manual_seed(14)


def dr(*shape):
    return torch.randn(*shape, generator=DYN_GEN)


def dint(high, shape):
    return torch.randint(0, high, shape, generator=DYN_GEN)


def main():
    os.makedirs(OUT, exist_ok=True)
    r = torch.randn
    both = ("scripted", "traced")
    write_model("mlp", MLP(), [r(2, 16)], ("",), dyn=({0: [0]}, [dr(5, 16)]))
    # An example of size 0 along its dynamic axis (grown runs repeat nothing: zeros).
    write_model("mlp_empty_batch", MLP(), [torch.zeros(0, 16)], ("",), dyn=({0: [0]}, [dr(3, 16)]))
    write_model("conv_bn_relu", ConvBnRelu(), [r(1, 3, 8, 8)], ("",), dyn=({0: [0, 2, 3]}, [dr(2, 3, 11, 6)]))
    write_model("view", ViewNet(), [r(2, 3, 7, 7)], ("traced",), dyn=({0: [0]}, [dr(4, 3, 7, 7)]))
    write_model("softmax", Softmaxes(), [r(3, 5)], ("",), dyn=({0: [0, 1]}, [dr(2, 8)]))
    write_model("pool_ceil", Pools(), [r(1, 2, 10, 10)], ("",), dyn=({0: [0]}, [dr(3, 2, 10, 10)]))
    write_model("layer_norm", LayerNormNet(), [r(2, 3, 16)], ("",), dyn=({0: [0, 1]}, [dr(3, 7, 16)]))
    write_model("embedding", EmbeddingNet(), [torch.randint(0, 20, (2, 5))], ("",), dyn=({0: [0, 1]}, [dint(20, (3, 8))]))
    write_model("elementwise", Elementwise(), [r(3, 4), r(3, 4)], ("",), dyn=({0: [0], 1: [0]}, [dr(5, 4), dr(5, 4)]))
    # Dynamic trip count (x:0), the while loop runs or not, the if takes either branch.
    write_model("control_flow", ControlFlow(), [r(3, 4)], ("",), dynamic={0: [0]},
                alt_inputs=[-2.0 - r(6, 4).abs()], script_for_onnx=True)

    tv = torchvision.models
    deep = dict(rtol=1e-3, atol=1e-3)  # convnets deeper than 20 layers
    write_model("resnet18", tv.resnet18(num_classes=10), [r(1, 3, 64, 64)], both, **deep,
                dyn=({0: [0, 2, 3]}, [dr(2, 3, 80, 48)]))
    write_model("resnet50", tv.resnet50(num_classes=10), [r(1, 3, 64, 64)], both, **deep)
    write_model("mobilenet_v2", tv.mobilenet_v2(num_classes=10), [r(1, 3, 64, 64)], both, **deep,
                dyn=({0: [0, 2, 3]}, [dr(2, 3, 48, 80)]))
    write_model("mobilenet_v3_small", tv.mobilenet_v3_small(num_classes=10), [r(1, 3, 64, 64)], both, **deep)
    write_model("mobilenet_v3_large", tv.mobilenet_v3_large(num_classes=10), [r(1, 3, 64, 64)], both, **deep)
    write_model("efficientnet_b0", tv.efficientnet_b0(num_classes=10), [r(1, 3, 64, 64)], both, **deep)
    write_model("densenet121", tv.densenet121(num_classes=10), [r(1, 3, 64, 64)], both, **deep)
    write_model("squeezenet1_1", tv.squeezenet1_1(num_classes=10), [r(1, 3, 64, 64)], both)
    write_model("shufflenet_v2_x0_5", tv.shufflenet_v2_x0_5(num_classes=10), [r(1, 3, 64, 64)], both, **deep,
                dyn=({0: [0, 2, 3]}, [dr(2, 3, 80, 48)]))
    write_model("googlenet", tv.googlenet(num_classes=10, aux_logits=False, init_weights=False),
                [r(1, 3, 64, 64)], both, **deep)
    write_model("inception_v3", tv.inception_v3(num_classes=10, aux_logits=False, init_weights=False),
                [r(1, 3, 80, 80)], both, **deep)
    write_model("vgg11", small_classifier(tv.vgg11(num_classes=10), "classifier", 512 * 7 * 7, [64, 64, 10]),
                [r(1, 3, 64, 64)], both)
    write_model("alexnet", small_classifier(tv.alexnet(num_classes=10), "classifier", 256 * 6 * 6, [64, 64, 10]),
                [r(1, 3, 64, 64)], both)
    write_model("regnet_y_400mf", tv.regnet_y_400mf(num_classes=10), [r(1, 3, 64, 64)], both, **deep)
    write_model("convnext_tiny", tv.convnext_tiny(num_classes=10), [r(1, 3, 64, 64)], both, **deep)
    write_model("mnasnet0_5", tv.mnasnet0_5(num_classes=10), [r(1, 3, 64, 64)], both, **deep)
    write_model("fcn_resnet50", tv.segmentation.fcn_resnet50(num_classes=5, weights_backbone=None),
                [r(1, 3, 64, 64)], ("scripted",), **deep, dyn=({0: [2, 3]}, [dr(1, 3, 48, 80)]))

    write_model("dcgan_generator", DCGANGenerator(), [r(1, 16, 1, 1)], both)
    write_model("dcgan_discriminator", DCGANDiscriminator(), [r(2, 3, 64, 64)], both, dyn=({0: [0]}, [dr(3, 3, 64, 64)]))
    write_model("super_resolution", SuperResolutionNet(), [r(1, 1, 32, 32)], both,
                dyn=({0: [0, 2, 3]}, [dr(2, 1, 24, 40)]))
    for kind in ("LSTM", "GRU", "RNN"):
        write_model("word_lm_" + kind.lower(), RNNModel(kind), [torch.randint(0, 50, (7, 2))], ("",),
                    dyn=({0: [0, 1]}, [dint(50, (5, 3))]))
    write_model("transformer_encoder",
                nn.TransformerEncoder(nn.TransformerEncoderLayer(32, 4, 64), 2, enable_nested_tensor=False),
                [r(5, 2, 32)], ("",), dyn=({0: [0, 1]}, [dr(8, 3, 32)]))
    write_model("bert_like", BertLike(), [torch.randint(0, 100, (2, 9))], ("",),
                dyn=({0: [0, 1]}, [dint(100, (3, 13))]))
    # Last: new cases draw their random inputs after the others', which stay as they were.
    write_model("image_list", ImageListModel(), [r(2, 3, 4)], ("",), dynamic={0: [0]},
                alt_inputs=[r(5, 3, 4)], torch_onnx=False)


if __name__ == "__main__":
    main()
