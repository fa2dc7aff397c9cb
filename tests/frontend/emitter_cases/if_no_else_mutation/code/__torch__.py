def fn(x: int,
    n: int) -> int:
  if torch.gt(n, 2):
    x0, y = 3, torch.mul(x, 2)
  else:
    x0, y = x, x
  return torch.add(x0, y)
