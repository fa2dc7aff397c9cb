def fn(x: int, n: int) -> int:
    y = x
    if n > 2:
        y = y * 2
        x = 3
    return x + y
