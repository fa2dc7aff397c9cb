def fn(x: int) -> int:
  if torch.gt(x, 0):
    _0 = x
  else:
    _0 = torch.neg(x)
  return _0
