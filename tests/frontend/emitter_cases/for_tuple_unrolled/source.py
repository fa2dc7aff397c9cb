def fn(x: Tensor) -> Tensor:
    for k in (1, 2, 3):
        x = x * k
    return x
