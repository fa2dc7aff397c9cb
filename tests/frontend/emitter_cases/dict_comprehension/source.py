def fn(xs: List[int]) -> Dict[int, int]:
    return {v: v * v for v in xs}
