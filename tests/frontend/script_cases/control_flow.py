"""Early exits in loops (PyTorch's exit transform), each scripted with --function NAME."""
import math
import torch
from typing import List


def find_first(xs: List[int], t: int) -> int:
    for i in range(len(xs)):
        if xs[i] == t:
            return i
    return -1


def grow(n: int):
    i = 0
    while i < n:
        i += 3
        if i > 10:
            return i * 2
    return i


def nested(xs: List[int], ys: List[int]) -> int:
    total = 0
    for x in xs:
        for y in ys:
            if x * y > 20:
                return total + 1000
            if y < 0:
                break
            total += x * y
        if x < 0:
            continue
        total += 1
    return total


def skip_and_stop(xs: List[int]) -> int:
    s = 0
    for v in xs:
        if v < 0:
            continue
        if v > 100:
            break
        s += v
    return s


def masked(x: torch.Tensor, k: int) -> torch.Tensor:
    if torch.jit.is_scripting():
        y = x.masked_fill(x > 0.5, -math.inf)
    else:
        y = x
    for i in range(k):
        y = y + (-1.0)
        if bool(y.sum() < -100.0):
            return y * 0
    return torch.softmax(y, -1)


def run_all(x: torch.Tensor) -> torch.Tensor:
    a = find_first([3, 1, 4, 1, 5], 4) + find_first([1, 2], 9)
    b = grow(2) + grow(20)
    c = nested([1, 2, 3, -1], [2, 3, -1, 9]) + nested([5, 6], [1, 5])
    d = skip_and_stop([1, -2, 3, 200, 4])
    return masked(x, 3) * float(a + b + c + d)
