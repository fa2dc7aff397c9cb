def fn(x: Tensor) -> Tensor:
  a = torch.select(x, 0, 0)
  b = torch.select(torch.slice(x), 1, 1)
  c = torch.slice(x, 0, 1, 3, 2)
  d = torch.unsqueeze(x, -1)
  e = torch.select(torch.slice(torch.unsqueeze(x, 0), 1), 2, 0)
  _0 = torch.add(torch.add(a, torch.sum(b)), torch.sum(c))
  _1 = torch.add(torch.add(_0, torch.sum(d)), torch.sum(e))
  return _1
