import torch


def fields(spot: torch.Tensor, k: torch.Tensor, z: torch.Tensor):
    lo, hi = torch.maximum(spot - 1, z), torch.minimum(spot + 1, z)
    payoff = lo * k  # (saves lo for k's gradient)
    lo.clamp_(min=0)
    return payoff + hi


def run():
    return fields(torch.randn(3), torch.randn(3, requires_grad=True), torch.zeros(3))
