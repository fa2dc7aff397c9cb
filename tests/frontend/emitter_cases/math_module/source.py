def fn(x: float, n: int) -> float:
    return math.sqrt(x) + math.exp(x) + math.log(x) + math.floor(x) + math.pi + n
