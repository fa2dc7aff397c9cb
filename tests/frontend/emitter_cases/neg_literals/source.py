def fn(x: Tensor, n: int) -> Tensor:
    y = x.masked_fill(x > 0, -math.inf) + (-1.0)
    return y * -n + -(2)
