def fn(x: int) -> int:
    return x if x > 0 else -x
