def fn(x: Tensor) -> List[Tensor]:
    l: List[Tensor] = []
    l.append(x)
    m = [x, x * 2]
    return l + m
