def fn(xs: Tuple[int, int, int]) -> int:
    a, *rest = xs
    return a + rest[0] + rest[1]
