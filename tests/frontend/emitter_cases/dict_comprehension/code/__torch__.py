def fn(xs: List[int]) -> Dict[int, int]:
  _0 = annotate(Dict[int, int], {})
  for _1 in range(torch.len(xs)):
    v = xs[_1]
    torch._set_item(_0, v, torch.mul(v, v))
  return _0
