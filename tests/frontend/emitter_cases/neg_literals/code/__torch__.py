def fn(x: Tensor,
    n: int) -> Tensor:
  _0 = torch.masked_fill(x, torch.gt(x, 0), -inf)
  y = torch.add(_0, -1.)
  _1 = torch.add(torch.mul(y, torch.neg(n)), -2)
  return _1
