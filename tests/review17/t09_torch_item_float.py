import torch


def fields(H0: torch.Tensor, mux: torch.Tensor):
    muzL = 0.5 * mux
    B = torch.max(H0).item()  # (a float)
    H = H0 - B * muzL
    B += 1  # (rebinds a number)
    return H * B


def run():
    return fields(torch.randn(3), torch.randn(3, requires_grad=True))
