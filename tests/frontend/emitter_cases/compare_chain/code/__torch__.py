def fn(a: int,
    b: int,
    c: int) -> bool:
  if torch.lt(a, b):
    _0 = torch.le(b, c)
  else:
    _0 = False
  return _0
