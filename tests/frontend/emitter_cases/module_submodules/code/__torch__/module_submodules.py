class M(Module):
  __parameters__ = []
  __buffers__ = []
  training : bool
  _is_full_backward_hook : Optional[bool]
  a : __torch__.module_submodules.Sub
  c : __torch__.module_submodules.Sub
  def forward(self: __torch__.module_submodules.M,
    x: Tensor) -> Tensor:
    c = self.c
    a = self.a
    _0 = (c).forward((a).forward(x, ), )
    a0 = self.a
    return torch.add(_0, (a0).twice(x, 2, ))
class Sub(Module):
  __parameters__ = ["b", ]
  __buffers__ = []
  b : Tensor
  training : bool
  _is_full_backward_hook : Optional[bool]
  def forward(self: __torch__.module_submodules.Sub,
    x: Tensor) -> Tensor:
    b = self.b
    return torch.add(x, b)
  def twice(self: __torch__.module_submodules.Sub,
    x: Tensor,
    k: int=2) -> Tensor:
    return torch.mul(x, k)
