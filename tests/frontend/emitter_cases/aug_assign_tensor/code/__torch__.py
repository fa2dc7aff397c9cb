def fn(x: Tensor,
    y: Tensor) -> Tensor:
  x0 = torch.add_(x, y)
  x1 = torch.mul_(x0, 2)
  return torch.sub_(x1, 1)
