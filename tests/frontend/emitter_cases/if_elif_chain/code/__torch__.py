def fn(n: int) -> str:
  if torch.lt(n, 0):
    s = "neg"
  else:
    if torch.eq(n, 0):
      s0 = "zero"
    else:
      s0 = "pos"
    s = s0
  return s
