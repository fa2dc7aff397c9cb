class M(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.steps = 0
    def forward(self, x: Tensor) -> Tensor:
        self.steps = self.steps + 1
        return x * self.steps
