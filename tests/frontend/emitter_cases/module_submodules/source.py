class Sub(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.b = torch.nn.Parameter(torch.zeros(3))
    def forward(self, x: Tensor) -> Tensor:
        return x + self.b
    @torch.jit.export
    def twice(self, x: Tensor, k: int = 2) -> Tensor:
        return x * k

class M(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.a = Sub()
        self.c = Sub()
    def forward(self, x: Tensor) -> Tensor:
        return self.c(self.a(x)) + self.a.twice(x)
