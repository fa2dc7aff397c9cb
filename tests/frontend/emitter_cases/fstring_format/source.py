def fn(x: int, y: float) -> str:
    a = f"x={x} y={y}"
    b = "{} and {}".format(x, a)
    return a + b
