def fn(x: int) -> int:
    assert x > 0, "must be positive"
    assert x < 100
    return x
