def fn(xs: List[int]) -> int:
    s = 0
    for v in xs:
        s = s + v
    return s
