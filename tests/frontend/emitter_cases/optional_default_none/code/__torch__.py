def fn(x: Tensor,
    scale: Optional[float]=None) -> Tensor:
  if torch.__is__(scale, None):
    scale0 = 1.
  else:
    scale0 = unchecked_cast(float, scale)
  return torch.mul(x, scale0)
