def fn(x: int) -> int:
  print("x is", x)
  if torch.lt(x, 0):
    ops.prim.RaiseException("negative", "builtins.ValueError")
  else:
    pass
  return x
