def fn(k: str) -> Dict[str, int]:
  d = {"a": 1, "b": 2}
  torch._set_item(d, k, 3)
  if torch.__contains__(d, "a"):
    torch._set_item(d, "c", d["a"])
  else:
    pass
  return d
