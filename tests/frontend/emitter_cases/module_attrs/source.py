class M(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.w = torch.nn.Parameter(torch.ones(3))
        self.count = 2
        self.scale = 0.5
    def forward(self, x: Tensor) -> Tensor:
        y = x * self.w
        for i in range(self.count):
            y = y + self.scale
        return y
