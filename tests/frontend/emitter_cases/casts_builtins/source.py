def fn(x: float, y: int) -> float:
    a = int(x)
    b = float(y)
    c = bool(y)
    d = min(a, y)
    e = max(x, b)
    f = abs(x)
    g = round(x)
    if c:
        a = a + 1
    return a + b + d + e + f + g
