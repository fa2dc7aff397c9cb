def fn(xs: List[int]) -> List[int]:
    return [v * 2 for v in xs]
