def fn(xs: List[int],
    y: Optional[int]) -> bool:
  if torch.__is__(y, None):
    _0 = True
  else:
    _0 = torch.__contains__(xs, 3)
  if _0:
    _1 = True
  else:
    _2 = torch.__not__(torch.__contains__(xs, 4))
    _1 = _2
  return _1
