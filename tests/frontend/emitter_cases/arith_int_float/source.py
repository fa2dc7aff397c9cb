def fn(a: int, b: float) -> float:
    c = a * 2 + 1
    d = c / 3
    e = b - d
    f = a // 2 % 3
    return e * f + 2 ** a
