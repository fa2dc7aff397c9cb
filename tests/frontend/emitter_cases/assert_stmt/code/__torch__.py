def fn(x: int) -> int:
  if torch.gt(x, 0):
    pass
  else:
    ops.prim.RaiseException("AssertionError: must be positive")
  if torch.lt(x, 100):
    pass
  else:
    ops.prim.RaiseException("AssertionError: ")
  return x
