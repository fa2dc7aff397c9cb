def fn(n: int) -> int:
    i = 0
    while i < n:
        i += 3
        if i > 10:
            return i * 2
    return i
