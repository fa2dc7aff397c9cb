def fn(xs: List[int]) -> int:
  _0 = uninitialized(int)
  _1 = uninitialized(bool)
  _2 = torch.len(xs)
  s = 0
  _3 = 0
  _4 = torch.gt(_2, 0)
  while _4:
    v = xs[_3]
    if torch.lt(v, 0):
      _5, _6, _7, _8, _9 = True, True, s, _1, _0
    else:
      if torch.gt(v, 100):
        _10, _11, _12, _13, _14 = True, False, s, _1, _0
      else:
        _10, _11, _12, _13, _14 = False, _1, _0, True, torch.add(s, v)
      _5, _6, _7, _8, _9 = _10, _11, _12, _13, _14
    if _5:
      _15, _16 = _6, _7
    else:
      _15, _16 = _8, _9
    _17 = torch.add(_3, 1)
    _18 = torch.__and__(torch.lt(_17, _2), _15)
    _4, s, _3 = _18, _16, _17
  return s
