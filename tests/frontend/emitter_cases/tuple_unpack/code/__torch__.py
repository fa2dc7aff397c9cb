def fn(x: Tensor,
    n: int) -> Tuple[Tensor, Tensor]:
  a, b, = torch.chunk(x, 2)
  d = torch.add(n, 1)
  e = torch.add(n, 2)
  _0 = (torch.add(a, torch.mul(n, d)), torch.mul(b, e))
  return _0
