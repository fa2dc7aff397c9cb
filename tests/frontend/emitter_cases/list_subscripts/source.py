def fn(xs: List[int], t: Tuple[int, str], s: str) -> int:
    a = xs[0] + xs[-1]
    b = xs[1:3]
    c = t[0]
    d = s[0]
    return a + len(b) + c + len(d)
