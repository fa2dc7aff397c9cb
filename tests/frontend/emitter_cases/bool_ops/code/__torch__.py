def fn(a: bool,
    b: bool,
    c: int) -> bool:
  if a:
    _0 = b
  else:
    _0 = False
  if _0:
    _1 = True
  else:
    _1 = torch.__not__(torch.gt(c, 2))
  return _1
