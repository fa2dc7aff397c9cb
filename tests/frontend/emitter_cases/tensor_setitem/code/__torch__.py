def fn(x: Tensor,
    y: Tensor) -> Tensor:
  _0 = torch.copy_(torch.select(x, 0, 0), y)
  _1 = torch.slice(x, 0, 1, 3)
  _2 = torch.tensor(2., dtype=ops.prim.dtype(_1), device=ops.prim.device(_1))
  _3 = torch.copy_(_1, _2)
  _4 = torch.gt(y, 0)
  _5 = torch.tensor(1., dtype=ops.prim.dtype(x), device=ops.prim.device(x))
  _6 = annotate(List[Optional[Tensor]], [_4])
  _7 = torch.index_put_(x, _6, _5)
  return x
