def fn(x: Tensor, y: Optional[Tensor]) -> Tensor:
    if y is not None:
        x = x + y
    return x
