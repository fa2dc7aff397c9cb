def fn(a: int) -> int:
  _0 = __torch__.free_function_calls.helper(a, 3, )
  _1 = __torch__.free_function_calls.helper(a, 2, )
  return torch.add(_0, _1)
def helper(x: int,
    y: int=3) -> int:
  return torch.mul(x, y)
