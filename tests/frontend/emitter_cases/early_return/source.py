def fn(x: int) -> int:
    if x < 0:
        return -x
    y = x * 2
    return y
