import torch
from torch import Tensor


def gelu_tanh_(x: Tensor) -> Tensor:
    t = torch.tanh(0.7978845608 * (x + 0.044715 * x * x * x))
    t.add_(1.0)  # tanh saved `t` for backward
    return 0.5 * x * t


def get_activation(name: str):
    if name == "gelu_tanh":
        return gelu_tanh_
    return torch.relu


class MLP(torch.nn.Module):
    def __init__(self, act: str = "gelu_tanh"):
        super().__init__()
        self.fc1 = torch.nn.Linear(4, 8)
        self.fc2 = torch.nn.Linear(8, 2)
        self.act = get_activation(act)

    def forward(self, x):
        return self.fc2(self.act(self.fc1(x)))


if __name__ == "__main__":
    try:
        MLP()(torch.randn(3, 4)).sum().backward()
        print("ok")
    except RuntimeError as err:
        print("RAISE", str(err)[:100])
