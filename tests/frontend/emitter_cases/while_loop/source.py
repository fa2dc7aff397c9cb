def fn(n: int) -> int:
    i = 0
    acc = 1
    while i < n:
        acc = acc * 2
        i += 1
    return acc
