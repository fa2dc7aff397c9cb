def fn(n: int) -> int:
    s = 0
    for i in range(n):
        s += i * i
    return s
