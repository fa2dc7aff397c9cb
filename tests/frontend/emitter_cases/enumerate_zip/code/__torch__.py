def fn(xs: List[int],
    ys: List[float]) -> float:
  _0 = ops.prim.min([9223372036854775807, torch.len(xs)])
  s = 0.
  for i in range(_0):
    v = xs[i]
    s = torch.add(s, torch.mul(i, v))
  _1 = ops.prim.min([torch.len(xs), torch.len(ys)])
  s0 = s
  for _2 in range(_1):
    a = xs[_2]
    b = ys[_2]
    s0 = torch.add(s0, torch.mul(a, b))
  return s0
