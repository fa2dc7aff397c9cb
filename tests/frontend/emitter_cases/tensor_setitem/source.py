def fn(x: Tensor, y: Tensor) -> Tensor:
    x[0] = y
    x[1:3] = 2.0
    x[y > 0] = 1.0
    return x
