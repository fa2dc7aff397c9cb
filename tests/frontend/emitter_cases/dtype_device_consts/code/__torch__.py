def fn(x: Tensor) -> Tensor:
  y = torch.to(x, 7)
  z = torch.zeros([2, 2], dtype=6, layout=None, device=torch.device("cpu"))
  _0 = torch.add(torch.add(torch.sum(y), torch.sum(z)), inf)
  return _0
