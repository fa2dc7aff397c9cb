def fn(a: Optional[int], b: Optional[int]) -> int:
    if a is not None and b is not None:
        return a + b
    return 0
