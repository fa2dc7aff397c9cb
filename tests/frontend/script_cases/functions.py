"""Free functions: torchless script functions.py --function pairwise."""
import torch
from typing import List, Tuple

SCALE = 3  # Python-only top-level code is ignored


def norm2(v: torch.Tensor) -> torch.Tensor:
    return (v * v).sum(-1).sqrt()


def pairwise(x: torch.Tensor, y: torch.Tensor, eps: float = 1e-6) -> Tuple[torch.Tensor, List[int]]:
    d = norm2(x.unsqueeze(1) - y.unsqueeze(0))
    sizes = [int(s) for s in x.shape]
    return d / (d.max() + eps), sizes


if __name__ == "__main__":
    print(torch.jit.script(pairwise).graph)
