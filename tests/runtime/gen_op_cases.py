#!/usr/bin/env python3
"""Writes the ops oracle, keyed by schema: each case is one PyTorch op (or a few, for indexing)
as torch.jit.trace records it, with inputs and PyTorch's outputs.

    /usr/bin/python3 tests/runtime/gen_op_cases.py OUT_DIR

The format is gen_graph_cases.py's (OUT_DIR/<case>.ir is the traced graph, .npy files, and
manifest.json), run by graph_oracle_test.cpp (the runtime_ops_oracle ctest), plus:
- "schemas": the schema each operator node of the graph calls (`Node.schema()`); the test
  checks that our op table matches the same entry, then runs the graph through the
  interpreter, so the schema's kernel binding is tested with the kernel;
- "error": PyTorch raised this (the graph then ends in the node that raised): we must too;
- an input's "view": the saved base array is viewed on both sides, "T" = transpose(-1, -2),
  "S" = [..., ::2], so kernels see non-contiguous tensors.
Cases vary dtype (float, double, half, bfloat16, int64, int32, uint8, int8, bool), broadcasting,
emptiness and NaN/inf.
"""
import json
import os
import random
import sys
import warnings

import torch
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
OUT = sys.argv[1] if len(sys.argv) > 1 else "ops_cases"
sys.argv = [sys.argv[0], OUT]  # gen_graph_cases reads its own argv at import
import gen_graph_cases as g  # noqa: E402

g.OUT = OUT
os.makedirs(OUT, exist_ok=True)
torch.manual_seed(0)
random.seed(0)
CASES = []

FLOAT_TOL = {torch.float32: (1e-5, 1e-6), torch.float64: (1e-10, 1e-12),
             torch.float16: (1e-2, 1e-3), torch.bfloat16: (2e-2, 1e-2)}


def rand(shape, dtype=torch.float32, lo=-3.0, hi=3.0):
    if dtype == torch.bool:
        return torch.rand(shape) > 0.5
    if dtype.is_floating_point:
        return (torch.rand(shape, dtype=torch.float64) * (hi - lo) + lo).to(dtype)
    lo_i, hi_i = (0, 10) if dtype == torch.uint8 else (-9, 10)
    return torch.randint(lo_i, hi_i, shape, dtype=dtype)


class Input:
    """A tensor input: `base` is saved, `view` is applied on both sides."""

    def __init__(self, base, view=None):
        self.base, self.view = base, view

    def tensor(self):
        if self.view == "T":
            return self.base.transpose(-1, -2)
        if self.view == "S":
            return self.base[..., ::2]
        return self.base


def inp(shape, dtype=torch.float32, view=None, lo=-3.0, hi=3.0):
    """An input of `shape` as the op sees it, stored so that `view` makes it non-contiguous."""
    shape = list(shape)
    if view == "T":
        assert len(shape) >= 2
        base_shape = shape[:-2] + [shape[-1], shape[-2]]
    elif view == "S":
        base_shape = shape[:-1] + [shape[-1] * 2]
    else:
        base_shape = shape
    return Input(rand(base_shape, dtype, lo, hi), view)


def traced_graph(fn, tensors):
    """PyTorch's graph of fn as torch.jit.trace records it, and the error fn raised (or None,
    or a message when the graph is one PyTorch's executor cannot run).

    When fn raises, the trace aborts after the tracer inserted the failing node (with no
    outputs yet): the graph is taken from the tracing state and the node gets outputs typed by
    its schema, so the C++ side runs the same node and must raise too."""
    box = {}

    def body(*args):
        state = box["state"] = torch._C._get_tracing_state()
        try:
            return fn(*args)
        except Exception as e:  # noqa: BLE001 - PyTorch's refusal is the expected result
            torch._C._set_tracing_state(state)
            box["graph"], box["error"] = state.graph(), e
            raise

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            return torch.jit.trace(body, tuple(tensors), check_trace=False).graph, None
        except Exception:  # noqa: BLE001
            if "graph" not in box:
                # The tracer records a bool Scalar as bool, which no schema takes, and then
                # fails to finish the trace: PyTorch cannot run that graph, nor may we.
                return box["state"].graph(), INVALID
    g = box["graph"]
    failing = [n for n in g.nodes() if n.outputsSize() == 0 and not n.kind().startswith("prim::")][-1]
    for ret in node_schema(failing).split(" -> ")[1].strip("()").split(","):
        out = failing.addOutput()
        out.setType(torch._C.ListType(torch._C.TensorType.get()) if "[]" in ret else torch._C.TensorType.get())
        g.registerOutput(out)
    return g, box["error"]


INVALID = "PyTorch's executor finds no schema for a node of this graph (a bool given as a Scalar)"



def node_schema(n):
    """The schema node n calls. A bool constant given for a Scalar makes PyTorch's own lookup
    fail (see traced_graph): then the overload whose arguments take n's inputs, bool as Scalar."""
    schema = n.schema()
    if schema != "(no schema)":
        return schema
    # Only names the case: the graph is then one PyTorch refuses (see case()).
    types = [i.type() for i in n.inputs()]
    for schema in torch._C._jit_get_schemas_for_operator(n.kind()):
        args = schema.arguments
        if len(args) == len(types) and all(
                t.isSubtypeOf(a.type) or (str(a.type) == "number" and str(t) == "bool")
                for a, t in zip(args, types)):
            return str(schema)
    raise RuntimeError(f"no schema of {n.kind()} takes {[str(t) for t in types]}")


def run_as_saved(graph, tensors):
    """Runs graph in PyTorch's executor with its tensor constants as a saved archive holds
    them: clones, without eager mode's wrapped-number flag."""
    g = graph.copy()
    for n in g.nodes():
        if n.kind() == "prim::Constant" and n.hasAttribute("value") and n.kindOf("value") == "t":
            n.t_("value", n.t("value").clone())
    return torch._C._create_function_from_graph("f", g)(*tensors)


def op_nodes(g):
    """The nodes of g that call an operator of the op table (prim:: nodes are IR constructs)."""
    return [n for n in g.nodes() if not n.kind().startswith("prim::")]


def case(label, inputs, fn, tol=None):
    """Traces fn on the inputs' tensors; records PyTorch's graph, the schemas its nodes call,
    and the outputs (or the error PyTorch raised). `label` only groups cases in messages."""
    tensors = [i.tensor() if isinstance(i, Input) else i for i in inputs]
    graph, error = traced_graph(fn, tensors)
    nodes = op_nodes(graph)
    assert nodes, f"{label}: the trace calls no operator"
    # A node PyTorch finds no schema for (the tracer records a bool given as a Scalar as bool)
    # makes a graph PyTorch's executor refuses: then we must refuse it too.
    valid = all(n.schema() != "(no schema)" for n in nodes)
    schemas = [node_schema(n) for n in nodes] if valid else []
    name = f"{node_schema(nodes[-1]).split('(')[0]}#{len(CASES)}"
    out = None
    if error is None:
        # PyTorch's numbers for the graph as printed, run by its executor: a traced 0-dim
        # constant is then a plain tensor, as in a saved archive (Note [0-dim tensor constants]
        # in src/runtime/canonicalize_ops.h), not eager mode's wrapped number.
        try:
            out = run_as_saved(graph, tensors)
        except RuntimeError:  # alias analysis finds no schema: a graph no archive can hold
            valid, schemas, error = False, [], INVALID
    w = g.Writer(f"{label}_{len(CASES)}")
    ins = []
    for i in inputs:
        i = i if isinstance(i, Input) else Input(i)
        ins.append(dict(w.tensor(i.base, "in"), view=i.view))
    entry = {"name": name, "label": label, "schemas": schemas, "inputs": ins}
    if error is not None:  # PyTorch refuses: we must refuse too
        entry.update(error=str(error).split("\n")[0], outputs=[], rtol=0, atol=0)
    else:
        outs = list(out) if isinstance(out, (tuple, list)) else [out]
        dt = next((o.dtype for o in outs if o.dtype.is_floating_point), None)
        rtol, atol = tol if tol else FLOAT_TOL.get(dt, (0, 0))
        encoded = [w.tensor(o, "out") for o in outs]
        if isinstance(out, (tuple, list)):  # the graph returns one tuple
            encoded = [{"t": "tuple", "v": encoded}]
        entry.update(outputs=encoded, rtol=rtol, atol=atol)
    entry["graph"] = w.name + ".ir"
    with open(os.path.join(OUT, entry["graph"]), "w") as f:
        f.write(str(graph))
    CASES.append(entry)


def rshape(nd=None, lo=1, hi=5):
    nd = random.randint(0, 4) if nd is None else nd
    return [random.randint(lo, hi) for _ in range(nd)]


def bcast_pair():
    """Two shapes that broadcast: random dims dropped or set to 1."""
    s = rshape(random.randint(1, 4))
    a = [d if random.random() > 0.3 else 1 for d in s]
    b = [d if random.random() > 0.3 else 1 for d in s][random.randint(0, len(s) - 1):]
    return a, b


# ---------------------------------------------------------------- unary
TRANS = (1e-5, 1e-5)
UNARY = {
    "abs": torch.abs, "neg": torch.neg, "sqrt": torch.sqrt, "rsqrt": torch.rsqrt, "exp": torch.exp,
    "log": torch.log, "log1p": torch.log1p, "sin": torch.sin, "cos": torch.cos, "tan": torch.tan,
    "asin": torch.asin, "acos": torch.acos, "atan": torch.atan, "tanh": torch.tanh,
    "sigmoid": torch.sigmoid, "erf": torch.erf, "reciprocal": torch.reciprocal,
    "floor": torch.floor, "ceil": torch.ceil, "trunc": torch.trunc, "round": torch.round,
    "sign": torch.sign, "logical_not": torch.logical_not, "bitwise_not": torch.bitwise_not,
    "isnan": torch.isnan, "isinf": torch.isinf, "isfinite": torch.isfinite, "log10": torch.log10, "relu": F.relu, "relu6": F.relu6, "gelu": F.gelu,
    "gelu_tanh": lambda x: F.gelu(x, approximate="tanh"), "silu": F.silu, "hardswish": F.hardswish,
    "hardsigmoid": F.hardsigmoid, "hardtanh": F.hardtanh, "leaky_relu": F.leaky_relu,
    "elu": F.elu, "selu": F.selu, "softplus": F.softplus, "mish": F.mish,
}
DOMAIN = {"sqrt": (0.01, 5), "rsqrt": (0.1, 5), "log": (0.01, 5), "log10": (0.01, 5), "log1p": (-0.9, 5),
          "asin": (-0.99, 0.99), "acos": (-0.99, 0.99), "tan": (-1.4, 1.4), "reciprocal": (0.1, 3)}
for name, fn in UNARY.items():
    lo, hi = DOMAIN.get(name, (-3, 3))
    tol = TRANS
    case(name, [inp(rshape(), lo=lo, hi=hi)], fn, tol=tol)
    case(name, [inp([3, 4], view="T", lo=lo, hi=hi)], fn, tol=tol)
    case(name, [inp([2, 5], view="S", lo=lo, hi=hi)], fn, tol=tol)
    case(name, [inp([0, 3], lo=lo, hi=hi)], fn, tol=tol)
    case(name, [inp([7], dtype=torch.float64, lo=lo, hi=hi)], fn)
    case(name, [inp([2, 3], dtype=torch.int64)], fn, tol=TRANS)
    case(name, [inp([4], dtype=torch.bool)], fn, tol=TRANS)
    case(name, [inp([5], dtype=torch.uint8)], fn, tol=TRANS)
case("round", [inp([6], lo=-5, hi=5)], lambda x: torch.round(x, decimals=2))
case("round", [torch.tensor([0.5, 1.5, 2.5, -0.5, -1.5])], torch.round)
for name in ("isinf", "isfinite", "isnan"):
    case(name, [torch.tensor([1.0, float("inf"), -float("inf"), float("nan"), 0.0])], UNARY[name])
case("hardtanh", [inp([9])], lambda x: F.hardtanh(x, -0.5, 2.0))
case("leaky_relu", [inp([9])], lambda x: F.leaky_relu(x, 0.2))
case("elu", [inp([9])], lambda x: F.elu(x, 0.7), tol=TRANS)
case("softplus", [inp([9], lo=-30, hi=30)], lambda x: F.softplus(x, 2.0, 10.0), tol=TRANS)
case("relu", [torch.tensor([1.0, float("nan"), -2.0])], F.relu)
case("sign", [torch.tensor([1.0, float("nan"), -2.0, 0.0])], torch.sign)
case("abs", [inp([5], dtype=torch.int8)], torch.abs)
case("neg", [inp([5], dtype=torch.float16)], torch.neg)
case("add", [inp([5], dtype=torch.float16), inp([5], dtype=torch.float16)], torch.add)
case("exp", [inp([5], dtype=torch.bfloat16)], torch.exp)

# ---------------------------------------------------------------- binary
BINARY = {
    "add": torch.add, "sub": torch.sub, "mul": torch.mul, "div": torch.div,
    "div_trunc": lambda a, b: torch.div(a, b, rounding_mode="trunc"),
    "div_floor": lambda a, b: torch.div(a, b, rounding_mode="floor"),
    "remainder": torch.remainder, "fmod": torch.fmod, "pow": torch.pow, "atan2": torch.atan2,
    "maximum": torch.maximum, "minimum": torch.minimum, "eq": torch.eq, "ne": torch.ne,
    "lt": torch.lt, "le": torch.le, "gt": torch.gt, "ge": torch.ge,
    "logical_and": torch.logical_and, "logical_or": torch.logical_or, "logical_xor": torch.logical_xor,
    "bitwise_and": torch.bitwise_and, "bitwise_or": torch.bitwise_or, "bitwise_xor": torch.bitwise_xor,
}
SCALAR_OK = {"add", "sub", "mul", "div", "div_trunc", "div_floor", "remainder", "fmod", "pow",
             "eq", "ne", "lt", "le", "gt", "ge", "bitwise_and", "bitwise_or", "bitwise_xor"}
DTYPES = [torch.float32, torch.float64, torch.int64, torch.int32, torch.uint8, torch.int8, torch.bool]
for name, fn in BINARY.items():
    pos = name in ("pow",)
    for _ in range(3):
        a, b = bcast_pair()
        lo = 0.5 if pos else -3
        case(name, [inp(a, lo=lo), inp(b, lo=0.5 if name in ("div_trunc", "div_floor", "remainder", "fmod") else -3)], fn, tol=TRANS)
    case(name, [inp([3, 4], view="T", lo=0.5), inp([4], view="S", lo=0.5)], fn, tol=TRANS)
    case(name, [inp([0, 3]), inp([3])], fn)
    # type promotion: pairs of dtypes, and a 0-dim tensor against a sized one
    for da, db in [(torch.int64, torch.float32), (torch.int32, torch.int64), (torch.uint8, torch.int8),
                   (torch.bool, torch.int32), (torch.float32, torch.float64), (torch.bool, torch.bool),
                   (torch.uint8, torch.uint8), (torch.float16, torch.float32)]:
        case(name, [inp([2, 3], da, lo=1, hi=4), inp([3], db, lo=1, hi=4)], fn, tol=TRANS)
    case(name, [inp([4], torch.int32), torch.tensor(2.5, dtype=torch.float64)], fn, tol=TRANS)
    case(name, [inp([4], torch.float32, lo=0.5), torch.tensor(3, dtype=torch.int64)], fn, tol=TRANS)
    case(name, [inp([4], torch.uint8), torch.tensor(3, dtype=torch.int64)], fn)
    if name in SCALAR_OK:
        for s in (2, 2.5, -3, True):
            for dt in (torch.float32, torch.int64, torch.uint8, torch.bool):
                case(name + "_scalar", [inp([5], dt, lo=0.5)], lambda x, s=s, fn=fn: fn(x, s), tol=TRANS)
# shifts of integers (counts past the width and negative ones; uint8 / int8 / int32; a bool
# promoted by an int scalar)
case("lshift", [torch.tensor([5, -3, 12, 7, 0, -8]), torch.tensor([0, 1, 2, 63, 64, -1])], lambda a, b: a << b)
case("rshift", [torch.tensor([5, -3, 12, 7, 0, -8]), torch.tensor([0, 1, 2, 63, 64, -1])], lambda a, b: a >> b)
case("lshift", [torch.tensor([200, 3], dtype=torch.uint8), torch.tensor([1, 9], dtype=torch.uint8)], lambda a, b: a << b)
case("rshift", [torch.tensor([-128, 7], dtype=torch.int8), torch.tensor([2, 1], dtype=torch.int8)], lambda a, b: a >> b)
case("lshift_scalar", [torch.tensor([5, -3], dtype=torch.int32)], lambda a: a << 2)
case("rshift_scalar", [torch.tensor([True, False])], lambda a: a >> 1)
case("lshift", [torch.tensor([1.5]), torch.tensor([1.0])], lambda a, b: a << b)  # not implemented for 'Float'
case("rshift", [torch.tensor([True]), torch.tensor([True])], lambda a, b: a >> b)  # nor for 'Bool'
# integer division by zero, alpha, rsub, pow with negative exponents, NaN in maximum
case("div_floor", [torch.tensor([5, -5, 7]), torch.tensor([2, 2, 0])], BINARY["div_floor"])
case("remainder", [torch.tensor([5, -5, 7]), torch.tensor([-3, 3, 1])], torch.remainder)
case("fmod", [torch.tensor([5.5, -5.5, 7.0]), torch.tensor([-3.0, 3.0, 0.0])], torch.fmod)
case("remainder", [torch.tensor([5.5, -5.5, 7.0]), torch.tensor([-3.0, 3.0, 0.0])], torch.remainder)
case("div_floor", [torch.tensor([5.5, -5.5, 7.0, 0.0]), torch.tensor([-3.0, 3.0, 0.0, -2.0])], BINARY["div_floor"])
case("add", [inp([3]), inp([3])], lambda a, b: torch.add(a, b, alpha=2.5))
case("add", [inp([3], torch.int64), inp([3], torch.int64)], lambda a, b: torch.add(a, b, alpha=2.5))
case("sub", [inp([3], torch.int64), inp([3], torch.int64)], lambda a, b: torch.sub(a, b, alpha=3))
case("rsub_scalar", [inp([3])], lambda a: torch.rsub(a, 2.0))
case("pow", [torch.tensor([1, -1, 2, -1, 3]), torch.tensor([-1, -3, -2, -2, 2])], torch.pow)
case("pow_scalar", [torch.tensor([1, 2, 3])], lambda a: torch.pow(a, -1))
case("maximum", [torch.tensor([1.0, float("nan"), 3.0]), torch.tensor([float("nan"), 0.0, 5.0])], torch.maximum)
case("minimum", [torch.tensor([1.0, float("nan"), 3.0]), torch.tensor([float("nan"), 0.0, 5.0])], torch.minimum)

# ---------------------------------------------------------------- ternary
for _ in range(3):
    a, b = bcast_pair()
    case("where", [inp(a, torch.bool), inp(b), inp(a, torch.float64)], torch.where)
case("where", [inp([2, 3], torch.bool), inp([3], torch.int64), inp([2, 1], torch.float32)], torch.where)
case("where_scalar", [inp([2, 3], torch.bool), inp([3], torch.int32)], lambda c, a: torch.where(c, a, 2.5))
nanx = torch.tensor([1.0, float("nan"), 3.0, -2.0])
case("clamp", [nanx], lambda x: torch.clamp(x, 0.0, 2.0))
case("clamp", [nanx], lambda x: torch.clamp(x, min=float("nan")))
case("clamp", [nanx], lambda x: torch.clamp(x, 3.0, 1.0))
case("clamp", [inp([5], torch.int64)], lambda x: torch.clamp(x, min=0.5))
case("clamp", [inp([5], torch.int64)], lambda x: torch.clamp(x, max=2))
case("clamp", [inp([3, 4], view="T")], lambda x: torch.clamp(x, -1, 1))
case("clamp_tensor", [nanx, torch.tensor([float("nan"), 0, 0, 0.0]), torch.tensor([1.0, 1.0, 1.0, float("nan")])],
     lambda x, lo, hi: torch.clamp(x, lo, hi))
case("clamp_tensor", [inp([2, 4]), inp([4]), inp([2, 1], lo=1)], lambda x, lo, hi: torch.clamp(x, lo, hi))
case("masked_fill", [inp([3, 4], view="T"), inp([4], torch.bool)], lambda x, m: x.masked_fill(m, -7.5))
case("masked_fill", [inp([3, 4], torch.int64), inp([3, 1], torch.bool)], lambda x, m: x.masked_fill(m, 3))
# Out of place, self broadcasts with the mask (nn.Transformer's attention mask [1, T, T] filled
# under a key padding mask [N, 1, T]); in place, a mask larger than self is PyTorch's error.
case("masked_fill", [inp([1, 5, 5]), inp([8, 1, 5], torch.bool)], lambda x, m: x.masked_fill(m, float("-inf")))
case("masked_fill_tensor", [inp([1, 3]), inp([2, 1], torch.bool)], lambda x, m: x.masked_fill(m, torch.tensor(2.5)))
case("masked_fill_", [inp([1, 5, 5]), inp([8, 1, 5], torch.bool)], lambda x, m: x.clone().masked_fill_(m, 1.0))
# Distances (siamese / metric-learning models): cdist's direct form for few rows, its matmul
# form (ATen's _euclidean_dist) for p = 2 and more than 25 rows; pairwise_distance; errors.
case("cdist", [inp([3, 4]), inp([5, 4])], lambda a, b: torch.cdist(a, b))
case("cdist", [inp([2, 3, 4]), inp([1, 5, 4])], lambda a, b: torch.cdist(a, b, p=1.0))
case("cdist", [inp([3, 4]), inp([5, 4])], lambda a, b: torch.cdist(a, b, p=0.0))
case("cdist", [inp([3, 4]), inp([5, 4])], lambda a, b: torch.cdist(a, b, p=float("inf")))
case("cdist", [inp([3, 4], torch.float64), inp([5, 4], torch.float64)], lambda a, b: torch.cdist(a, b, p=3.0))
case("cdist", [inp([30, 8]), inp([6, 8])], lambda a, b: torch.cdist(a, b), tol=(1e-4, 1e-4))
case("cdist", [inp([4, 8]), inp([6, 8])], lambda a, b: torch.cdist(a, b, compute_mode="use_mm_for_euclid_dist"),
     tol=(1e-4, 1e-4))
case("cdist", [inp([3, 4]), inp([5, 3])], lambda a, b: torch.cdist(a, b))
case("cdist", [inp([3, 4]), inp([5, 4])], lambda a, b: torch.cdist(a, b, p=-1.0))
case("cdist", [inp([3, 4], torch.int64), inp([5, 4], torch.int64)], lambda a, b: torch.cdist(a, b))
case("pairwise_distance", [inp([3, 4]), inp([4])], lambda a, b: F.pairwise_distance(a, b))
case("pairwise_distance", [inp([3, 4]), inp([3, 4])], lambda a, b: F.pairwise_distance(a, b, p=1.0, keepdim=True))
# F.affine_grid (spatial transformers): 2-d and 3-d, both corner conventions; errors.
theta2 = torch.tensor([[[0.9, -0.2, 0.1], [0.3, 1.1, -0.2]], [[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]]])
theta3 = torch.rand(1, 3, 4)
case("affine_grid", [theta2], lambda t: F.affine_grid(t, [2, 3, 5, 4], align_corners=False))
case("affine_grid", [theta2], lambda t: F.affine_grid(t, [2, 3, 1, 6], align_corners=True))
case("affine_grid", [theta3], lambda t: F.affine_grid(t, [1, 2, 3, 4, 5], align_corners=False))
case("affine_grid", [theta2], lambda t: F.affine_grid(t, [3, 3, 5, 4], align_corners=False))
case("tril_indices", [inp([1])], lambda x: torch.tril_indices(4, 3, -1) + x.long())
case("triu_indices", [inp([1])], lambda x: torch.triu_indices(3, 5, 1) + x.long())
case("tril_indices", [inp([1])], lambda x: torch.tril_indices(3, 3, 5) + x.long())
# Nested tensors from a padding mask (nn.TransformerEncoder's fast path): the first
# mask.sum(1) rows of each sequence, padded again to the longest (or to output_size); a mask
# that is not left-aligned is an error with mask_check.
left = torch.tensor([[True, True, True, False, False], [True, True, False, False, False]])
gaps = torch.tensor([[True, False, True, True, False], [True, True, False, False, False]])
case("nested_from_mask", [inp([2, 5, 3]), left], lambda x, m: torch._nested_tensor_from_mask(x, m, True).to_padded_tensor(0.0))
case("nested_from_mask", [inp([2, 5, 3]), gaps], lambda x, m: torch._nested_tensor_from_mask(x, m, False).to_padded_tensor(-2.5))
case("nested_from_mask", [inp([2, 5, 3]), gaps], lambda x, m: torch._nested_tensor_from_mask(x, m, True).to_padded_tensor(0.0))
case("nested_from_mask", [inp([2, 5, 3]), left],
     lambda x, m: torch._nested_tensor_from_mask(x, m, True).to_padded_tensor(1.0, [2, 6, 4]))
case("nested_from_mask", [inp([2, 5, 3]), left],
     lambda x, m: torch._nested_tensor_from_mask(x, m, True).to_padded_tensor(1.0, [2, 2, 3]))
case("to_padded_tensor", [inp([2, 5, 3])], lambda x: x.to_padded_tensor(0.0))  # a plain tensor
for bad_x, bad_m in (([2, 5, 3], inp([2, 5])), ([2, 5, 3], torch.ones(2, 4, dtype=torch.bool)),
                     ([2, 5, 3], torch.ones(5, dtype=torch.bool)), ([2, 5], left)):
    case("nested_from_mask", [inp(bad_x), bad_m],
         lambda x, m: torch._nested_tensor_from_mask(x, m, True).to_padded_tensor(0.0))
case("lerp", [inp([2, 3]), inp([3])], lambda a, b: torch.lerp(a, b, 0.3))
case("lerp_tensor", [inp([2, 3]), inp([3]), inp([2, 1], lo=0, hi=1)], torch.lerp)
case("addcmul", [inp([2, 3]), inp([3]), inp([2, 1])], lambda s, a, b: torch.addcmul(s, a, b, value=0.5))
case("addcdiv", [inp([2, 3]), inp([3]), inp([2, 1], lo=1)], lambda s, a, b: torch.addcdiv(s, a, b, value=0.5))

# ---------------------------------------------------------------- reductions
RED_TOL = (1e-5, 1e-5)
for dt in (torch.float32, torch.float64, torch.int32, torch.bool, torch.uint8):
    case("sum", [inp([3, 4, 5], dt)], lambda x: torch.sum(x), tol=RED_TOL)
    case("sum", [inp([3, 4, 5], dt)], lambda x: torch.sum(x, [0, 2], keepdim=True), tol=RED_TOL)
    case("prod", [inp([3, 4], dt, lo=0.5, hi=1.5)], lambda x: torch.prod(x, 1), tol=RED_TOL)
    case("max_dim", [inp([3, 5], dt)], lambda x: torch.max(x, 1))
    case("min_dim", [inp([3, 5], dt)], lambda x: torch.min(x, 0, keepdim=True))
    case("amax", [inp([3, 4, 2], dt)], lambda x: torch.amax(x, [0, 2]))
    case("argmax", [inp([4, 6], dt)], lambda x: torch.argmax(x, 1))
    case("argmin", [inp([4, 6], dt)], lambda x: torch.argmin(x))
    case("cumsum", [inp([3, 4], dt)], lambda x: torch.cumsum(x, 1), tol=RED_TOL)
    case("all", [inp([3, 4], dt)], lambda x: torch.all(x, 1))
    case("any", [inp([3, 4], dt)], lambda x: torch.any(x))
case("sum", [inp([4, 6], view="T")], lambda x: torch.sum(x, 1), tol=RED_TOL)
case("sum", [inp([4, 0])], lambda x: torch.sum(x, 1))
case("sum", [inp([4, 3], torch.int32)], lambda x: torch.sum(x, 1, dtype=torch.float64))
case("mean", [inp([4, 6, 3], view="S")], lambda x: torch.mean(x, [0, -1]), tol=RED_TOL)
case("mean", [inp([4, 0])], lambda x: torch.mean(x, 1))
case("mean", [inp([4], torch.int64)], lambda x: torch.mean(x))
case("max_all", [torch.tensor([1.0, float("nan"), 3.0])], torch.max)
case("max_all", [inp([0])], torch.max)
case("max_dim", [torch.tensor([[1.0, float("nan")], [2.0, 0.0]])], lambda x: torch.max(x, 1))
case("amin", [torch.tensor([[1.0, float("nan")], [2.0, 0.0]])], lambda x: torch.amin(x, 1))
for corr in (0, 1, 2):
    case("var", [inp([5, 6])], lambda x, c=corr: torch.var(x, 1, correction=c), tol=RED_TOL)
    case("std", [inp([5, 6], view="T")], lambda x, c=corr: torch.std(x, 0, correction=c, keepdim=True), tol=RED_TOL)
case("var", [inp([5, 6])], lambda x: torch.var(x), tol=RED_TOL)
for p in (2, 1, 3, float("inf")):
    case("norm", [inp([4, 5])], lambda x, p=p: torch.norm(x, p, dim=1), tol=RED_TOL)
case("norm", [inp([4, 5])], lambda x: torch.norm(x), tol=RED_TOL)
case("norm", [inp([4, 5])], lambda x: torch.norm(x, "fro"), tol=RED_TOL)
case("norm", [inp([4, 5])], lambda x: torch.norm(x, 3, dim=1, keepdim=True, dtype=torch.float64), tol=RED_TOL)
case("norm", [inp([4, 5])], lambda x: torch.norm(x, 1, dtype=torch.float64), tol=RED_TOL)
for d in (0, 1, -1):
    case("softmax", [inp([3, 4, 5], lo=-10, hi=10)], lambda x, d=d: F.softmax(x, d), tol=RED_TOL)
    case("log_softmax", [inp([3, 4, 5], view="T", lo=-10, hi=10)], lambda x, d=d: F.log_softmax(x, d), tol=RED_TOL)
case("softmax", [inp([3, 4], torch.float32)], lambda x: F.softmax(x, 1, dtype=torch.float64))
case("softmax", [torch.tensor([[1.0, float("-inf")], [float("-inf"), float("-inf")]])], lambda x: F.softmax(x, 1))
# Long rows (oneDNN's vector path) and rows with NaN, +inf or only -inf (PyTorch's NaN rules).
case("softmax", [inp([6, 333], lo=-30, hi=30)], lambda x: F.softmax(x, -1), tol=RED_TOL)
case("log_softmax", [inp([6, 333], lo=-30, hi=30)], lambda x: F.log_softmax(x, -1), tol=RED_TOL)
_special = torch.tensor([[1.0, float("nan"), 2.0], [float("inf"), 1.0, 0.0], [float("-inf")] * 3,
                         [float("-inf"), 3.0, float("-inf")], [0.5, -0.5, 1.5]])
case("softmax", [_special], lambda x: F.softmax(x, 1))
case("log_softmax", [_special], lambda x: F.log_softmax(x, 1))
case("logsumexp", [inp([3, 4, 5], lo=-50, hi=50)], lambda x: torch.logsumexp(x, [1]), tol=RED_TOL)
case("logsumexp", [torch.tensor([[float("-inf"), float("-inf")], [float("inf"), 1.0]])], lambda x: torch.logsumexp(x, [1]))
for largest in (True, False):
    case("topk", [torch.randperm(40).float().reshape(5, 8)], lambda x, l=largest: torch.topk(x, 3, 1, l))
case("topk", [torch.tensor([3.0, float("nan"), 1.0, 2.0])], lambda x: torch.topk(x, 2))
for desc in (False, True):
    case("sort", [torch.randperm(24).reshape(4, 6).t()], lambda x, d=desc: torch.sort(x, 0, d))
    case("sort", [torch.tensor([3.0, float("nan"), 1.0, float("nan"), 2.0])], lambda x, d=desc: torch.sort(x, dim=0, descending=d, stable=True))

# ---------------------------------------------------------------- shape / indexing
case("reshape", [inp([3, 4], view="T")], lambda x: x.reshape(2, -1))
case("reshape", [inp([3, 4])], lambda x: x.reshape(5, -1))
case("view", [inp([3, 4], view="T")], lambda x: x.view(12))
case("view", [inp([2, 3, 4], view="S")], lambda x: x.view(6, 4))
case("view", [inp([2, 3, 4])], lambda x: x.view(-1, 0))
case("view", [inp([2, 3, 4]).base.permute(1, 0, 2)], lambda x: x.view(3, 2, 2, 2))
case("flatten", [inp([2, 3, 4, 5])], lambda x: torch.flatten(x, 1, 2))
case("unflatten", [inp([2, 12])], lambda x: torch.unflatten(x, 1, (3, -1)))
case("permute", [inp([2, 3, 4])], lambda x: x.permute(2, 0, 1))
case("permute", [inp([2, 3, 4])], lambda x: x.permute(2, 0, 2))
case("expand", [inp([3, 1])], lambda x: x.expand(2, -1, 4))
case("expand", [inp([3, 2])], lambda x: x.expand(3, 4))
case("squeeze", [inp([1, 3, 1])], lambda x: x.squeeze())
case("squeeze", [inp([1, 3, 1])], lambda x: x.squeeze(-1))
case("unsqueeze", [inp([3, 4], view="T")], lambda x: x.unsqueeze(-1))
case("select", [inp([3, 4])], lambda x: x.select(1, -2))
case("select", [inp([3, 4])], lambda x: x.select(0, 3))
for (s, e, st) in [(None, None, 1), (1, None, 2), (-3, -1, 1), (-100, 100, 3), (5, 2, 1), (2, 100, 1)]:
    case("slice", [inp([4, 7])], lambda x, s=s, e=e, st=st: x[:, s:e:st])
case("narrow", [inp([4, 7])], lambda x: x.narrow(1, -3, 2))
case("chunk", [inp([7, 2])], lambda x: x.chunk(3))
case("split", [inp([2, 7])], lambda x: x.split(3, 1))
case("split_with_sizes", [inp([2, 7])], lambda x: x.split([2, 5], 1))
case("unbind", [inp([3, 2])], lambda x: x.unbind(1))
case("cat", [inp([2, 3]), inp([2, 4], torch.int64), inp([2, 1], torch.float64)], lambda *t: torch.cat(t, 1))
case("cat", [inp([2, 3], view="T"), inp([0]), inp([1, 2])], lambda *t: torch.cat(t, 0))
case("cat", [inp([2, 3]), inp([2, 4])], lambda *t: torch.cat(t, 0))
case("stack", [inp([2, 3]), inp([2, 3], view="T")], lambda *t: torch.stack(t, 1))
case("index_select", [inp([4, 5], view="T"), torch.tensor([0, 3, 3, 1])], lambda x, i: x.index_select(1, i))
case("index_select", [inp([4, 5]), torch.tensor([0, 5])], lambda x, i: x.index_select(0, i))
case("gather", [inp([3, 4]), torch.randint(0, 4, (3, 2))], lambda x, i: torch.gather(x, 1, i))
case("gather", [inp([3, 4], view="T"), torch.randint(0, 3, (2, 4))], lambda x, i: torch.gather(x, 0, i))
# advanced indexing: the "mask" list says which positions hold a tensor (1) or None (0)
case("index", [inp([4, 5, 6]), torch.tensor([0, 2, -1])], lambda x, i: x[i])
case("index", [inp([4, 5, 6]), torch.tensor([[0, 2], [1, 1]])], lambda x, i: x[:, i])
case("index", [inp([4, 5, 6]), torch.tensor([0, 2]), torch.tensor([1, 5])], lambda x, i, j: x[i, :, j])
case("index", [inp([4, 5, 6]), torch.tensor([0, 2]), torch.tensor([[1], [3]])], lambda x, i, j: x[:, i, j])
case("index", [inp([4, 5]), inp([4, 5], torch.bool)], lambda x, m: x[m])
case("index", [inp([4, 5, 3]), inp([5], torch.bool)], lambda x, m: x[:, m])
case("index", [inp([4, 5]), torch.tensor([7])], lambda x, i: x[i])
def index_put_none(x, i, j, v):  # Python's index_put refuses None indices; indexing writes them
    y = x.clone()
    y[:, i, j] = v
    return y
case("index_put", [inp([4, 5]), torch.tensor([0, 2, 0]), inp([3, 5])],
     lambda x, i, v: x.index_put((i,), v, accumulate=True))
case("index_put", [inp([4, 5]), inp([4, 5], torch.bool), torch.tensor(9.0)],
     lambda x, m, v: x.index_put((m,), v))
case("index_put", [inp([4, 5, 3]), torch.tensor([1, 3]), torch.tensor([0, 2]), inp([3])], index_put_none)
case("repeat", [inp([2, 3], view="T")], lambda x: x.repeat(2, 1, 3))
case("flip", [inp([3, 4, 2])], lambda x: x.flip(0, 2))
case("roll", [inp([3, 4])], lambda x: x.roll(5))
case("roll", [inp([3, 4])], lambda x: x.roll((1, -1), (0, 1)))
case("constant_pad", [inp([2, 3, 4])], lambda x: F.pad(x, (1, 2, -1, 1), value=0.5))
case("reflection_pad", [inp([1, 2, 5, 4])], lambda x: F.pad(x, (1, 2, 3, 0), mode="reflect"))
case("reflection_pad", [inp([1, 2, 3])], lambda x: F.pad(x, (3, 0), mode="reflect"))
case("replication_pad", [inp([1, 2, 3, 4])], lambda x: F.pad(x, (2, 1, 0, 3), mode="replicate"))
# circular: wrapping, negative padding cropping first, 3-d / 4-d / 5-d inputs
case("circular_pad", [inp([1, 2, 3, 4])], lambda x: F.pad(x, (1, 2, 2, -1), mode="circular"))
case("circular_pad", [inp([2, 3, 5])], lambda x: F.pad(x, (-1, 4), mode="circular"))
case("circular_pad", [inp([2, 3, 5])], lambda x: F.pad(x, (3, -2), mode="circular"))
case("circular_pad", [inp([1, 2, 2, 3, 4])], lambda x: F.pad(x, (1, 1, 0, 2, 1, 0), mode="circular"))
case("circular_pad", [inp([1, 2, 5])], lambda x: F.pad(x, (6, 0), mode="circular"))  # PyTorch's error
case("circular_pad", [inp([1, 2, 5])], lambda x: F.pad(x, (-3, -2), mode="circular"))  # crops to empty
case("circular_pad", [inp([1, 2, 5])], lambda x: F.pad(x, (-4, -2), mode="circular"))  # PyTorch's error
case("tril", [inp([2, 3, 4])], lambda x: torch.tril(x, 1))
case("triu", [inp([3, 4], torch.int64, view="T")], lambda x: torch.triu(x, -1))
case("pixel_shuffle", [inp([2, 8, 3, 2])], lambda x: F.pixel_shuffle(x, 2))
case("pixel_unshuffle", [inp([2, 2, 4, 6])], lambda x: F.pixel_unshuffle(x, 2))
case("one_hot", [torch.tensor([[0, 3], [2, 1]])], lambda x: F.one_hot(x))
case("one_hot", [torch.tensor([0, 3])], lambda x: F.one_hot(x, 3))
case("arange", [], lambda: torch.arange(0, 1, 0.1))
case("arange", [], lambda: torch.arange(-3, 10, 4))
case("arange", [], lambda: torch.arange(10, 0, -3, dtype=torch.float64))
case("linspace", [], lambda: torch.linspace(0, 1, 7))
case("linspace", [], lambda: torch.linspace(-2, 10, 5, dtype=torch.int64))
case("eye", [], lambda: torch.eye(3, 4))
case("full", [], lambda: torch.full((2, 3), 7))
case("full", [], lambda: torch.full((2, 3), True))
case("to", [inp([3, 4], view="T", lo=-300, hi=300)], lambda x: x.to(torch.uint8) if False else x.to(torch.int32))
case("to", [inp([5], torch.int64)], lambda x: x.to(torch.bool))
case("to", [inp([5])], lambda x: x.to(torch.float16))

# ---------------------------------------------------------------- linalg
LIN_TOL = (1e-4, 1e-5)
case("mm", [inp([5, 7]), inp([7, 3])], torch.mm, tol=LIN_TOL)
case("mm", [inp([7, 5], view="T"), inp([3, 7], view="T")], torch.mm, tol=LIN_TOL)
case("mm", [inp([5, 7], torch.float64), inp([7, 3], torch.float64)], torch.mm)
case("mm", [inp([5, 7], torch.int64), inp([7, 3], torch.int64)], torch.mm)
case("mm", [inp([5, 0]), inp([0, 3])], torch.mm)
case("mm", [inp([5, 7]), inp([6, 3])], torch.mm)
case("bmm", [inp([2, 5, 7]), inp([2, 7, 3])], torch.bmm, tol=LIN_TOL)
for sa, sb in [([3], [3]), ([4, 3], [3]), ([3], [3, 4]), ([2, 1, 4, 3], [5, 3, 2]), ([3], [2, 3, 4]),
               ([2, 4, 3], [3]), ([1, 4, 3], [6, 3, 5])]:
    case("matmul", [inp(sa), inp(sb)], torch.matmul, tol=LIN_TOL)
case("matmul", [inp([2, 4, 3], torch.float64, view="T"), inp([3, 5], torch.float64)], torch.matmul)
case("addmm", [inp([3]), inp([2, 4]), inp([4, 3])], lambda s, a, b: torch.addmm(s, a, b, beta=0.5, alpha=2.0), tol=LIN_TOL)
case("linear", [inp([2, 3, 4]), inp([5, 4]), inp([5])], F.linear, tol=LIN_TOL)
case("linear", [inp([4], torch.float64), inp([5, 4], torch.float64)], F.linear)
# float linear folds leading dims into one matmul with the bias in the primitive (ops/linalg.cpp):
# transposed and sliced inputs, 4-D input, no bias, a transposed weight, a bias of another dtype.
case("linear", [inp([2, 3, 4], view="T"), inp([5, 4]), inp([5])], F.linear, tol=LIN_TOL)
case("linear", [inp([2, 2, 3, 4], view="S"), inp([5, 4], view="T"), inp([5])], F.linear, tol=LIN_TOL)
case("linear", [inp([6, 4]), inp([5, 4])], F.linear, tol=LIN_TOL)
case("linear", [inp([6, 4]), inp([5, 4]), inp([5], torch.float64)], F.linear)
case("linear", [inp([3, 4]), inp([5, 4]), inp([5], view="S")], F.linear, tol=LIN_TOL)
case("baddbmm", [inp([2, 3, 1]), inp([2, 3, 4]), inp([2, 4, 5])], lambda s, a, b: torch.baddbmm(s, a, b, beta=2.0, alpha=0.5), tol=LIN_TOL)
case("dot", [inp([6]), inp([6])], torch.dot, tol=LIN_TOL)
case("outer", [inp([3]), inp([4])], torch.outer)

# ---------------------------------------------------------------- conv
CONV_TOL = (1e-4, 1e-4)
def conv_case(n, cin, cout, spatial, k, stride=1, pad=0, dil=1, groups=1, bias=True, transposed=False, outpad=0,
              dtype=torch.float32):
    nd = len(spatial)
    x = inp([n, cin] + spatial, dtype)
    if transposed:
        w = inp([cin, cout // groups] + [k] * nd, dtype)
    else:
        w = inp([cout, cin // groups] + [k] * nd, dtype)
    b = inp([cout], dtype) if bias else None
    ins = [x, w] + ([b] if bias else [])
    def fn(x, w, b=None):
        return torch.convolution(x, w, b, [stride] * nd, [pad] * nd, [dil] * nd, transposed, [outpad] * nd, groups)
    case("convolution", ins, fn, tol=CONV_TOL if dtype == torch.float32 else None)
conv_case(2, 3, 4, [9], 3)
conv_case(1, 4, 6, [7, 8], 3, stride=2, pad=1)
conv_case(1, 4, 6, [7, 8], 3, dil=2, groups=2)
conv_case(2, 4, 4, [6, 6], 3, pad=1, groups=4, bias=False)
conv_case(1, 2, 3, [4, 5, 5], 3, pad=1, stride=2)
conv_case(1, 3, 4, [5, 6], 3, stride=2, pad=1, transposed=True, outpad=1)
conv_case(1, 4, 6, [5], 3, stride=3, pad=2, groups=2, transposed=True, dil=2)
conv_case(1, 2, 2, [3, 3, 3], 2, stride=2, transposed=True)
conv_case(1, 3, 4, [6, 5], 3, pad=1, dtype=torch.float64)
conv_case(1, 3, 4, [6, 5], 3, pad=1, transposed=True, stride=2, dtype=torch.float64)
case("convolution", [inp([1, 3, 5, 5]), inp([4, 2, 3, 3])],
     lambda x, w: torch.convolution(x, w, None, [1, 1], [0, 0], [1, 1], False, [0, 0], 1))

# ---------------------------------------------------------------- pool
POOL_TOL = (1e-5, 1e-6)
case("max_pool", [inp([2, 3, 9])], lambda x: F.max_pool1d(x, 3, 2, 1, ceil_mode=True, return_indices=True))
case("max_pool", [inp([1, 2, 7, 8], view="T")], lambda x: F.max_pool2d(x, 3, 2, 1, dilation=2, return_indices=True))
case("max_pool", [inp([1, 2, 5, 6, 7])], lambda x: F.max_pool3d(x, 2, ceil_mode=True, return_indices=True))
case("max_pool", [inp([2, 6, 6], torch.int64)], lambda x: F.max_pool2d(x, 2, return_indices=True))
case("max_pool", [torch.tensor([[[1.0, float("nan"), 3.0, 4.0]]])], lambda x: F.max_pool1d(x, 2, return_indices=True))
for ceil, cip, div in [(False, True, None), (True, False, None), (True, True, None), (False, True, 3)]:
    case("avg_pool", [inp([2, 3, 7, 6])], lambda x, c=ceil, p=cip, d=div: F.avg_pool2d(x, 3, 2, 1, c, p, d),
         tol=POOL_TOL)
case("avg_pool", [inp([2, 3, 8])], lambda x: F.avg_pool1d(x, 3, 3, 1, True, False), tol=POOL_TOL)
case("avg_pool", [inp([1, 2, 5, 5, 6])], lambda x: F.avg_pool3d(x, 2, 2, 1, True, True), tol=POOL_TOL)
for k, shape, out in [(1, [2, 3, 10], [4]), (2, [2, 3, 7, 9], [3, 4]), (2, [1, 2, 5, 5], [1, 1]), (3, [1, 2, 5, 6, 7], [2, 3, 4])]:
    fn = {1: F.adaptive_avg_pool1d, 2: F.adaptive_avg_pool2d, 3: F.adaptive_avg_pool3d}[k]
    case("adaptive_avg_pool", [inp(shape)], lambda x, fn=fn, out=out: fn(x, out), tol=POOL_TOL)
case("adaptive_max_pool", [inp([2, 3, 7, 9])], lambda x: F.adaptive_max_pool2d(x, [3, 4], return_indices=True))

# ---------------------------------------------------------------- norm
NORM_TOL = (1e-4, 1e-5)
x = inp([4, 3, 5, 2])
case("batch_norm", [x, inp([3]), inp([3], lo=0.5, hi=2), inp([3]), inp([3])],
     lambda x, m, v, w, b: F.batch_norm(x, m, v, w, b, False, 0.1, 1e-5), tol=NORM_TOL)
case("batch_norm", [inp([4, 3, 6], view="T"), inp([3]), inp([3], lo=0.5, hi=2), inp([3]), inp([3])],
     lambda x, m, v, w, b: F.batch_norm(x, m.clone(), v.clone(), w, b, True, 0.1, 1e-3), tol=NORM_TOL)
case("layer_norm", [inp([2, 3, 4, 5]), inp([4, 5]), inp([4, 5])], lambda x, w, b: F.layer_norm(x, [4, 5], w, b), tol=NORM_TOL)
case("layer_norm", [inp([3, 7, 768], lo=-5, hi=9), inp([768]), inp([768])],
     lambda x, w, b: F.layer_norm(x, [768], w, b, 1e-6), tol=NORM_TOL)
case("layer_norm", [inp([5, 33], view="T")], lambda x: F.layer_norm(x, [33]),
     tol=NORM_TOL)
case("layer_norm", [inp([4, 6]), inp([6])], lambda x, w: F.layer_norm(x, [6], w),
     tol=NORM_TOL)
case("group_norm", [inp([2, 6, 4, 3]), inp([6]), inp([6])], lambda x, w, b: F.group_norm(x, 3, w, b), tol=NORM_TOL)
case("instance_norm", [inp([2, 3, 4, 5]), inp([3]), inp([3])], lambda x, w, b: F.instance_norm(x, weight=w, bias=b), tol=NORM_TOL)

# ---------------------------------------------------------------- nn
case("embedding", [torch.tensor([[0, 3], [9, 3]]), inp([10, 4])], lambda i, w: F.embedding(i, w, padding_idx=3))
case("embedding", [torch.tensor([10]), inp([10, 4])], lambda i, w: F.embedding(i, w))
case("prelu", [inp([2, 3, 4]), inp([3])], F.prelu)
case("prelu", [inp([2, 3, 4]), inp([1])], F.prelu)
case("glu", [inp([2, 6])], lambda x: F.glu(x, -1), tol=TRANS)
case("threshold", [inp([3, 4])], lambda x: F.threshold(x, 0.5, -2.0))
for size, scale, mode, ac in [([7, 9], None, "nearest", None), (None, [2.0, 2.0], "nearest", None),
                              (None, [1.7, 0.6], "nearest", None), ([7, 9], None, "bilinear", False),
                              ([7, 9], None, "bilinear", True), (None, [1.5, 2.3], "bilinear", False),
                              ([3, 2], None, "bilinear", False)]:
    case("interpolate", [inp([2, 3, 4, 5])], lambda x, s=size, sc=scale, m=mode, a=ac: F.interpolate(x, s, sc, m, a), tol=(1e-5, 1e-5))
# Bilinear is bit-exact (Note [bilinear arithmetic] in ops/nn.cpp): float ratio, double source
# index, float weights, FMA-contracted sums. Inputs in [0, 255] like an image before quantization
# (../shared/wild/d2go_detector); C > 1 (C == 1 is channels-last to PyTorch, another kernel).
# float64 is within 1 ulp (its vectorized build contracts some sums the other way).
for shape, size, scale, ac, dt in [([1, 3, 48, 64], [32, 42], None, True, torch.float32),
                                   ([2, 3, 50, 70], None, [0.66, 1.41], False, torch.float32),
                                   ([1, 3, 20, 30], [20, 45], None, False, torch.float32),
                                   ([1, 2, 9, 11], [5, 17], None, True, torch.float64),
                                   ([1, 2, 9, 11], None, [1.7, 0.8], False, torch.float64)]:
    case("interpolate", [inp(shape, dt, lo=0.0, hi=255.0)],
         lambda x, s=size, sc=scale, a=ac: F.interpolate(x, s, sc, "bilinear", a),
         tol=(0.0, 0.0) if dt == torch.float32 else (1e-15, 0.0))
# bicubic: sizes and scales up and down, align_corners both ways, borders clamped, float64
for size, scale, ac, dt in [([7, 9], None, False, torch.float32), ([7, 9], None, True, torch.float32),
                            (None, [1.5, 2.3], False, torch.float32), ([3, 2], None, False, torch.float32),
                            (None, [0.5, 0.5], True, torch.float32), ([1, 1], None, True, torch.float32),
                            ([11, 6], None, False, torch.float64)]:
    case("interpolate", [inp([2, 3, 4, 5], dt)], lambda x, s=size, sc=scale, a=ac: F.interpolate(x, s, sc, "bicubic", a),
         tol=(1e-5, 1e-5))
# trilinear: sizes and scales, align_corners both ways, float64
for size, scale, ac, dt in [([3, 7, 9], None, False, torch.float32), ([3, 7, 9], None, True, torch.float32),
                            (None, [2.0, 1.5, 0.7], False, torch.float32), ([1, 1, 1], None, True, torch.float32),
                            ([5, 2, 6], None, False, torch.float64)]:
    case("interpolate", [inp([2, 3, 2, 4, 5], dt)], lambda x, s=size, sc=scale, a=ac: F.interpolate(x, s, sc, "trilinear", a),
         tol=(1e-5, 1e-5))
case("interpolate", [inp([2, 3, 5])], lambda x: F.interpolate(x, scale_factor=2.5))
case("interpolate", [inp([1, 2, 3, 4, 5])], lambda x: F.interpolate(x, size=[4, 3, 7]))

# grid_sampler: every mode, padding mode and align_corners, a grid past [-1, 1]; float and double
for mi, mode in enumerate(["bilinear", "nearest", "bicubic"]):
    for pi, padding in enumerate(["zeros", "border", "reflection"]):
        for ac in (False, True):
            dt = torch.float64 if (mi + pi) % 2 else torch.float32
            case("grid_sampler", [inp([2, 3, 5, 6], dt), inp([2, 4, 7, 2], dt, lo=-1.3, hi=1.3)],
                 lambda x, g, m=mode, p=padding, a=ac: F.grid_sample(x, g, mode=m, padding_mode=p, align_corners=a),
                 tol=(1e-5, 1e-5) if dt == torch.float32 else (1e-10, 1e-12))
case("grid_sampler", [inp([2, 3, 5, 6]), inp([1, 4, 7, 2])], lambda x, g: torch.grid_sampler(x, g, 0, 0, False))  # batch sizes differ: PyTorch's error

# ---------------------------------------------------------------- ops ONNX export converts (issue 14)
SPECIAL = torch.tensor([float("nan"), 0.3, -0.7, 2.0, float("inf"), -float("inf"), 0.5, -0.5])
for dt in (torch.float32, torch.float64, torch.float16):
    case("shrink", [SPECIAL.to(dt)], lambda x: (F.hardshrink(x, 0.5), F.softshrink(x, 0.5)))
    case("nan_to_num", [SPECIAL.to(dt)], lambda x: (torch.nan_to_num(x), torch.nan_to_num(x, 1.0, 2.0, -3.0)))
case("shrink", [inp([3, 4], view="T")], lambda x: (F.hardshrink(x), F.softshrink(x, 1.0)))
case("shrink", [SPECIAL], lambda x: F.softshrink(x, -0.5))  # PyTorch's error
case("shrink", [torch.tensor([1, 2])], lambda x: F.hardshrink(x))  # PyTorch's error
case("nan_to_num", [torch.tensor([3, -1])], lambda x: torch.nan_to_num(x))
case("nan_to_num", [SPECIAL.clone()], lambda x: torch.nan_to_num_(x * 1.0))
case("scalar_tensor", [inp([2])], lambda x: x + torch.scalar_tensor(3))
case("scalar_tensor", [inp([2])], lambda x: x + torch.scalar_tensor(2.5, dtype=torch.float64))
for n in (0, 1, 5, 8):
    case("hann_window", [inp([1])], lambda x, n=n: (torch.hann_window(n), torch.hann_window(n, False),
                                                    torch.hann_window(n, dtype=torch.float64)))
case("hann_window", [inp([1])], lambda x: torch.hann_window(3, dtype=torch.long))  # PyTorch's error
case("aminmax", [inp([3, 4])], lambda x: torch.aminmax(x))
case("aminmax", [inp([3, 4], torch.int64)], lambda x: torch.aminmax(x, dim=1, keepdim=True))
case("aminmax", [inp([3, 4], view="T")], lambda x: torch.aminmax(x, dim=-2))
case("aminmax", [inp([0, 4])], lambda x: torch.aminmax(x, dim=0))  # PyTorch's error
case("tensor_split", [inp([7, 3])], lambda x: torch.tensor_split(x, 3))
case("tensor_split", [inp([3, 7])], lambda x: torch.tensor_split(x, [1, 5, 9], dim=1))
case("tensor_split", [inp([7])], lambda x: torch.tensor_split(x, [5, 2]))
case("tensor_split", [inp([7]), torch.tensor(4)], lambda x, s: torch.tensor_split(x, s))
case("tensor_split", [inp([7]), torch.tensor([2, -2])], lambda x, s: torch.tensor_split(x, s))
case("numpy_T", [inp([2, 3, 4])], lambda x: x.T)
case("reshape_from_tensor", [inp([2, 6]), torch.tensor([3, -1])], lambda x, s: torch._reshape_from_tensor(x, s))
case("conj", [inp([2, 3])], lambda x: (x.resolve_conj(), x.resolve_neg(), torch.conj_physical(x)))

# The long tail of math: special functions (and torch.special's names), NaN / inf / poles
case("special_math", [inp([3, 4])], lambda x: (torch.expm1(x), torch.frac(x), torch.lgamma(x), torch.digamma(x)))
case("special_math", [inp([3, 4], lo=-0.999, hi=0.999)], lambda x: (torch.erfinv(x), torch.special.erfinv(x)))
case("special_math", [SPECIAL], lambda x: (torch.expm1(x), torch.lgamma(x), torch.digamma(x), torch.erfinv(x)))
case("special_math", [torch.tensor([0.0, -0.0, -2.0, 1.0, -1.0, 1e-30, 30.5, -3.25])],
     lambda x: (torch.digamma(x), torch.erfinv(x), torch.special.psi(x), torch.special.gammaln(x)))
case("special_math", [inp([3, 4], torch.float64)], lambda x: (torch.digamma(x), torch.erfinv(x.tanh())))
case("special_math", [inp([2, 3], torch.int64)], lambda x: (torch.expm1(x), torch.digamma(x), torch.erfinv(x)))
case("special_math", [inp([2, 3], torch.int64)], lambda x: torch.frac(x))  # PyTorch's error
case("special_math", [SPECIAL], lambda x: (torch.exp2(x), torch.erfc(x), torch.sinc(x), torch.special.entr(x),
                                        torch.special.ndtr(x), torch.special.log_ndtr(x)))
case("special_math", [inp([3, 4], lo=-6.0, hi=6.0)], lambda x: (torch.exp2(x), torch.special.erfc(x), torch.special.sinc(x),
                                                           torch.special.entr(x), torch.special.ndtr(x), torch.special.log_ndtr(x)))
case("special_math", [torch.tensor([0.0, 1.0, -2.0]), torch.tensor([2, 0, 5])], lambda x, n: (torch.sinc(x), torch.exp2(n), torch.erfc(n)))
case("xlogy", [torch.tensor([0.0, 0.0, 2.0, -1.5, 0.0]), torch.tensor([float("nan"), 0.0, 3.0, 0.5, -1.0])],
     lambda x, y: (torch.xlogy(x, y), torch.special.xlogy(x, y), torch.special.xlog1py(x, y), torch.xlogy(2, y),
                   torch.xlogy(x, 3.0), torch.special.xlog1py(x, 0.5)))
case("xlogy", [inp([3, 4], torch.int64, lo=0, hi=5), inp([4], lo=0.1, hi=3.0)], lambda x, y: torch.xlogy(x, y))
case("logit", [inp([3, 4], lo=0.01, hi=0.99)], lambda x: (torch.logit(x), torch.special.logit(x)))
case("logit", [inp([3, 4], lo=-0.5, hi=1.5)], lambda x: torch.logit(x, 0.1))
case("hypot", [inp([3, 4]), inp([4])], lambda a, b: torch.hypot(a, b))
case("hypot", [torch.tensor([3e30, 1e-30, float("inf")]), torch.tensor([4e30, 0.0, float("nan")])], lambda a, b: torch.hypot(a, b))
case("hypot", [inp([2], torch.int64), inp([2], torch.int64)], lambda a, b: torch.hypot(a, b))  # PyTorch's error
def flat(*xs):
    """The tensors of xs, (values, indices) pairs spread."""
    return tuple(t for x in xs for t in (x if isinstance(x, tuple) else (x,)))


# order statistics and running extremes, NaN included (ties avoided where PyTorch leaves the index open)
ROWS_NAN = torch.tensor([[3.0, float("nan"), 1.0, float("nan"), 0.5], [4.0, 1.0, 2.0, 0.0, -1.0]])
case("median", [inp([4, 5])], lambda x: flat(torch.median(x), torch.median(x, 1), torch.median(x, 0, keepdim=True)))
case("median", [ROWS_NAN], lambda x: flat(torch.median(x), torch.median(x, 1)))
case("median", [inp([3, 4], torch.int64, view="T")], lambda x: flat(torch.median(x.float(), -1)))
case("median", [inp([0, 3])], lambda x: torch.median(x))
case("median", [inp([0, 3])], lambda x: torch.median(x, 0))  # PyTorch's error
case("nanmedian", [torch.tensor([[3.0, float("nan"), 1.0, float("nan"), 2.0], [float("nan")] * 5, [5.0, 4.0, float("nan"), 1.0, 0.0]])],
     lambda x: flat(torch.nanmedian(x), torch.nanmedian(x, 1), torch.nanmedian(x[1])))
case("nanmedian", [inp([4, 5])], lambda x: flat(torch.nanmedian(x, 0, keepdim=True)))
case("kthvalue", [inp([4, 5])], lambda x: flat(torch.kthvalue(x, 2), torch.kthvalue(x, 4, 0, True)))
case("kthvalue", [ROWS_NAN], lambda x: flat(torch.kthvalue(x, 5, 1)))
case("kthvalue", [inp([4, 5])], lambda x: torch.kthvalue(x, 6))  # PyTorch's error
case("cummax", [inp([3, 5])], lambda x: flat(torch.cummax(x, 1), torch.cummin(x, 0)))
case("cummax", [ROWS_NAN], lambda x: flat(torch.cummax(x, 1), torch.cummin(x, 1)))
case("cummax", [torch.tensor([[3, 1, 3, 0, 5], [2, 2, 2, 7, 7]])], lambda x: flat(torch.cummax(x, 1), torch.cummin(x, -1)))
case("nansum", [ROWS_NAN], lambda x: (torch.nansum(x), torch.nansum(x, 1), torch.nansum(x, (0, 1), keepdim=True)))
case("nansum", [inp([3, 4], torch.int64)], lambda x: torch.nansum(x, 0, dtype=torch.float64))
case("diff", [inp([3, 6])], lambda x: (torch.diff(x), torch.diff(x, 2, 0), torch.diff(x, 0)))
case("diff", [inp([3, 6]), inp([3, 2]), inp([3, 1])], lambda x, p, a: torch.diff(x, 3, -1, p, a))
case("diff", [torch.tensor([True, False, False, True])], lambda x: torch.diff(x))
case("diff", [inp([3])], lambda x: torch.diff(x, 5))
case("diff", [inp([3, 4]), inp([3, 1])], lambda x, p: (torch.diff(x, 0, prepend=p), torch.diff(x, -1, prepend=p)))
# the losses' and interpolations' argument checks
case("loss", [inp([3, 4]), inp([3, 4])], lambda x, y: F.smooth_l1_loss(x, y, beta=-1.0))  # PyTorch's error
case("loss", [inp([3, 4]), inp([3, 4])], lambda x, y: F.huber_loss(x, y, delta=0.0))  # PyTorch's error
case("cross_entropy", [inp([3, 4]), torch.tensor([0, 1, 2])], lambda x, t: F.cross_entropy(x, t, label_smoothing=1.5))  # PyTorch's error
case("interpolate", [inp([1, 1, 3, 3])], lambda x: F.interpolate(x, size=(0, 2), mode="bicubic"))  # PyTorch's error
case("interpolate", [inp([1, 1, 2, 3, 3])], lambda x: F.interpolate(x, size=(0, 2, 2), mode="trilinear"))  # PyTorch's error
case("kron", [inp([2, 3]), inp([4, 2])], lambda a, b: torch.kron(a, b))
case("kron", [inp([3]), inp([2, 2, 2], torch.float64)], lambda a, b: torch.kron(a, b))
# losses, reduction none / mean / sum, with weights, ignore_index and label smoothing
REDS = ("none", "mean", "sum")
for red in REDS:
    case("loss", [inp([3, 4]), inp([3, 4])], lambda x, y, red=red: (
        F.mse_loss(x, y, reduction=red), F.l1_loss(x, y, reduction=red),
        F.smooth_l1_loss(x, y, reduction=red, beta=0.7), F.huber_loss(x, y, reduction=red, delta=0.8),
        F.soft_margin_loss(x, y.sign(), reduction=red),
        F.kl_div(F.log_softmax(x, 1), F.softmax(y, 1), reduction=red),
        F.kl_div(F.log_softmax(x, 1), F.log_softmax(y, 1), reduction=red, log_target=True),
        F.margin_ranking_loss(x, y, y.sign(), 0.3, reduction=red),
        F.hinge_embedding_loss(x, y.sign(), 0.5, reduction=red)), tol=RED_TOL)
    case("bce", [inp([3, 4], lo=0.02, hi=0.98), inp([3, 4], lo=0.0, hi=1.0), inp([4], lo=0.1, hi=2.0)],
         # (a weight for F.binary_cross_entropy fails PyTorch's tracer: _infer_size of traced sizes)
         lambda x, y, w, red=red: (F.binary_cross_entropy(x, y, reduction=red),
                                   F.binary_cross_entropy_with_logits(x * 8 - 4, y, reduction=red),
                                   F.binary_cross_entropy_with_logits(x * 8 - 4, y, w, pos_weight=w * 2, reduction=red)),
         tol=RED_TOL)
    case("cross_entropy", [inp([4, 5]), torch.tensor([1, -100, 3, 0]), inp([5], lo=0.1, hi=2.0)],
         lambda x, t, w, red=red: (F.cross_entropy(x, t, reduction=red), F.cross_entropy(x, t, w, reduction=red),
                                   F.cross_entropy(x, t, w, reduction=red, label_smoothing=0.2),
                                   F.cross_entropy(x, t, reduction=red, label_smoothing=0.1),
                                   F.nll_loss(F.log_softmax(x, 1), t, w, reduction=red)), tol=RED_TOL)
    case("cross_entropy", [inp([2, 3, 4, 5]), torch.tensor([[[0, 2, 1, 1, 0]] * 4, [[2, 2, 0, 1, 7]] * 4]).clamp(max=2)],
         lambda x, t, red=red: (F.cross_entropy(x, t, reduction=red), F.cross_entropy(x, t.clamp(max=1), reduction=red)),
         tol=RED_TOL)
    case("cross_entropy", [inp([3, 4]), inp([3, 4], lo=0.0, hi=1.0), inp([4], lo=0.1, hi=2.0)],
         lambda x, p, w, red=red: (F.cross_entropy(x, p, reduction=red), F.cross_entropy(x, p, w, reduction=red, label_smoothing=0.3)),
         tol=RED_TOL)
case("cross_entropy", [inp([5]), torch.tensor(2)], lambda x, t: F.cross_entropy(x, t), tol=RED_TOL)
case("cross_entropy", [inp([3, 4]), torch.tensor([1, 4, 0])], lambda x, t: F.nll_loss(x, t))  # PyTorch's error
case("cross_entropy", [inp([3, 4]), torch.tensor([1, 0])], lambda x, t: F.nll_loss(x, t))  # PyTorch's error
case("cross_entropy", [inp([3, 4]), torch.tensor([1, 0, 2]), inp([3])], lambda x, t, w: F.nll_loss(x, t, w))  # PyTorch's error
case("bce", [inp([2], lo=1.5, hi=3.0), inp([2], lo=0.0, hi=1.0)], lambda x, y: F.binary_cross_entropy(x, y))  # PyTorch's error
case("cosine_similarity", [inp([3, 6]), inp([1, 6])], lambda a, b: (F.cosine_similarity(a, b), F.cosine_similarity(a, b, 0)), tol=RED_TOL)
case("cosine_similarity", [inp([2, 3, 4]), torch.zeros(2, 3, 4)], lambda a, b: F.cosine_similarity(a, b, -1, 1e-6), tol=RED_TOL)
case("cosine_similarity", [torch.tensor([[0.1, 0.2, 0.0], [1.0, -2.0, 0.5]]), inp([2, 3])],
     lambda a, b: F.cosine_similarity(a, b, 1, 0.5), tol=RED_TOL)  # one norm below eps
case("cosine_similarity", [torch.tensor([[1, 2]]), torch.tensor([[3, 4]])], lambda a, b: F.cosine_similarity(a, b))  # PyTorch's error
case("logit", [torch.tensor([0.0, 0.5, 1.0, 0.2])], lambda x: torch.logit(x, 0.7))  # eps > 0.5: the low bound first
case("bce", [torch.tensor([0.3, float("nan")]), torch.tensor([1.0, 0.0])], lambda x, y: F.binary_cross_entropy(x, y))  # PyTorch's error
# Training-mode dropout with p = 0 is the input (torchvision's swin_t traces dropout(x, 0., True)).
case("dropout", [inp([2, 3, 4, 5])], lambda x: (F.dropout(x, 0.0, True), F.alpha_dropout(x, 0.0, True),
                                              F.dropout2d(x, 0.0, True), F.feature_alpha_dropout(x, 0.0, True),
                                              *torch.native_dropout(x, 0.0, True), F.dropout(x[:0], 0.5, True)))
# im2col / col2im (F.unfold / F.fold): batched and not, dilation, padding and stride; bad sizes
# raise PyTorch's errors.
case("unfold", [inp([2, 3, 7, 6])], lambda x: (F.unfold(x, 3), F.unfold(x, (2, 3), dilation=(2, 1), padding=1, stride=2),
                                             F.unfold(x[0], 2, padding=(0, 1))))
case("fold", [inp([2, 12, 12]), inp([12, 12])],
     lambda c, u: (F.fold(c, (7, 8), (2, 3), dilation=(2, 1), padding=(1, 0), stride=(2, 2)), F.fold(u, (5, 6), 2, stride=(2, 2), padding=1),
                   F.fold(F.unfold(c.reshape(2, 3, 8, 6), 3, padding=1), (8, 6), 3, padding=1)))
case("fold", [inp([2, 12, 10])], lambda c: F.fold(c, (7, 8), (2, 3), stride=2))  # PyTorch's error: blocks
case("fold", [inp([2, 10, 12])], lambda c: F.fold(c, (7, 8), (2, 3), dilation=(2, 1), padding=(1, 0), stride=(2, 2)))  # PyTorch's error: divisible
case("unfold", [inp([1, 2, 3, 3])], lambda x: F.unfold(x, 5))  # PyTorch's error: no block
# Ties in sort / argsort / topk come out in ATen's order (Note [Sort and topk orders]): the
# unstable sort's, partial_sort's (k * 64 <= n), nth_element's (sorted and not).
ties = torch.tensor([1.0, 2.0, float("nan"), 0.5] * 40).reshape(2, 80)
case("sort_ties", [ties], lambda x: flat(torch.sort(x), torch.sort(x, descending=True), torch.sort(x, stable=True),
                                       torch.sort(x, 0), torch.sort(x.t(), 0, descending=True)) + (torch.argsort(x),))
case("topk_ties", [ties], lambda x: flat(torch.topk(x, 1), torch.topk(x, 30), torch.topk(x, 30, largest=False),
                                       torch.topk(x, 50, sorted=False), torch.topk(x, 2, 0), torch.topk(x.reshape(-1), 2)))
case("adaptive_max_pool3d", [inp([2, 3, 5, 7, 6])], lambda x: flat(F.adaptive_max_pool3d(x, (2, 3, 4), return_indices=True),
                                                             F.adaptive_max_pool3d(x[0], 3, return_indices=True)))
case("rrelu", [inp([3, 4])], lambda x: (F.rrelu(x), F.rrelu(x, 0.1, 0.6), torch.rrelu(x, 0.2, 0.25, False)))
# helper-50's findings: the hyperbolic functions and their inverses; a window's last NaN is
# the max pooling index reported; PyTorch's errors of topk on bool / half, nearest resizes of
# integers, channel_shuffle and unflatten.
case("hyperbolic", [inp([3, 4], lo=-3.0, hi=3.0), inp([3, 4], lo=1.0, hi=4.0), inp([3, 4], lo=-0.9, hi=0.9)],
     lambda a, b, c: (torch.sinh(a), torch.cosh(a), torch.asinh(a), torch.acosh(b), torch.atanh(c),
                      torch.arcsinh(torch.tensor([1, -2])), torch.acosh(torch.tensor([0.5, 1.0])), torch.atanh(torch.tensor([1.0, -1.0, 2.0]))))
pool_nan = torch.tensor([[[[1.0, float("nan"), 3.0, 0.5], [2.0, 5.0, float("nan"), 1.0]]]])
case("max_pool_nan", [pool_nan], lambda x: flat(F.max_pool2d(x, 2, return_indices=True), F.max_pool2d(x, (2, 4), return_indices=True),
                                              F.adaptive_max_pool2d(x, (1, 1), return_indices=True),
                                              F.max_pool3d(x, (1, 2, 4), return_indices=True)))
case("topk_errors", [torch.tensor([True, False, True])], lambda x: torch.topk(x, 2))  # PyTorch's error
case("topk_errors", [torch.ones(4, dtype=torch.half)], lambda x: torch.topk(x, 2))  # PyTorch's error
case("nearest_errors", [torch.ones(1, 1, 4, dtype=torch.long)], lambda x: F.interpolate(x, size=6, mode="nearest-exact"))  # PyTorch's error
case("nearest_errors", [torch.ones(1, 1, 4, 4, dtype=torch.int32)], lambda x: F.interpolate(x, scale_factor=2.0))  # PyTorch's error
case("nearest_uint8", [torch.arange(8, dtype=torch.uint8).reshape(1, 2, 4)],
     lambda x: (F.interpolate(x, scale_factor=1.5), F.interpolate(x, size=7, mode="nearest-exact")))
case("channel_shuffle_errors", [inp([2, 6, 5])], lambda x: F.channel_shuffle(x, 4))  # PyTorch's error
case("channel_shuffle_errors", [inp([2, 6])], lambda x: F.channel_shuffle(x, 2))  # PyTorch's error
case("unflatten_errors", [inp([2, 6, 5])], lambda x: x.unflatten(1, (-1, -1)))  # PyTorch's error
case("unfold_errors", [inp([1, 2, 5, 5])], lambda x: F.unfold(x, 2, stride=0))  # PyTorch's error
# kthvalue's index among ties is ATen's quick_select's (Note in ops/order.cpp): rows of a few
# distinct values, NaN, every k of a short row.
kth_ties = torch.tensor([[3.0, 1.0, 2.0, 1.0, 3.0, 0.0, 2.0, 1.0, 3.0, 2.0, 0.0, 1.0, 2.0] * 3,
                         [1.0, float("nan"), 1.0, 2.0, 1.0, 0.0, float("nan"), 2.0, 1.0, 1.0, 2.0, 0.0, 1.0] * 3])
case("kthvalue_ties", [kth_ties], lambda x: flat(torch.kthvalue(x, 3), torch.kthvalue(x, 20), torch.kthvalue(x, 39),
                                               torch.kthvalue(x, 1, 0), torch.kthvalue(x.t(), 2, 0, keepdim=True),
                                               *[torch.kthvalue(x[:, :7], k) for k in range(1, 8)]))
case("mode", [kth_ties], lambda x: flat(torch.mode(x), torch.mode(x, 0), torch.mode(x[:, :7], 1, True),
                                       torch.mode(x.nan_to_num().long()), torch.mode(torch.tensor([2.0, 1.0, 2.0, 1.0, 3.0]))))
case("msort", [kth_ties], lambda x: (torch.msort(x), torch.msort(x.t()), torch.msort(x[0])))

# F.interpolate(antialias=True) (aten::_upsample_{bilinear,bicubic}2d_aa.vec): ATen's separable
# Pillow filters, weights computed as ATen's (ops::antialiasTaps). Down and up, sizes and scale
# factors, align_corners both ways, float64, an empty batch; an unchanged size still filters (a
# NaN spreads to its left and upper neighbours as PyTorch's); PyTorch's errors.
for shape, size, scale, mode, ac, dt in [
        ([2, 3, 20, 31], [7, 9], None, "bilinear", False, torch.float32),
        ([2, 3, 20, 31], [7, 9], None, "bicubic", False, torch.float32),
        ([1, 3, 17, 13], [40, 5], None, "bilinear", False, torch.float32),
        ([1, 3, 17, 13], [40, 5], None, "bicubic", True, torch.float32),
        ([1, 2, 30, 30], None, [0.37, 0.5], "bicubic", False, torch.float32),
        ([1, 2, 30, 30], None, [0.37, 1.5], "bilinear", True, torch.float32),
        ([1, 2, 64, 48], [5, 3], None, "bicubic", False, torch.float32),
        ([1, 2, 9, 11], [4, 5], None, "bicubic", False, torch.float64),
        ([1, 2, 9, 11], [4, 5], None, "bilinear", True, torch.float64),
        ([0, 2, 9, 11], [3, 4], None, "bilinear", False, torch.float32)]:
    case("interpolate_antialias", [inp(shape, dt, lo=0.0, hi=255.0)],
         lambda x, s=size, sc=scale, m=mode, a=ac: F.interpolate(x, s, sc, m, a, antialias=True),
         tol=(1e-5, 1e-4) if dt == torch.float32 else (1e-12, 1e-12))
aa_nan = torch.arange(99, dtype=torch.float32).reshape(1, 1, 9, 11)
aa_nan[0, 0, 3, 3] = float("nan")
case("interpolate_antialias", [aa_nan],
     lambda x: (F.interpolate(x, size=(9, 11), mode="bilinear", antialias=True),
                F.interpolate(x, size=(4, 11), mode="bicubic", antialias=True)), tol=(1e-5, 1e-4))
case("interpolate_antialias_errors", [torch.ones(1, 2, 8, 8, dtype=torch.uint8)],
     lambda x: F.interpolate(x, size=(4, 4), mode="bilinear", antialias=True))  # PyTorch's error
case("interpolate_antialias_errors", [inp([1, 0, 8, 8])],
     lambda x: F.interpolate(x, size=(4, 4), mode="bicubic", antialias=True))  # PyTorch's error

with open(os.path.join(OUT, "manifest.json.tmp"), "w") as f:
    json.dump({"torch": torch.__version__, "cases": CASES}, f, indent=1)
os.replace(os.path.join(OUT, "manifest.json.tmp"), os.path.join(OUT, "manifest.json"))
print(f"wrote {len(CASES)} cases to {OUT}")
