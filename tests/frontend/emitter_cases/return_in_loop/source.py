def fn(xs: List[int], t: int) -> int:
    for i in range(len(xs)):
        if xs[i] == t:
            return i
    return -1
