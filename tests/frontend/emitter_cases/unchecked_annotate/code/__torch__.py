def fn(x: Optional[int]) -> int:
  return torch._unwrap_optional(x)
