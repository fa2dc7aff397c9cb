def fn(a: Optional[int],
    b: Optional[int]) -> int:
  if torch.__isnot__(a, None):
    a1 = unchecked_cast(int, a)
    _0, a0 = torch.__isnot__(b, None), a1
  else:
    _0, a0 = False, a
  if _0:
    a2 = unchecked_cast(int, a0)
    b0 = unchecked_cast(int, b)
    _1 = torch.add(a2, b0)
  else:
    _1 = 0
  return _1
