def fn(xs: List[int]) -> int:
  s = 0
  for _0 in range(torch.len(xs)):
    v = xs[_0]
    s = torch.add(s, v)
  return s
