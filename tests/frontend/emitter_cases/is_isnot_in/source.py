def fn(xs: List[int], y: Optional[int]) -> bool:
    return (y is None) or (3 in xs) or (4 not in xs)
