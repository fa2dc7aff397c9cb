def fn(n: int) -> int:
  s = 0
  for _0 in range(torch.__range_length(2, n, 3)):
    i = torch.__derive_index(_0, 2, 3)
    s = torch.add(s, i)
  return s
