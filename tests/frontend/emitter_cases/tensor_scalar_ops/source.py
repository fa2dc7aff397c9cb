def fn(x: Tensor, y: Tensor) -> Tensor:
    z = x + y * 2
    w = z - 1.5
    return torch.relu(w @ y) / x
