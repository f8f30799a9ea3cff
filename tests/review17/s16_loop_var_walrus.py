import torch
from torch import nn


class M(nn.Module):
    def __init__(self, n):
        super().__init__()
        self.pre = nn.Linear(n, n)
        self.convs = nn.ModuleList([nn.Sequential(nn.Linear(n, n), nn.Tanh()) for _ in range(2)])
        self.act = nn.Tanh()

    def forward(self, x):
        h = self.pre(x)
        for conv in self.convs:
            h = conv(h)
        g = self.pre(x)
        if (conv := self.act) is not None:  # (conv is a tanh now: it saves its output, not g)
            y = conv(g)
        g.mul_(0.5)
        return h + y


def run():
    return M(4)(torch.randn(3, 4))
