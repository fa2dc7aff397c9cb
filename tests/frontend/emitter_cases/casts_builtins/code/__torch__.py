def fn(x: float,
    y: int) -> float:
  a = int(x)
  b = float(y)
  c = bool(y)
  d = ops.prim.min(a, y)
  e = ops.prim.max(x, b)
  f = ops.prim.abs(x)
  g = torch.round(x)
  if c:
    a0 = torch.add(a, 1)
  else:
    a0 = a
  _0 = torch.add(torch.add(torch.add(a0, b), d), e)
  return torch.add(torch.add(_0, f), g)
