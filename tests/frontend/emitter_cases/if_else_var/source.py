def fn(x: Tensor, flag: bool) -> Tensor:
    if flag:
        y = x + 1
    else:
        y = x - 1
    return y
