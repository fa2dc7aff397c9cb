def fn(a: bool, b: bool, c: int) -> bool:
    return (a and b) or not (c > 2)
