def fn(x: Tensor,
    flag: bool) -> Tensor:
  if flag:
    y = torch.add(x, 1)
  else:
    y = torch.sub(x, 1)
  return y
