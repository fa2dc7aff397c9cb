def fn(n: int) -> int:
  _0 = uninitialized(int)
  _1 = False
  _2 = _0
  i = 0
  _3 = torch.lt(0, n)
  while _3:
    i0 = torch.add(i, 3)
    if torch.gt(i0, 10):
      _4, _5, _6, _7 = False, True, torch.mul(i0, 2), _0
    else:
      _4, _5, _6, _7 = torch.lt(i0, n), False, _0, i0
    _3, _1, _2, i = _4, _5, _6, _7
  if _1:
    _8 = _2
  else:
    _8 = i
  return _8
