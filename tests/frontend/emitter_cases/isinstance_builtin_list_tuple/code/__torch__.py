def fn(boxes: Union[Tensor, List[Tensor]]) -> int:
  _0 = isinstance(boxes, (list, tuple))
  if _0:
    _1 = 1
  else:
    _1 = 3
  return _1
