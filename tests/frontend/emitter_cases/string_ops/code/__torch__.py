def fn(s: str) -> str:
  t = torch.upper(s)
  if torch.startswith(s, "a"):
    t0 = torch.add(t, torch.slice(s, 1))
  else:
    t0 = t
  return torch.add(t0, str(torch.len(s)))
