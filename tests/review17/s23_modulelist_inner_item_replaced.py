import torch
from torch import nn


class M(nn.Module):
    def __init__(self, n):
        super().__init__()
        self.pre = nn.Linear(n, n)
        self.convs = nn.ModuleList([nn.Sequential(nn.Linear(n, n), nn.Tanh()) for _ in range(2)])
        for block in self.convs:  # (each block's Linear swapped out through another name)
            block[0] = nn.Identity()

    def forward(self, x):
        h = self.pre(x)
        out = self.convs[1](h)
        h.mul_(0.5)
        return out


def run():
    return M(4)(torch.randn(3, 4))
