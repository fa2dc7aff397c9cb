def fn(n: int) -> int:
    s = 0
    for i in range(2, n, 3):
        s = s + i
    return s
