def fn(boxes: Union[Tensor, List[Tensor]]) -> int:
    if isinstance(boxes, (list, tuple)):
        return 1
    return 3
