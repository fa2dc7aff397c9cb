"""Random initialization in __init__ (issue #17): `torch.manual_seed` then `torch.randn`,
`torch.rand`, `nn.init` and layers with their default (random) initialization must give the
numbers PyTorch's generator gives (mt19937 and its normal / uniform transforms)."""
import torch
from torch import nn


class M(nn.Module):
    def __init__(self):
        super().__init__()
        torch.manual_seed(7)
        self.w = nn.Parameter(torch.randn(3, 4))
        self.register_buffer("noise", torch.rand(5))
        self.big = nn.Parameter(torch.randn(40))  # 16 or more values: PyTorch's vectorized path

    def forward(self, x):
        return x @ self.w + self.big[:4].sum() + self.noise[0]
