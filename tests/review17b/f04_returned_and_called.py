import torch
from torch import Tensor


def soft_scale(x: Tensor, k: float = 2.0) -> Tensor:
    p = torch.sigmoid(x)
    p.mul_(k)  # sigmoid saved `p`
    return p


def get_gate(kind: str):
    return soft_scale if kind == "soft" else torch.sigmoid


class Gate(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(4, 4)

    def forward(self, x):
        return soft_scale(self.lin(x))  # called directly on an activation


if __name__ == "__main__":
    try:
        Gate()(torch.randn(3, 4)).sum().backward()
        print("ok")
    except RuntimeError as err:
        print("RAISE", str(err)[:100])
