def fn(x: Tensor) -> Tensor:
  return torch.mul(torch.add(x, 1), 2)
