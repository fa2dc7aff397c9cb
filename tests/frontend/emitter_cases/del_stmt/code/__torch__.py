def fn(xs: List[int]) -> List[int]:
  torch.Delete(xs, 0)
  return xs
