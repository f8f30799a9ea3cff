import torch


def sanitize(t):
    if t.shape[0] == 0:
        return t
    return t * 1.0


class Head(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(4, 4)

    def forward(self, x):
        a, b = self.lin(x).split(2, dim=-1)
        s = sanitize(a)
        s.add_(1)  # on the empty path: one output of a split
        return (s + b).sum()


if __name__ == "__main__":
    m = Head()
    m(torch.randn(3, 4)).backward()
    print("non-empty: ok")
    try:
        m(torch.randn(0, 4)).backward()
        print("empty: ok")
    except RuntimeError as err:
        print("empty: RAISE", str(err)[:100])
