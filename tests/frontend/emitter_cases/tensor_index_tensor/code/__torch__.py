def fn(x: Tensor,
    idx: Tensor) -> Tensor:
  _0 = annotate(List[Optional[Tensor]], [idx])
  _1 = torch.index(x, _0)
  _2 = torch.select(x, 1, 0)
  _3 = annotate(List[Optional[Tensor]], [idx])
  return torch.add(_1, torch.index(_2, _3))
