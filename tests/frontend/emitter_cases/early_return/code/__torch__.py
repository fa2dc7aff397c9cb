def fn(x: int) -> int:
  if torch.lt(x, 0):
    _0 = torch.neg(x)
  else:
    _0 = torch.mul(x, 2)
  return _0
