def fn(x: Tensor) -> int:
  s = torch.size(x)
  d = torch.dim(x)
  n = torch.size(x, 0)
  _0 = torch.add(torch.add(torch.add(s[0], d), n), torch.numel(x))
  return _0
