class M(Module):
  __parameters__ = []
  __buffers__ = []
  training : bool
  _is_full_backward_hook : Optional[bool]
  bias : NoneType
  def forward(self: __torch__.module_optional_attr.M,
    x: Tensor) -> Tensor:
    return x
