def fn(x: Tensor, n: int) -> Tuple[Tensor, Tensor]:
    a, b = x.chunk(2)
    c, (d, e) = n, (n + 1, n + 2)
    return a + c * d, b * e
