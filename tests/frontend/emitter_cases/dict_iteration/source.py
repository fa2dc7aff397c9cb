def fn(d: Dict[str, int]) -> int:
    s = 0
    for k in d:
        s = s + d[k]
    for k2, v in d.items():
        s = s + v + len(k2)
    for v2 in d.values():
        s = s - v2
    return s
