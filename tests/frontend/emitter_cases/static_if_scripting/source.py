def fn(x: Tensor) -> Tensor:
    if torch.jit.is_scripting():
        y = x + 1
    else:
        y = x - 1
    if True:
        y = y * 2
    return y
