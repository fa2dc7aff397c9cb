def fn(d: Dict[str, int]) -> int:
  _0 = torch.keys(d)
  s = 0
  for _1 in range(torch.len(_0)):
    k = _0[_1]
    s = torch.add(s, d[k])
  _2 = torch.items(d)
  s0 = s
  for _3 in range(torch.len(_2)):
    k2, v, = _2[_3]
    s1 = torch.add(torch.add(s0, v), torch.len(k2))
    s0 = s1
  _4 = torch.values(d)
  s2 = s0
  for _5 in range(torch.len(_4)):
    v2 = _4[_5]
    s2 = torch.sub(s2, v2)
  return s2
