import torch


def sanitize(t):
    if t.numel() == 0:
        return t
    return torch.stack([t[..., 0], t[..., 1]], dim=-1)


class Head(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(2, 2)

    def forward(self, x):
        e = self.lin(x).exp()
        s = sanitize(e)
        s.mul_(2)  # on the empty path `s` is `e`, which exp saved
        return e.sum() + s.sum()


if __name__ == "__main__":
    m = Head()
    m(torch.randn(3, 2)).backward()
    print("non-empty: ok")
    try:
        m(torch.randn(0, 2)).backward()
        print("empty: ok")
    except RuntimeError as err:
        print("empty: RAISE", str(err)[:100])
