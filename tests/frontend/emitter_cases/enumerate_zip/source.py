def fn(xs: List[int], ys: List[float]) -> float:
    s = 0.0
    for i, v in enumerate(xs):
        s = s + i * v
    for a, b in zip(xs, ys):
        s = s + a * b
    return s
