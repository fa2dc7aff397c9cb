def fn(x: Tensor) -> Tensor:
  x0 = torch.mul(x, 1)
  x1 = torch.mul(x0, 2)
  return torch.mul(x1, 3)
