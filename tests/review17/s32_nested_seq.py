import torch
from torch import nn


class M(nn.Module):
    def __init__(self, n):
        super().__init__()
        self.pre = nn.Linear(n, n)
        self.net = nn.Sequential(nn.Sequential(nn.Sequential(nn.Linear(n, n))), nn.Tanh())
        self.sn = nn.Sequential(nn.utils.parametrizations.spectral_norm(nn.Linear(n, n)), nn.Tanh())

    def forward(self, x):
        h = self.pre(x)
        g = self.pre(x)
        out = self.net(h) + self.sn(g.clone())
        h.mul_(0.5)
        return out


def run():
    return M(4)(torch.randn(3, 4))
