def fn(n: int,
    m: int) -> int:
  t = 0
  for i in range(n):
    t0 = t
    for j in range(m):
      t0 = torch.add(t0, torch.mul(i, j))
    t = t0
  return t
