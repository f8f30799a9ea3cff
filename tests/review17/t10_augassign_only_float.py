import torch


def fields(H0: torch.Tensor, mux: torch.Tensor, bounds):
    muzL = 0.5 * mux
    B = torch.finfo(H0.dtype).eps
    H = H0 - B * muzL
    B += 1
    return H * B


def run():
    return fields(torch.randn(3), torch.randn(3, requires_grad=True), (0.0, 1.0))
