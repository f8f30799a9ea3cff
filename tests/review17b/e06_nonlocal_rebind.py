import torch


def pick(boxes, alt):
    def use_alt():
        nonlocal boxes
        boxes = alt

    if boxes.numel() == 0:
        use_alt()
        return boxes  # rebound by `use_alt`: `alt`, not empty
    return torch.stack([boxes[..., 0], boxes[..., 1]], dim=-1)


def clip(props, k):
    rep = props[:, None, :].expand(-1, k, 2)
    d = pick(rep[:0], rep)
    d.clamp_(0, 1)
    return d


if __name__ == "__main__":
    try:
        clip(torch.rand(3, 2), 4)
        print("ok")
    except RuntimeError as err:
        print("RAISE", str(err)[:100])
