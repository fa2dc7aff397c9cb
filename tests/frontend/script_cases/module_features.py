"""A module using the class-level forms torch.jit.script accepts (issue #17): Final and
__constants__, an Enum, a script class, @torch.jit.interface / ignore / unused / export.
`torchless script module_features.py` (the interface is not counted as the file's module)."""
import torch
from torch import nn, Tensor
from typing import Final, List, Optional
from enum import Enum


class Color(Enum):
    RED = 1
    GREEN = 2


@torch.jit.interface
class Scaler(torch.nn.Module):
    def forward(self, x: Tensor) -> Tensor:
        pass


class Point:
    def __init__(self, x: float, y: float):
        self.x = x
        self.y = y

    def norm(self) -> float:
        return (self.x ** 2 + self.y ** 2) ** 0.5


class M(nn.Module):
    __constants__ = ["k"]
    scale: Final[float] = 2.0

    def __init__(self):
        super().__init__()
        self.k = 3
        self.w = nn.Parameter(torch.ones(4))
        self.register_buffer("b", torch.zeros(4))
        self.names: List[str] = ["a", "b"]

    @torch.jit.ignore
    def debug(self, x: Tensor) -> None:
        print("python only", x)

    @torch.jit.unused
    def train_step(self, x: Tensor) -> Tensor:
        return x.sum().backward()

    @torch.jit.export
    def describe(self, c: int) -> str:
        col = Color.RED if c == 1 else Color.GREEN
        return f"{col.name}:{self.k}:{len(self.names)}"

    def forward(self, x: Tensor) -> Tensor:
        p = Point(3.0, 4.0)
        y = x * self.w + self.b
        if self.training and False:
            self.train_step(x)
        return y * self.scale * self.k + p.norm()
