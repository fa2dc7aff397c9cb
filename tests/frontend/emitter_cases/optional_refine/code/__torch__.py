def fn(x: Tensor,
    y: Optional[Tensor]) -> Tensor:
  if torch.__isnot__(y, None):
    y0 = unchecked_cast(Tensor, y)
    x0 = torch.add(x, y0)
  else:
    x0 = x
  return x0
