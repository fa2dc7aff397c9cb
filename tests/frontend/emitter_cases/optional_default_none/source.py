def fn(x: Tensor, scale: Optional[float] = None) -> Tensor:
    if scale is None:
        scale = 1.0
    return x * scale
