def fn(x: Tensor, xs: List[int]) -> Tensor:
    v, i = torch.max(x, 1)
    return v + i + max(xs)
