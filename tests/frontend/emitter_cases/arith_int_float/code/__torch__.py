def fn(a: int,
    b: float) -> float:
  c = torch.add(torch.mul(a, 2), 1)
  d = torch.div(c, 3)
  e = torch.sub(b, d)
  f = torch.remainder(torch.floordiv(a, 2), 3)
  _0 = torch.add(torch.mul(e, f), torch.pow(2, a))
  return _0
