import torch


class Ident(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return x.view_as(x)

    @staticmethod
    def backward(ctx, g):
        return g


def sanitize(t):
    if len(t) == 0:
        return t
    return t + 0


def run(x):
    y = Ident.apply(x)
    s = sanitize(y)
    s.mul_(2)  # on the empty path: a view returned by a custom Function
    return s.sum()


if __name__ == "__main__":
    run(torch.randn(3, 4, requires_grad=True)).backward()
    print("non-empty: ok")
    try:
        run(torch.randn(0, 4, requires_grad=True)).backward()
        print("empty: ok")
    except RuntimeError as err:
        print("empty: RAISE", str(err)[:100])
