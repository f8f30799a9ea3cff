import torch


def pick(boxes, fallbacks):
    if boxes.numel() == 0:
        for cand in fallbacks:
            if cand is None:
                return boxes  # on the second pass `boxes` is the first fallback, not empty
            boxes = cand
    return torch.stack([boxes[..., 0], boxes[..., 1]], dim=-1)


def clip(props, k):
    rep = props[:, None, :].expand(-1, k, 2)
    d = pick(rep[:0], [rep, None])
    d.clamp_(0, 1)
    return d


if __name__ == "__main__":
    try:
        clip(torch.rand(3, 2), 4)
        print("ok")
    except RuntimeError as err:
        print("RAISE", str(err)[:100])
