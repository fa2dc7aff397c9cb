import torch


def f(x: torch.Tensor) -> torch.Tensor:
    y = x +
    return y
