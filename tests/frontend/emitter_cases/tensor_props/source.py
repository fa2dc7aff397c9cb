def fn(x: Tensor) -> int:
    s = x.shape
    d = x.dim()
    n = x.size(0)
    t = x.dtype
    dev = x.device
    return s[0] + d + n + x.numel()
