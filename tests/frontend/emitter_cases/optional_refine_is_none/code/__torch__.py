def fn(x: Optional[int]) -> int:
  if torch.__is__(x, None):
    r = 0
  else:
    x0 = unchecked_cast(int, x)
    r = torch.add(x0, 1)
  return r
