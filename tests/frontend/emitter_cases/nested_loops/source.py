def fn(n: int, m: int) -> int:
    t = 0
    for i in range(n):
        for j in range(m):
            t = t + i * j
    return t
