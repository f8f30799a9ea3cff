import torch


def fields(H0: torch.Tensor, mux: torch.Tensor):
    muzL = 0.5 * mux
    B_lo, B_hi = torch.exp(H0), torch.exp(H0 + 1)
    H_lo = H0 - B_lo * muzL  # (saves B_lo for muzL's gradient)
    H_hi = H0 - B_hi * muzL
    B_lo += 1  # (in place on a tensor)
    return H_lo + H_hi


def run():
    return fields(torch.randn(3), torch.randn(3, requires_grad=True))
