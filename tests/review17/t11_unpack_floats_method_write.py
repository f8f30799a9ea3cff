import torch


def fields(H0: torch.Tensor, mux: torch.Tensor, bounds):
    muzL = 0.5 * mux
    B_lo, B_hi = torch.as_tensor(bounds[0]), torch.as_tensor(bounds[1])
    H_lo = H0 - B_lo * muzL
    B_lo.clamp_(min=0)
    return H_lo


def run():
    return fields(torch.randn(3), torch.randn(3, requires_grad=True), (0.5, 1.0))
