import torch


def f(x: torch.Tensor, n: int) -> int:
    k = n + 1
    return k + "one"
