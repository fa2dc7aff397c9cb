def fn(x: Tensor) -> Tensor:
    a = x[0]
    b = x[:, 1]
    c = x[1:3:2]
    d = x[..., None]
    e = x[None, :, 0]
    return a + b.sum() + c.sum() + d.sum() + e.sum()
