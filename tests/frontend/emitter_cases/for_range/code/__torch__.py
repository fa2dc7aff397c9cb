def fn(n: int) -> int:
  s = 0
  for i in range(n):
    s = torch.add(s, torch.mul(i, i))
  return s
