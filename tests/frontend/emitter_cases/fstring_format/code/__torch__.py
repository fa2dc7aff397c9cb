def fn(x: int,
    y: float) -> str:
  a = torch.format("x={} y={}", x, y)
  b = torch.format("{} and {}", x, a)
  return torch.add(a, b)
