def fn(x: Optional[Tensor]) -> Tensor:
  _0 = isinstance(x, Tensor)
  if _0:
    _1 = unchecked_cast(Tensor, x)
  else:
    _1 = torch.zeros([1])
  return _1
