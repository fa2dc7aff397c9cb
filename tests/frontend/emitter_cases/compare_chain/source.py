def fn(a: int, b: int, c: int) -> bool:
    return a < b <= c
