"""Tiny torch pieces shared by the runtime and codemod tests (a custom Function returning a view: docs/pytorch-facts.md#custom-function-view)."""
import torch

CF_MSG = "is a view and is being modified inplace"


class ViewFn(torch.autograd.Function):
    """Custom Function whose forward returns a view of its input, as fused kernels and a
    tensor-parallel head's ``to_local()`` do: in-place on its output raises under grad."""

    @staticmethod
    def forward(ctx, x):
        return x.view_as(x)

    @staticmethod
    def backward(ctx, g):
        return g
