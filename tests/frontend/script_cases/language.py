"""The Python forms torch.jit.script accepts in user files (issue #17): each function is
scripted by PyTorch and by `torchless script --function NAME`, and both run on the same inputs
(tests/frontend/check_script_cli.py, check_language)."""
from __future__ import division, print_function

import math
import typing
from math import sqrt
from typing import Dict, List, NamedTuple, Optional, Tuple, Union

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch import Tensor
from torch.nn import functional as FF


class Box(NamedTuple):
    lo: float
    hi: float


def reflected(x: Tensor) -> Tuple[Tensor, Tensor, Tensor, Tensor, Tensor, Tensor, Tensor]:
    n = x.shape[0]
    return 2.0 * x, 1 - x, n * x, 2 / (x.abs() + 1), 3 < x, 0.5 >= x, 2 ** x


def augmented(x: Tensor, k: int) -> Tuple[Tensor, float, float]:
    y = x.clone()
    y += 1
    y *= 2.5
    y -= x
    y /= 4
    k += 3
    k *= 2
    k %= 7
    f = 1.5
    f **= 2
    return y, k, f


def chained(a: int, b: int, c: int) -> Tuple[bool, bool, bool]:
    return a < b < c, a <= b != c, 0 <= a < b <= c < 100


def formatting(x: Tensor, name: str, k: int) -> Tuple[str, str, str, str]:
    a = f"{name} has {x.dim()} dims and {k} items"
    b = "%s: %d of %d" % (name, k, x.dim())
    c = "%d%%" % k
    d = "%f / %e / %c" % (1.25, 1234.5, 65)
    return a, b, c, d


def checked(x: Tensor, limit: float) -> Tensor:
    assert x.dim() == 2, "expected a matrix"
    assert limit > 0
    torch._assert(x.size(1) > 0, "no columns")
    with torch.no_grad():
        y = x.clamp(max=limit)
    return y


def imports(x: Tensor) -> Tensor:
    y = F.relu(x) + FF.gelu(x) + torch.nn.functional.silu(x) + nn.functional.elu(x)
    z: typing.List[int] = [1, 2]
    return y * sqrt(4.0) + math.floor(2.5) * len(z) + math.pi + torch.pi


def casts(x: Tensor) -> Tuple[Tensor, Tensor, Tensor, Tensor, str]:
    return x.float(), x.long(), x.double(), (x > 0).int(), x.device.type


def unique_values(x: Tensor) -> Tuple[Tensor, Tensor, Tensor]:
    u = torch.unique(x)
    v, counts = torch.unique(x, return_counts=True)
    return u, v, counts


def unions(v: Union[Tensor, List[Tensor]]) -> int:
    n = 0
    if isinstance(v, (list, tuple)):
        for t in v:
            n += t.size(0)
    elif isinstance(v, torch.Tensor):
        n = v.size(0)
    return n


def named(lo: float, hi: float) -> Tuple[float, float]:
    b = Box(lo, hi)
    return b.hi - b.lo, b[0]


def optional_default(x: Tensor, scale: Optional[float] = None) -> Tensor:
    if scale is None:
        return x
    return x * scale


def comprehensions(xs: List[int]) -> Tuple[List[int], Dict[str, int], int]:
    squares = [v * v for v in xs]
    names = {str(v): v for v in xs}
    return squares, names, sum(xs)
