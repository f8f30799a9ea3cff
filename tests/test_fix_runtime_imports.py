"""Runtime-style rewrites import only the runtime: a module that never imported torch.distributed must
not gain an import that torch < 2.5 (or a build without distributed) lacks."""
import textwrap

import pytest

from inplace_lint.fixing import fix_code

SRC = textwrap.dedent("""\
    def mask_first(model, h, v):
        x = model(h).logits.squeeze(0)
        x[:, 0] = v
        return x
    """)


def test_runtime_style_guard_takes_dtensor_from_the_runtime():
    fixed = fix_code(SRC, unsafe_fixes=True, style="runtime").new_source
    assert fixed == textwrap.dedent("""\
        from inplace_lint.runtime import DTensor

        def mask_first(model, h, v):
            x = model(h).logits.squeeze(0)
            if isinstance(x, DTensor) and not isinstance(v, DTensor) and getattr(v, "ndim", 0) > 0:
                x = x.full_tensor()
            x = x.clone()
            x[:, 0] = v
            return x
        """)


def test_runtime_style_reuses_an_existing_real_import():
    src = "from torch.distributed.tensor import DTensor\n\n" + SRC
    fixed = fix_code(src, unsafe_fixes=True, style="runtime").new_source
    assert fixed.startswith("from torch.distributed.tensor import DTensor\n\ndef mask_first")
    assert "inplace_lint.runtime" not in fixed


def test_inline_style_imports_torch_dtensor():
    """With no torch floor stated, the import is guarded: torch 2.0 to 2.4 keep DTensor in ``_tensor``."""
    fixed = fix_code(SRC, unsafe_fixes=True, style="inline").new_source
    assert fixed.startswith("try:\n    from torch.distributed.tensor import DTensor\n"
                            "except ImportError:  # torch < 2.5\n    from torch.distributed._tensor import DTensor\n\n")
    fixed = fix_code(SRC, unsafe_fixes=True, style="inline", target=(None, (2, 5))).new_source
    assert fixed.startswith("from torch.distributed.tensor import DTensor\n\ndef mask_first(")


def test_runtime_dtensor_is_the_real_class():
    torch = pytest.importorskip("torch")
    from torch.distributed.tensor import DTensor as Real

    from inplace_lint import runtime

    assert runtime.DTensor is Real
    assert not isinstance(torch.zeros(1), runtime.DTensor)
