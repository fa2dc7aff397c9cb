def fn(xs: List[int],
    t: Tuple[int, str],
    s: str) -> int:
  a = torch.add(xs[0], xs[-1])
  b = torch.slice(xs, 1, 3)
  c = (t)[0]
  d = s[0]
  _0 = torch.add(torch.add(a, torch.len(b)), c)
  return torch.add(_0, torch.len(d))
