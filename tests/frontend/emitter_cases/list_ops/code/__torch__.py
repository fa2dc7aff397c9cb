def fn(n: int) -> List[int]:
  l = annotate(List[int], [])
  for i in range(n):
    _0 = torch.append(l, i)
  l2 = [1, 2, 3]
  torch.extend(l2, l)
  return torch.slice(l2, 1)
