"""TorchScript constructs for the frontend corpus.

gen_corpus.py compiles everything here with torch.jit.script and saves it, so the printed
code/ records cover classes, enums, NamedTuples, interfaces, hooks, Final constants, fork,
loops, raise, Optional refinement and so on. frontend_test also parses this file itself as
source: keep it valid TorchScript-flavoured Python (no lambdas, no generator expressions).
"""
from enum import Enum
from typing import Dict, Final, List, NamedTuple, Optional, Tuple

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch import Tensor


class Point(NamedTuple):
    x: int
    y: float = 0.5


class Color(Enum):
    RED = 1
    GREEN = 2


@torch.jit.script
class Counter:
    def __init__(self, start: int):
        self.count = start
        self.history: List[int] = []

    def bump(self, by: int = 1) -> int:
        self.count += by
        self.history.append(self.count)
        return self.count

    @staticmethod
    def twice(x: int) -> int:
        return 2 * x


@torch.jit.interface
class HasValue:
    def value(self) -> int:
        pass


@torch.jit.interface
class Scaler(nn.Module):
    def forward(self, x: Tensor) -> Tensor:
        pass


class Half(nn.Module):
    def forward(self, x: Tensor) -> Tensor:
        return x * 0.5


def arithmetic(a: int, b: int, x: float) -> Tuple[float, float, int, float, bool, int]:
    c = a + b * 2 - a // 3 % 5 ** 2
    d = -a + b - (~torch.tensor(a)).item()
    e = (a << 2) >> 1 & b | a ^ b
    f = x / 2.0 + 1e-3 - .5 + 1. + 0x1F + 0o17 + 0b101 + 1_000 + 2.5e+10 + x ** -1
    g = 0 <= a < 10 and not (b == 3 or a != b)
    h = a if a > b else b
    h = -9223372036854775807 if h == 1 else h
    return c, d, e, f, g, h


def strings(name: str, n: int) -> str:
    s = 'single' "double" '''triple''' """triple2"""
    t = r"raw\d" + "\t\n\\\x41\101\001\177 'q' \"dq\""
    u = f"{name}: {n}" + f'{n + 1}!'
    if name in ["a", "b"] and name not in ("c",):
        s = s + t
    elif name.startswith("x"):
        s = s.upper()
    else:
        pass
    return s + u + str(len(s)) + "caf\u00e9"


def tensors(x: Tensor, y: Optional[Tensor] = None, *, scale: float) -> Tensor:
    z = x[0] + x[1:2].sum() + x[:, 0].mean() + x[..., None].sum() + x[::2, 1:].sum() + x[-1]
    if y is not None:
        z = z + y
    z = z * scale
    w = x @ x.t()
    z += w.sum()
    z -= 1
    z *= 2
    z /= 3
    with torch.no_grad():
        z = z + 1
    print("z", z.shape)
    return torch.cat([z.view(-1), x.flatten()], dim=0)


def loops(xs: List[int], d: Dict[str, int]) -> int:
    total = 0
    for i in range(len(xs)):
        if i == 3:
            continue
        total += xs[i]
    for i in range(1, 10, 2):
        total += i
    for i, v in enumerate(xs):
        total += i * v
    for a, b in zip(xs, xs):
        total += a - b
    for k, v in d.items():
        total += len(k) + v
    for k in d:
        total += d[k]
    i = 0
    while i < 10:
        i += 1
        if i > 5:
            break
    sq = [v * v for v in xs]
    m = {k: v + 1 for k, v in d.items()}
    a = b = 0
    p, q, = 1, 2
    total += sum(sq) + len(m) + a + b + p + q
    del xs[0]
    assert total >= 0, "negative"
    if total > 100:
        raise ValueError("too big: " + str(total))
    return total


def objects(v: HasValue, p: Point, c: Color) -> int:
    counter = Counter(3)
    counter.bump(2)
    n = counter.bump() + Counter.twice(p.x) + v.value()
    if c == Color.RED:
        n += c.value
    maybe: Optional[int] = None
    if isinstance(n, int):
        maybe = n
    if maybe is not None:
        n = n + maybe
    lst = torch.jit.annotate(List[int], [])
    lst.append(n)
    t: Tuple[int, str] = (n, "x")
    return lst[0] + t[0]


def helper(x: Tensor) -> Tensor:
    return x + 1


def forked(x: Tensor) -> Tensor:
    fut = torch.jit.fork(helper, x)
    return torch.jit.wait(fut)


class Block(nn.Module):
    hidden: Final[int]
    mode: Final[str]
    shape: Final[Tuple[int, int]]
    scaler: Scaler

    def __init__(self):
        super().__init__()
        self.hidden = 4
        self.mode = "zeros"
        self.shape = (2, 3)
        self.lin = nn.Linear(4, 4)
        self.seq = nn.Sequential(nn.ReLU(), nn.Linear(4, 4, bias=False))
        self.layers = nn.ModuleList([nn.Linear(4, 4), nn.Tanh()])
        self.scaler = Half()
        self.register_buffer("running", torch.zeros(4))
        self.names: List[str] = ["a", "b"]
        self.table: Dict[str, int] = {"x": 1}
        self.count = 0
        self.eps = 1e-5

    def forward(self, x: Tensor, flag: bool = False) -> Tensor:
        for layer in self.layers:
            x = layer(x)
        x = self.seq(self.lin(x)) + self.running
        x = self.scaler(x)
        if self.training:
            x = F.dropout(x, 0.1)
        p = Point(1, 2.0)
        x = x * self.hidden + p.x + self.eps
        if flag:
            raise RuntimeError(f"bad flag {self.count}")
        self.count += 1
        return x.view(self.shape[0], -1) if self.mode == "zeros" else x

    @torch.jit.export
    def extra(self, y: int) -> int:
        return y + len(self.names) + self.table["x"]

    @torch.jit.unused
    def not_scripted(self, x: Tensor) -> Tensor:
        return torch.from_numpy(x.numpy())


class Hooked(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(3, 3)

    def forward(self, x: Tensor) -> Tensor:
        return self.lin(x)


def pre_hook(mod: nn.Module, inp: Tuple[Tensor]) -> Tuple[Tensor]:
    return (inp[0] * 2,)


def post_hook(mod: nn.Module, inp: Tuple[Tensor], out: Tensor) -> Tensor:
    return out + 1


FUNCTIONS = [arithmetic, strings, tensors, loops, objects, forked]
