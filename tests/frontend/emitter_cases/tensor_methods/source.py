def fn(x: Tensor) -> Tensor:
    y = x.view(-1, 4)
    z = y.transpose(0, 1).contiguous()
    return z.sum(dim=0, keepdim=True).unsqueeze(0)
