import torch
from torch import nn


class M(nn.Module):
    def __init__(self, n):
        super().__init__()
        self.pre = nn.Linear(n, n)
        self.convs = nn.ModuleList()
        for _ in range(2):
            self.convs.append(nn.Linear(n, n))
        self.convs.extend([nn.Sequential(nn.Linear(n, n), nn.Tanh())])

    def forward(self, x):
        h = self.pre(x)
        out = self.convs[0](h)
        h.mul_(0.5)
        return out


def run():
    return M(4)(torch.randn(3, 4))
