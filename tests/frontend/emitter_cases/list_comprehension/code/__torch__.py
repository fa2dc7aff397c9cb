def fn(xs: List[int]) -> List[int]:
  _0 = annotate(List[int], [])
  for _1 in range(torch.len(xs)):
    v = xs[_1]
    _2 = torch.append(_0, torch.mul(v, 2))
  return _0
