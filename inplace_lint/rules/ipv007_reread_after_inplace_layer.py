"""IPV007: a layer built with ``inplace=True`` writes a tensor that the code reads again afterwards."""
from ..findings import Origin, WriteKind
from .base import Example, Rule, Write


def applies(origin: Origin, write: Write) -> bool:
    # (set only where the call does not show its write: a layer built with `inplace=True`, a submodule's forward)
    return write.reread is not None


def message(write: Write, origin: Origin) -> str:
    text, line, _ = write.reread
    # (a layer built with `inplace=True` rectifies what it was given; a submodule's forward writes it otherwise)
    sees = "the layer's output, not its input" if write.kind is WriteKind.INPLACE_KWARG and "(..." not in write.op \
        else "what the call wrote, not what it was given"
    name, _, qualifier = text.partition(" (")  # ("(on some paths)", "(on the loop's next pass)")
    qualifier = f" ({qualifier}" if qualifier else ""
    if name == f"`{write.target}`":
        return (f"{write.op} writes in place to `{write.target}`, which is read again on line {line}{qualifier}: "
                f"that read sees {sees}")
    return (f"{write.op} writes in place to `{write.target}`; {name}, read again on line {line}{qualifier}, holds "
            f"the same tensor and sees {sees}")


RULE = Rule(
    code="IPV007",
    name="reread-after-inplace-layer",
    severity="warning",
    summary="A layer built with `inplace=True` (or an `nn.Sequential` that starts with one, or a submodule whose "
            "forward writes its input in place) writes a tensor the code reads again afterwards.",
    applies=applies,
    message=message,
    without_grad=True,
    about_readers=True,
    what=(
        "Finds calls of a layer built with `inplace=True` (`self.act = nn.ReLU(inplace=True)`, or `nn.ReLU(True)`; "
        "`nn.LeakyReLU`, `nn.ELU`, `nn.Dropout`, ... likewise), or of an `nn.Sequential` whose first layer is "
        "one (written out, a list that starts with one on some path, a stack a module function returns, or one "
        "built empty and filled with `add_module`), or of a layer class handed to the constructor and built with "
        "`inplace=True` (`self.act = act_layer(inplace=True)`: with `act_layer=nn.ReLU`, or no default), on a name "
        "that is read again afterwards "
        "on some path: later in the function before the name is "
        "bound again, in the same expression (`x + self.block(x)`), on a loop's next pass, through a name "
        "bound to the same tensor before the call (`identity = x`), or through a list, tuple or dict that holds "
        "it (`feats.append(x)`, `feats = [x]`, `outs[k] = x`; in a loop, also what the pass stored after the call, "
        "which the next pass writes; and a layer list iterated, `for f in self.layers: x = f(x); fmaps.append(x)`, whose "
        "in-place layer after the first rectifies what the previous pass stored). Reads of metadata only (`x.shape`, "
        "`x.size(0)`, `len(x)`) do not count, nor does a ReLU-like layer on a value that is never negative "
        "(`x = F.relu(h)`), which it leaves as it is. A call of a submodule whose `forward` writes its input in "
        "place (`x.masked_fill_(...)` on a view of it, an in-place activation on it) is reported the same way, "
        "with the write inside named; so is an in-place activation that says so (`h = F.relu(x, inplace=True)`, "
        "`h = x.relu_()`) whose result goes on under another name while `x` is read again (a statement of its own, "
        "or a result bound to `x` itself, means the write). Other rules come first: when the written tensor is also saved for "
        "backward, a view of a split output, ..., that rule reports the write."
    ),
    why=(
        "The call does not show that it writes its argument: `nn.Sequential` runs its first layer on the tensor "
        "it was given, and an in-place activation returns that same tensor, rectified. A residual branch that "
        "reads the block's input after the block ran (`shortcut = self.skip(x)`, `out + identity`) then sees "
        "the activation's output instead of the input: no error, different values from the model the code "
        "describes (docs/pytorch-facts.md#inplace-layer-input). timm's Xception port builds the first "
        "activation of each block with `inplace=False` for this reason. With a dropout layer the write happens "
        "only in training mode."
    ),
    fix_safety=(
        "No automatic fix: the call is not where the flag is set, and dropping the flag where the layer is built "
        "changes every other call of it. Build the layer with `inplace=False` (or pass `x.clone()` at this "
        "call) when the later read should see the input; where it should see the output, bind the result to "
        "the same name (`x = self.act(x)`) so the intent shows."
    ),
    references="PyTorch docs: torch.nn.Sequential, torch.nn.ReLU (`inplace`); timm `models/xception.py` "
               "(`rep[0] = nn.ReLU(inplace=False)`); docs/pytorch-facts.md#inplace-layer-input",
    invalid=(
        Example(
            """
            import torch.nn as nn

            class Block(nn.Module):
                def __init__(self, c):
                    super().__init__()
                    self.residual = nn.Sequential(nn.ReLU(inplace=True), nn.Conv2d(c, c, 3, padding=1))
                    self.shortcut = nn.Conv2d(c, c, 1)

                def forward(self, x):
                    residual = self.residual(x)
                    shortcut = self.shortcut(x)
                    return residual + shortcut
            """,
            message="`self.residual`'s first layer `nn.ReLU(inplace=True)` writes in place to `x`, which is read "
                    "again on line 11: that read sees the layer's output, not its input",
        ),
        Example(
            """
            import torch.nn as nn

            class Head(nn.Module):
                def __init__(self, d):
                    super().__init__()
                    self.act = nn.ReLU(inplace=True)
                    self.proj = nn.Linear(d, d)

                def forward(self, h):
                    identity = h
                    out = self.proj(self.act(h))
                    return out + identity
            """,
            message="`nn.ReLU(inplace=True)` writes in place to `h`; `identity`, read again on line 12, holds the "
                    "same tensor and sees the layer's output, not its input",
        ),
    ),
    valid=(
        """
        import torch.nn as nn

        class Block(nn.Module):
            def __init__(self, c):
                super().__init__()
                self.residual = nn.Sequential(nn.ReLU(inplace=False), nn.Conv2d(c, c, 3, padding=1))
                self.shortcut = nn.Conv2d(c, c, 1)

            def forward(self, x):
                residual = self.residual(x)
                shortcut = self.shortcut(x)
                return residual + shortcut
        """,
        """
        import torch.nn as nn
        import torch.nn.functional as F

        class Block(nn.Module):
            def __init__(self, c):
                super().__init__()
                self.act = nn.ReLU(inplace=True)
                self.conv = nn.Conv2d(c, c, 3, padding=1)

            def forward(self, x):
                x = self.act(x)
                h = self.conv(x).abs()
                out = self.act(h)
                return out + h, x.shape
        """,
    ),
)
