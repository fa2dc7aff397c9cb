def helper(x: int, y: int = 3) -> int:
    return x * y

def fn(a: int) -> int:
    return helper(a) + helper(a, y=2)
