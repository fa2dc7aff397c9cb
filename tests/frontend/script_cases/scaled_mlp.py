"""A module whose state comes from __init__: torchless script scaled_mlp.py --class ScaledMLP."""
import torch
from typing import Dict, List, Optional, Tuple


def clamp_all(xs: List[torch.Tensor], lo: float = -2.0) -> List[torch.Tensor]:
    return [torch.clamp(x, lo, 2.0) for x in xs]


class Stats:
    def __init__(self, n: int):
        self.count = n
        self.total = 0.0

    def add(self, v: float) -> float:
        self.total += v
        self.count += 1
        return self.total / self.count


class ScaledMLP(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.w1 = torch.nn.Parameter(torch.arange(12, dtype=torch.float32).reshape(4, 3) / 10.0)
        self.b1 = torch.nn.Parameter(torch.ones(4) * 0.5)
        self.register_buffer("offset", torch.linspace(-1.0, 1.0, 4))
        self.scale = 1.5
        self.steps = 3
        self.names: List[str] = ["a", "b"]
        self.table: Dict[str, int] = {"x": 1}
        self.bias: Optional[torch.Tensor] = None

    def helper(self, h: torch.Tensor, k: int) -> torch.Tensor:
        for i in range(k):
            if i % 2 == 0:
                h = h * self.scale
            else:
                h = h - self.offset
        return h

    def forward(self, x: torch.Tensor, mode: str = "relu") -> Tuple[torch.Tensor, float]:
        h = torch.nn.functional.linear(x, self.w1, self.b1)
        if mode == "relu":
            h = torch.relu(h)
        else:
            h = torch.tanh(h)
        h = self.helper(h, self.steps)
        parts = clamp_all([h, h + 1.0])
        s = Stats(len(self.names))
        m = s.add(float(h.sum()))
        b = self.bias
        if b is not None:
            h = h + b
        return parts[0] + parts[1] * self.table["x"], m

    @torch.jit.export
    def describe(self, n: int) -> List[int]:
        out: List[int] = []
        i = 0
        while i < n:
            out.append(i * self.steps)
            i += 1
        return out
