"""Writes the example models shipped in examples/ (run with /usr/bin/python3, PyTorch 1.13).

tiny_cnn.pt: a scripted conv + batchnorm + relu + pooling + linear classifier with a
branch on an Optional argument, its input input.npy (1x3x16x16 float32) and PyTorch's
output expected.npy. Deterministic (seeded), so the files only change when this script does.
"""
from typing import Optional
import os

import numpy as np
import torch
import torch.nn as nn

HERE = os.path.dirname(os.path.abspath(__file__))


class TinyCNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3, padding=1)
        self.bn = nn.BatchNorm2d(8)
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(8, 4)

    def forward(self, x: torch.Tensor, scale: Optional[float] = None) -> torch.Tensor:
        y = torch.relu(self.bn(self.conv(x)))
        y = self.pool(y).flatten(1)
        y = self.fc(y)
        if scale is not None:
            y = y * scale
        return torch.softmax(y, dim=1)


def main():
    torch.manual_seed(0)
    model = TinyCNN().eval()
    with torch.no_grad():
        model.bn.running_mean.uniform_(-0.5, 0.5)
        model.bn.running_var.uniform_(0.5, 1.5)
    scripted = torch.jit.script(model)
    scripted.save(os.path.join(HERE, "tiny_cnn.pt"))
    x = torch.randn(1, 3, 16, 16)
    np.save(os.path.join(HERE, "input.npy"), x.numpy())
    with torch.no_grad():
        np.save(os.path.join(HERE, "expected.npy"), scripted(x).numpy())


if __name__ == "__main__":
    main()
