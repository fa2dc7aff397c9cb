#!/usr/bin/env python3
"""Regenerates tests/ir/corpus/*.ir: graphs printed by real PyTorch (str(fn.graph)).

The gtest ir_corpus_test parses each file with torchless, prints it again and compares with
the file (value numbers normalised, everything else exact, `# file:line:col` included).

Run from anywhere with the Python that has torch:

    /usr/bin/python3 tests/ir/gen_graph_corpus.py

PyTorch prints absolute file names in source comments; this script rewrites its own absolute
path to `gen_graph_corpus.py` so the committed files do not depend on the checkout location.
Nothing else in PyTorch's text is changed.
"""
import math
import os
import sys
from typing import Dict, List, NamedTuple, Optional, Tuple, Union

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "corpus")
CORPUS = {}


def corpus(name):
    def register(fn):
        CORPUS[name] = fn
        return fn
    return register


def graph_of(fn):
    return str(torch.jit.script(fn).graph)


# ---- scripted functions --------------------------------------------------------------------

def loop_if(x: torch.Tensor, n: int) -> torch.Tensor:
    y = x
    for i in range(n):
        if i % 2 == 0:
            y = y + 1.5
        else:
            y = y * 0.1
    return y


def raise_print(x: Optional[torch.Tensor], t: Tuple[int, int]) -> Tuple[int, int]:
    a, b = t
    if x is None:
        raise RuntimeError("bad")
    print("hi", a)
    return b, a


def scalar_constants(x: torch.Tensor):
    a = [1, 2]
    b = (1, "abc", None, 2.5, True)
    c = [True, False]
    d = ["a", "b\n\"q'"]
    e = [1.0, 2.5]
    g = float("inf")
    h = -0.0
    i = 1e20
    j = 3.0e-5
    k = torch.float32
    l = torch.device("cuda:1")
    m = torch.strided
    n = 2 + 3j
    return a, b, c, d, e, g, h, i, j, k, l, m, x.dtype, n


def folded_constants(x: torch.Tensor):
    a: List[int] = []
    b = (1,)
    c = ((1, 2.0), [3, 4])
    d = "\u00e9\t\x01"
    e = torch.device("cpu")
    z = float("nan")
    w = -float("inf")
    q = 1234567890123.0
    r = 0.1234
    return a, b, c, d, e, z, w, q, r, 1.0e-300, -2.5, x


def list_ops(xs: List[int], t: torch.Tensor) -> int:
    ys: List[int] = []
    for x in xs:
        ys.append(x * 2)
    ys.insert(0, len(xs))
    total = 0
    for i in range(len(ys)):
        total += ys[i]
    ys[0] = total
    ts = [t, t + 1]
    return total + ys[-1] + len(ts)


def dict_ops(d: Dict[str, torch.Tensor], k: str) -> Dict[str, int]:
    out: Dict[str, int] = {}
    for key, v in d.items():
        out[key] = v.dim()
    if k in d:
        out["has"] = 1
    out["n"] = len(d.keys())
    return out


def string_ops(a: str, b: str, n: int) -> str:
    s = "{} and {}: {}".format(a, b, n)
    parts = s.split(" ")
    joined = "-".join(parts)
    if joined.startswith("x") or a == b:
        joined = joined + "!"
    return joined[1:] + str(n) + a.upper()


def tuple_ops(t: Tuple[int, float, str]) -> Tuple[str, int]:
    a, b, c = t
    u = (a, (b, c))
    v = u[1]
    return v[1], a + int(b)


def optional_refine(x: Optional[torch.Tensor], y: Optional[int]) -> torch.Tensor:
    if x is not None:
        if y is not None:
            return x + y
        return x
    return torch.zeros(3)


def while_loop(n: int) -> int:
    i = 0
    acc = 1
    while i < n and acc < 1000:
        acc = acc * 2
        i += 1
    return acc


def break_continue(xs: List[int]) -> int:
    s = 0
    for x in xs:
        if x < 0:
            continue
        if x > 100:
            break
        s += x
    return s


def tensor_ops(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    y = torch.conv2d(x, w, None, [1, 1], [0, 0], [1, 1], 1)
    y = torch.relu(y).view(y.size(0), -1)
    z = torch.matmul(y, y.t())
    return torch.softmax(z, dim=1).sum(1, keepdim=True)


def creation_ops(x: torch.Tensor) -> torch.Tensor:
    a = torch.zeros(3, 4, dtype=torch.float, device=x.device)
    b = torch.ones([3, 4], dtype=x.dtype)
    c = torch.tensor([1.0, 2.0])
    d = torch.arange(4).to(torch.float64)
    return a + b + c.sum() + d.sum() + x.float()


def math_ops(a: int, b: float) -> float:
    c = a // 3 + a % 3
    d = b ** 2 + math.sqrt(b) - float(c)
    e = min(a, c) + max(b, d)
    f = abs(-a) * 1.5
    return e + f if a > 0 or b < 0.5 else -e


def union_isinstance(x: Union[int, str, torch.Tensor]) -> str:
    if isinstance(x, int):
        return str(x + 1)
    elif isinstance(x, str):
        return x
    return str(x.dim())


def list_comprehension(xs: List[float], n: int) -> List[float]:
    ys = [x * 2.0 for x in xs]
    zs = [float(i) for i in range(n)]
    return [a + b for a, b in zip(ys, zs)]


def enumerate_loop(xs: List[str]) -> Dict[str, int]:
    d: Dict[str, int] = {}
    for i, x in enumerate(xs):
        d[x] = i
    return d


def assert_msg(x: torch.Tensor) -> torch.Tensor:
    assert x.dim() == 2, "expected a matrix"
    torch._assert(x.size(0) > 0, "empty")
    return x.t()


def annotate_empty(x: torch.Tensor) -> Tuple[List[int], Dict[str, float], Optional[int]]:
    a = torch.jit.annotate(List[int], [])
    b = torch.jit.annotate(Dict[str, float], {})
    c: Optional[int] = None
    if x.numel() > 2:
        c = 3
    return a, b, c


def fork_wait(x: torch.Tensor) -> torch.Tensor:
    fut = torch.jit.fork(torch.neg, x)
    return torch.jit.wait(fut) + 1


class Point(NamedTuple):
    x: float
    y: float


def named_tuple(a: float) -> float:
    p = Point(a, 2.0)
    return p.x + p.y


@torch.jit.script
class Counter:
    def __init__(self, start: int):
        self.count = start

    def bump(self, n: int) -> int:
        self.count += n
        return self.count


def script_class(n: int) -> int:
    c = Counter(n)
    return c.bump(2)


def device_dtype(x: torch.Tensor) -> Tuple[torch.device, int, bool]:
    return x.device, x.dtype, x.requires_grad


for _name, _fn in [
        ("loop_if", loop_if), ("raise_print", raise_print), ("scalar_constants", scalar_constants),
        ("list_ops", list_ops), ("dict_ops", dict_ops), ("string_ops", string_ops),
        ("tuple_ops", tuple_ops), ("optional_refine", optional_refine), ("while_loop", while_loop),
        ("break_continue", break_continue), ("tensor_ops", tensor_ops),
        ("creation_ops", creation_ops), ("math_ops", math_ops),
        ("union_isinstance", union_isinstance), ("list_comprehension", list_comprehension),
        ("enumerate_loop", enumerate_loop), ("assert_msg", assert_msg),
        ("annotate_empty", annotate_empty), ("fork_wait", fork_wait), ("named_tuple", named_tuple),
        ("script_class", script_class), ("device_dtype", device_dtype)]:
    corpus(_name)(lambda fn=_fn: graph_of(fn))


@corpus("folded_constants")
def _folded():
    s = torch.jit.script(folded_constants)
    torch._C._jit_pass_constant_propagation(s.graph)
    return str(s.graph)


@corpus("list_constants_folded")
def _list_constants():
    s = torch.jit.script(scalar_constants)
    torch._C._jit_pass_constant_propagation(s.graph)
    return str(s.graph)


# ---- modules -------------------------------------------------------------------------------

class Sub(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(4, 3)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(self.lin(x))


class Top(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.sub = Sub()
        self.scale = 2.0
        self.names: List[str] = ["a", "b"]

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.sub(x) * self.scale
        if len(self.names) > 1:
            y = y + 1
        return y


@corpus("module_forward")
def _module():
    return str(torch.jit.script(Top()).graph)


class Consts(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.a = torch.tensor([1.5])
        self.b = torch.tensor([1, 2, 3])
        self.c = torch.randn(20)
        self.d = torch.tensor(3)
        self.e = torch.tensor([[1.0, 2.0], [3.0, 4.0]])
        self.f = torch.tensor([True, False])
        self.g = torch.tensor([], dtype=torch.float)
        self.h = torch.tensor([1.5, 2.25], dtype=torch.float64)
        self.i = torch.tensor([[[1, 2], [3, 4]], [[5, 6], [7, 8]]])
        self.j = torch.tensor([0.001, 1000.0])

    def forward(self, x):
        return (x + self.a + self.b + self.c + self.d + self.e + self.f + self.g + self.h
                + self.i + self.j)


@corpus("frozen_tensor_constants")
def _frozen():
    torch.manual_seed(0)
    return str(torch.jit.freeze(torch.jit.script(Consts()).eval()).graph)


@corpus("frozen_module")
def _frozen_top():
    torch.manual_seed(0)
    return str(torch.jit.freeze(torch.jit.script(Top()).eval()).graph)


class TensorFormats(torch.nn.Module):
    """Tensor constants that exercise at::print's formats: scale factors, scientific
    notation, column groups, n-d slices, negative and non-finite values."""

    def __init__(self):
        super().__init__()
        self.scaled = torch.tensor([123456.7, 2.5], dtype=torch.float64)
        self.small = torch.tensor([0.00012, 0.00034])
        self.sci = torch.tensor([1e-5, 1.0, 3.0])
        self.columns = torch.tensor([[1e-5, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0]])
        self.bigint = torch.tensor([12345678901, 2])
        self.mixed = torch.tensor([float("inf"), -1.5, float("nan")])
        self.neg = torch.tensor([[-1, 2], [3, -4]], dtype=torch.int32)
        self.cube = torch.tensor([[[0.5, 1.5]], [[2.5, 3.5]]], dtype=torch.float64)
        self.half = torch.tensor([1.0, 2.0], dtype=torch.float16)
        self.scalar_f = torch.tensor(0.1)
        self.scalar_b = torch.tensor([True])

    def forward(self, x):
        return (x + self.scaled + self.small + self.sci + self.columns + self.bigint + self.mixed
                + self.neg + self.cube + self.half + self.scalar_f + self.scalar_b)


@corpus("frozen_tensor_formats")
def _formats():
    return str(torch.jit.freeze(torch.jit.script(TensorFormats()).eval()).graph)


def traced_fn(x, y):
    z = x.matmul(y) + 1
    return torch.sigmoid(z).transpose(0, 1).contiguous()


@corpus("traced")
def _traced():
    t = torch.jit.trace(traced_fn, (torch.randn(3, 4), torch.randn(4, 5)))
    return str(t.graph)


def main():
    os.makedirs(OUT, exist_ok=True)
    me = os.path.abspath(__file__)
    names = sys.argv[1:] or sorted(CORPUS)
    for name in names:
        text = CORPUS[name]()
        text = text.replace(me, os.path.basename(me))
        with open(os.path.join(OUT, name + ".ir"), "w") as f:
            f.write(text)
        print(f"wrote corpus/{name}.ir ({len(text.splitlines())} lines)")


if __name__ == "__main__":
    main()
