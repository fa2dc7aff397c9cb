class M(Module):
  __parameters__ = []
  __buffers__ = []
  training : bool
  _is_full_backward_hook : Optional[bool]
  steps : int
  def forward(self: __torch__.module_setattr.M,
    x: Tensor) -> Tensor:
    steps = self.steps
    self.steps = torch.add(steps, 1)
    steps0 = self.steps
    return torch.mul(x, steps0)
