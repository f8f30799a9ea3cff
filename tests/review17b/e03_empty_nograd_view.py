import torch

lin = torch.nn.Linear(4, 4)


def sanitize(t):
    if not t.numel():
        return t
    return t.clone()


def run(x):
    h = lin(x)
    with torch.no_grad():
        v = h[:, :2]
    s = sanitize(v)
    s.mul_(0.5)  # on the empty path: a view made under no_grad, written with grad on
    return h.sum()


if __name__ == "__main__":
    run(torch.randn(3, 4)).backward()
    print("non-empty: ok")
    try:
        run(torch.randn(0, 4)).backward()
        print("empty: ok")
    except RuntimeError as err:
        print("empty: RAISE", str(err)[:100])
