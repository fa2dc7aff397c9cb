def fn(xs: Tuple[int, int, int]) -> int:
  a, _0, _1, = xs
  return torch.add(torch.add(a, _0), _1)
