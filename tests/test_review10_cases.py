"""The fourth review's cases against the newest facts and their fixes (each executed under torch 2.13): `2.0 **
n` of a number is no tensor, a layer subclass built without weights or with reflect padding saves no input,
an `nn.Module` with a plain mixin's `__call__` runs `nn.Module.__call__` (so `forward`, with grad on), and a
`locals()` dict keeps every local, so a rebinding fix would leave it the old tensor."""
from __future__ import annotations

import importlib.util
import textwrap

import pytest

from inplace_lint.analysis import analyze_source
from inplace_lint.findings import Applicability
from inplace_lint.fixing import fix_code

torch = pytest.importorskip("torch")


def _module(tmp_path, name, source):
    path = tmp_path / f"{name}.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location(f"review10_{name}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _findings(source, name):
    return [(f.line, f.code) for f in analyze_source(source, filename=f"{name}.py")]


POWER_OF_A_NUMBER = textwrap.dedent("""\
    import torch
    from torch import nn

    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(4, 4)

        def forward(self, x):
            h = self.fc(x)
            p = 2.0 ** h.size(-1)            # a Python float
            p += 1
            return h * p
    """)

UNSAVED_SUBCLASSES = textwrap.dedent("""\
    import torch
    from torch import nn

    class ReflectConv(nn.Conv1d):
        def __init__(self, c):
            super().__init__(c, c, 3, padding=1, padding_mode="reflect")   # saves the padded copy

        def forward(self, x):
            y = super().forward(x)
            x.mul_(2.0)
            return y

    class PlainNorm(nn.LayerNorm):
        def __init__(self, d):
            super().__init__(d, elementwise_affine=False)                  # no weight

        def forward(self, x):
            y = super().forward(x)
            x.mul_(2.0)
            return y
    """)

MIXIN_CALL = textwrap.dedent("""\
    import torch
    from torch import nn

    class NoGradCall:
        @torch.no_grad()
        def __call__(self, *args, **kwargs):
            return self.forward(*args, **kwargs)

    class Step(nn.Module, NoGradCall):       # nn.Module.__call__ comes first in the MRO
        def forward(self, x):
            p = torch.softmax(x, -1)
            p[:, 0] = 0.0
            return p

    def train_step(h):
        op = Step()
        return op(h)
    """)

LOCALS_FRAME = textwrap.dedent("""\
    import torch
    from torch import nn

    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(4, 4)

        def forward(self, x):
            h = 2 ** self.fc(x)
            frame = locals()                       # holds h
            h += 1
            return frame["h"]
    """)


def test_a_number_to_a_numbers_power_is_no_saved_output(tmp_path):
    assert _findings(POWER_OF_A_NUMBER, "c12") == []
    m = _module(tmp_path, "c12", POWER_OF_A_NUMBER)
    x = torch.randn(3, 4, requires_grad=True)
    m.M()(x).sum().backward()  # `p` is a float: nothing raises
    assert x.grad is not None


def test_layer_subclasses_built_without_weights_or_with_padding_save_no_input(tmp_path):
    assert _findings(UNSAVED_SUBCLASSES, "c25") == []
    m = _module(tmp_path, "c25", UNSAVED_SUBCLASSES)
    scale = torch.ones(1, requires_grad=True)
    (m.ReflectConv(2)(torch.ones(1, 2, 5)) * scale).sum().backward()
    (m.PlainNorm(4)(torch.ones(3, 4)) * scale).sum().backward()
    assert scale.grad is not None


def test_a_module_with_a_plain_mixins_call_runs_forward_with_grad(tmp_path):
    assert _findings(MIXIN_CALL, "c28") == [(12, "IPV006")]
    m = _module(tmp_path, "c28", MIXIN_CALL)
    assert m.Step.__call__ is torch.nn.Module.__call__
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        m.train_step(torch.randn(3, 4, requires_grad=True) * 1).sum().backward()


def test_locals_keeps_the_tensor_a_rebinding_fix_would_leave_behind(tmp_path):
    findings = analyze_source(LOCALS_FRAME, filename="c35.py")
    assert [(f.line, f.code) for f in findings] == [(12, "IPV006")]
    assert findings[0].fix is not None and findings[0].fix.applicability is Applicability.UNSAFE
    assert "locals()" in findings[0].fix.reason
    fixed = fix_code(LOCALS_FRAME, unsafe_fixes=True).new_source
    assert fixed is not None and "h += 1" not in fixed
    m, f = _module(tmp_path, "c35", LOCALS_FRAME), _module(tmp_path, "c35_fixed", fixed)
    torch.manual_seed(0)
    original = m.M()
    rewritten = f.M()
    rewritten.load_state_dict(original.state_dict())
    x = torch.randn(2, 4)
    with torch.no_grad():
        assert not torch.equal(original(x), rewritten(x))  # the frame saw the write; after the fix it does not


HOOK_KEEPS_OUTPUT = textwrap.dedent("""\
    import torch
    from torch import nn

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(4, 4)
            self.seen = []
            self.register_forward_hook(self._keep)    # keeps every output

        def _keep(self, mod, inp, out):
            self.seen.append(out)

        def forward(self, x):
            return torch.exp(self.fc(x))

    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.blocks = nn.ModuleList([Block() for _ in range(2)])

        def forward(self, x):
            for b in self.blocks:
                y = b(x)
            y += 1
            return y
    """)


def test_a_forward_hook_keeps_the_output_a_rebinding_fix_would_leave_behind(tmp_path):
    findings = analyze_source(HOOK_KEEPS_OUTPUT, filename="c32.py")
    assert [(f.line, f.code) for f in findings] == [(25, "IPV006")]
    assert findings[0].fix.applicability is Applicability.UNSAFE and "forward hook" in findings[0].fix.reason
    fixed = fix_code(HOOK_KEEPS_OUTPUT, unsafe_fixes=True).new_source
    m, f = _module(tmp_path, "c32", HOOK_KEEPS_OUTPUT), _module(tmp_path, "c32_fixed", fixed)
    original, rewritten = m.M(), f.M()
    rewritten.load_state_dict(original.state_dict())
    x = torch.randn(2, 4)
    with torch.no_grad():
        original(x), rewritten(x)
    kept_before = original.blocks[1].seen[-1]
    kept_after = rewritten.blocks[1].seen[-1]
    assert not torch.equal(kept_before, kept_after)  # the hook saw the `+= 1`; after the fix it does not
