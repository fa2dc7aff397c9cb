def fn(x: Tensor, idx: Tensor) -> Tensor:
    return x[idx] + x[idx, 0]
