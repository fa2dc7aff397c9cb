def fn(x: Tensor,
    y: Tensor) -> Tensor:
  z = torch.add(x, torch.mul(y, 2))
  w = torch.sub(z, 1.5)
  _0 = torch.div(torch.relu(torch.matmul(w, y)), x)
  return _0
