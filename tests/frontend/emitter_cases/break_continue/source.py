def fn(xs: List[int]) -> int:
    s = 0
    for v in xs:
        if v < 0:
            continue
        if v > 100:
            break
        s += v
    return s
