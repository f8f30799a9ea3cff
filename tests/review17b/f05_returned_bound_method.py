import torch
from torch import Tensor


class Block(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(4, 4)

    def _fast(self, h: Tensor) -> Tensor:
        e = h.exp()
        e.add_(1.0)  # exp saved `e`
        return e.log()

    def _slow(self, h: Tensor) -> Tensor:
        return torch.nn.functional.softplus(h)

    def pick(self, fast: bool):
        return self._fast if fast else self._slow

    def forward(self, x):
        f = self.pick(True)
        return f(self.lin(x))


if __name__ == "__main__":
    try:
        Block()(torch.randn(3, 4)).sum().backward()
        print("ok")
    except RuntimeError as err:
        print("RAISE", str(err)[:100])
