def fn(x: Tensor) -> Tensor:
  y = torch.add(x, 1)
  return torch.mul(y, 2)
