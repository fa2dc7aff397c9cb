def fn(xs: List[int]) -> List[int]:
    del xs[0]
    return xs
