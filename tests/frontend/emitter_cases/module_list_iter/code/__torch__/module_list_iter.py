class M(Module):
  __parameters__ = []
  __buffers__ = []
  training : bool
  _is_full_backward_hook : Optional[bool]
  layers : __torch__.torch.nn.modules.container.ModuleList
  def forward(self: __torch__.module_list_iter.M,
    x: Tensor) -> Tensor:
    layers = self.layers
    _0 = getattr(layers, "0")
    _1 = getattr(layers, "1")
    x0 = (_0).forward(x, )
    return (_1).forward(x0, )
class Sub(Module):
  __parameters__ = []
  __buffers__ = []
  training : bool
  _is_full_backward_hook : Optional[bool]
  def forward(self: __torch__.module_list_iter.Sub,
    x: Tensor) -> Tensor:
    return torch.add(x, 1)
