def fn(x: Tensor) -> Tensor:
  y = torch.view(x, [-1, 4])
  z = torch.contiguous(torch.transpose(y, 0, 1))
  _0 = torch.unsqueeze(torch.sum(z, [0], True), 0)
  return _0
