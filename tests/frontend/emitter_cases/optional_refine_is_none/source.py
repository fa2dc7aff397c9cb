def fn(x: Optional[int]) -> int:
    if x is None:
        r = 0
    else:
        r = x + 1
    return r
