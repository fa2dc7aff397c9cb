def fn(x: Tensor, y: Tensor) -> Tensor:
    x += y
    x *= 2
    x -= 1
    return x
