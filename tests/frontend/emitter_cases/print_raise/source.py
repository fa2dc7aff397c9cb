def fn(x: int) -> int:
    print("x is", x)
    if x < 0:
        raise ValueError("negative")
    return x
