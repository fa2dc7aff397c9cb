def fn(x: float,
    n: int) -> float:
  _0 = torch.add(torch.sqrt(x), torch.exp(x))
  _1 = torch.add(torch.add(_0, torch.log(x)), torch.floor(x))
  _2 = torch.add(torch.add(_1, 3.1415926535897931), n)
  return _2
