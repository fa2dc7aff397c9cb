def fn(x: Tensor) -> Tensor:
    t = (x, x + 1, 2)
    u = t[1]
    return u * t[2]
