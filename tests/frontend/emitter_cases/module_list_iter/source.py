class Sub(torch.nn.Module):
    def forward(self, x: Tensor) -> Tensor:
        return x + 1
class M(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = torch.nn.ModuleList([Sub(), Sub()])
    def forward(self, x: Tensor) -> Tensor:
        for l in self.layers:
            x = l(x)
        return x
