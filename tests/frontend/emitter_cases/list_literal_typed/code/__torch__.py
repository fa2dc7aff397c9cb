def fn(x: Tensor) -> List[Tensor]:
  l = annotate(List[Tensor], [])
  _0 = torch.append(l, x)
  m = [x, torch.mul(x, 2)]
  return torch.add(l, m)
