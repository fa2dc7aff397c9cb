def fn(n: int) -> str:
    if n < 0:
        s = "neg"
    elif n == 0:
        s = "zero"
    else:
        s = "pos"
    return s
