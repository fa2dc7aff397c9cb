def fn(n: int) -> int:
  acc = 1
  i = 0
  _0 = torch.lt(0, n)
  while _0:
    acc0 = torch.mul(acc, 2)
    i0 = torch.add(i, 1)
    _0, acc, i = torch.lt(i0, n), acc0, i0
  return acc
