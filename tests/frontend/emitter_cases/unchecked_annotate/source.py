def fn(x: Optional[int]) -> int:
    y = annotate(Optional[int], x)
    z = torch.jit._unwrap_optional(y)
    return z
