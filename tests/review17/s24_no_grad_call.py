import torch
from torch import nn


class M(nn.Module):
    def __init__(self, n):
        super().__init__()
        self.pre = nn.Linear(n, n)
        self.net = nn.Sequential(nn.Linear(n, n), nn.Tanh())

    def forward(self, x):
        h = self.pre(x)
        with torch.inference_mode():
            target = self.net(h)
        h.mul_(0.5)
        return h * 2 + target.clone()


def run():
    return M(4)(torch.randn(3, 4))
