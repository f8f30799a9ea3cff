"""The third review's cases against the grad-off flag, ModuleList and index facts (each executed under torch
2.13): a flag is true only with grad off where it is tested (not after its `no_grad` block, not inside
`enable_grad`, not once `|=` or a project method made it), in every arm form (`and`, a conditional
expression, a helper's write under it); a ModuleList's class is the one `__init__` built, once, exactly; a
literal index is read exactly."""
from __future__ import annotations

import importlib.util
import textwrap

import pytest

from inplace_lint.analysis import analyze_source

torch = pytest.importorskip("torch")


def leaf():
    torch.manual_seed(0)
    return torch.randn(3, 4, requires_grad=True)


def _module(tmp_path, name, source):
    path = tmp_path / f"{name}.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location(f"review9_{name}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _backward(thunk):
    out = thunk()
    out.sum().backward()


CASES = {
    'c01': ('a flag made inside `no_grad` says nothing after the block', 7, 'raises', 'm.f(leaf())', textwrap.dedent("""\
        import torch
        def f(x):
            with torch.no_grad():
                flag = not torch.is_grad_enabled()   # True, but only inside the block
            y = x.exp()
            if flag:                                  # grad is on again here
                y.mul_(2)
            return y
        """)),
    'c02': ('a flag made with grad off says nothing inside `enable_grad`', 7, 'raises_under_no_grad', 'm.f(leaf())', textwrap.dedent("""\
        import torch
        def f(x):
            flag = not torch.is_grad_enabled()
            with torch.enable_grad():
                y = x.exp()
                if flag:
                    y.mul_(2)
            return y
        """)),
    'c05': ('`flag |= force` is no longer a flag', 7, 'raises', 'm.f(leaf(), True)', textwrap.dedent("""\
        import torch
        def f(x, force: bool):
            flag = not torch.is_grad_enabled()
            flag |= force
            y = x.exp()
            if flag:
                y.mul_(2)
            return y
        """)),
    'c09': ("`cfg.is_grad_enabled()` is the project's method, not torch's", 11, 'raises', 'm.f(leaf(), m.Cfg())', textwrap.dedent("""\
        import torch
        class Cfg:
            def __init__(self):
                self.grad = False
            def is_grad_enabled(self):
                return self.grad
        def f(x, cfg: Cfg):
            flag = not cfg.is_grad_enabled()
            y = x.exp()
            if flag:
                y.mul_(2)
            return y
        """)),
    'c10': ("`enable_grad` inside the flag's branch turns grad on there", 7, 'raises_under_no_grad', 'm.f(leaf())', textwrap.dedent("""\
        import torch
        def f(x):
            flag = not torch.is_grad_enabled()
            if flag:
                with torch.enable_grad():
                    y = x.exp()
                    y.mul_(2)
                    return y
            return x * 2
        """)),
    'c11': ('a conditional expression on a flag runs its arm with grad off', None, 'runs', 'm.f(leaf())', textwrap.dedent("""\
        import torch
        def f(x):
            flag = not torch.is_grad_enabled()
            y = x.exp()
            y = y.mul_(2) if flag else y * 2
            return y
        """)),
    'c19': ('`if inplace_safe and cond:` needs the flag true', None, 'model', None, textwrap.dedent("""\
        import torch
        from torch import nn
        class Block(nn.Module):
            def forward(self, x, inplace_safe=False):
                y = x.exp()
                if inplace_safe and y.shape[0] > 1:
                    y.mul_(2)
                return y

        class Model(nn.Module):
            def __init__(self):
                super().__init__()
                self.block = Block()
            def forward(self, x):
                inplace_safe = not (self.training or torch.is_grad_enabled())
                return self.block(x, inplace_safe=inplace_safe)
        """)),
    'c20': ("a helper's write under the flag it is passed (OpenFold's `add`)", None, 'model', None, textwrap.dedent("""\
        import torch
        from torch import nn
        def _add(m1, m2, inplace):
            if inplace:
                m1 += m2
            else:
                m1 = m1 + m2
            return m1
        class Block(nn.Module):
            def forward(self, x, inplace_safe=False):
                y = x.exp()
                return _add(y, x, inplace_safe)

        class Model(nn.Module):
            def __init__(self):
                super().__init__()
                self.block = Block()
            def forward(self, x):
                inplace_safe = not (self.training or torch.is_grad_enabled())
                return self.block(x, inplace_safe=inplace_safe)
        """)),
    'c21': ('a conditional expression on the flag parameter', None, 'model', None, textwrap.dedent("""\
        import torch
        from torch import nn
        class Block(nn.Module):
            def forward(self, x, inplace_safe=False):
                y = x.exp()
                y = y.mul_(2) if inplace_safe else y * 2
                return y

        class Model(nn.Module):
            def __init__(self):
                super().__init__()
                self.block = Block()
            def forward(self, x):
                inplace_safe = not (self.training or torch.is_grad_enabled())
                return self.block(x, inplace_safe=inplace_safe)
        """)),
    'c23': ('a ModuleList whose last element is replaced holds two classes', None, 'net', None, textwrap.dedent("""\
        import torch
        from torch import nn
        class ExpBlock(nn.Module):
            def forward(self, x):
                return x.exp()
        class AddBlock(nn.Module):
            def forward(self, x):
                return x + 1

        class Net(nn.Module):
            def __init__(self, n):
                super().__init__()
                self.blocks = nn.ModuleList([ExpBlock() for _ in range(n)])
                self.blocks[-1] = AddBlock()

            def forward(self, x):
                h = x
                for b in self.blocks:
                    h = b(h)
                h.mul_(2)
                return h
        """)),
    'c25': ('a ModuleList replaced by an empty one', None, 'net', None, textwrap.dedent("""\
        import torch
        from torch import nn
        class ExpBlock(nn.Module):
            def forward(self, x):
                return x.exp()
        class AddBlock(nn.Module):
            def forward(self, x):
                return x + 1

        class Net(nn.Module):
            def __init__(self, n):
                super().__init__()
                self.blocks = nn.ModuleList([ExpBlock() for _ in range(n)])
                self.blocks = nn.ModuleList()

            def forward(self, x):
                h = x
                for b in self.blocks:
                    h = b(h)
                h.mul_(2)
                return h
        """)),
    'c28': ("a ModuleList of the base class runs the base's forward, not a subclass's", None, 'net', None, textwrap.dedent("""\
        import torch
        from torch import nn
        class ExpBlock(nn.Module):
            def forward(self, x):
                return x.exp()
        class AddBlock(nn.Module):
            def forward(self, x):
                return x + 1

        class Base(nn.Module):
            def forward(self, x):
                return x + 1
        class Child(Base):
            def forward(self, x):
                return x.exp()

        class Net(nn.Module):
            def __init__(self, n):
                super().__init__()
                self.blocks = nn.ModuleList([Base() for _ in range(n)])

            def forward(self, x):
                h = x
                for b in self.blocks:
                    h = b(h)
                h.mul_(2)
                return h
        """)),
    'c31': ('a class overriding `__call__` does not run `forward`', None, 'net', None, textwrap.dedent("""\
        import torch
        from torch import nn
        class ExpBlock(nn.Module):
            def forward(self, x):
                return x.exp()
        class AddBlock(nn.Module):
            def forward(self, x):
                return x + 1

        class Wrapped(ExpBlock):
            def __call__(self, x):
                return x + 1

        class Net(nn.Module):
            def __init__(self, n):
                super().__init__()
                self.blocks = nn.ModuleList([Wrapped() for _ in range(n)])

            def forward(self, x):
                h = x
                for b in self.blocks:
                    h = b(h)
                h.mul_(2)
                return h
        """)),
    'c34': ('`y[~0]` is basic indexing, a view', 5, 'raises', 'm.f(leaf())', textwrap.dedent("""\
        import torch
        def f(x):
            y = x.exp()
            z = y[~0]          # the last row: ~0 == -1, basic indexing, a view
            z.mul_(2)
            return y
        """)),
    'c36': ('`y[True]` copies', None, 'runs', 'm.f(leaf())', textwrap.dedent("""\
        import torch
        def f(x):
            y = x.exp()
            y[True].mul_(2)     # a copy: writes nothing that autograd saved
            return y
        """)),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_the_finding_is_what_torch_does(tmp_path, name):
    why, line, how, call, source = CASES[name]
    found = [(f.line, f.code) for f in analyze_source(source, filename=f"{name}.py")]
    assert found == ([(line, "IPV006")] if line else []), why
    m = _module(tmp_path, name, source)
    if how == "raises":
        with pytest.raises(RuntimeError, match="modified by an inplace operation"):
            _backward(lambda: eval(call, {"m": m, "leaf": leaf}))
    elif how == "raises_under_no_grad":
        def under_no_grad():
            with torch.no_grad():
                return eval(call, {"m": m, "leaf": leaf})
        with pytest.raises(RuntimeError, match="modified by an inplace operation"):
            _backward(under_no_grad)
    elif how == "runs":
        _backward(lambda: eval(call, {"m": m, "leaf": leaf}))
    elif how == "model":  # training, eval with grad on, and eval under no_grad (the in-place arm) all run
        _backward(lambda: m.Model()(leaf() * 1))
        _backward(lambda: m.Model().eval()(leaf() * 1))
        with torch.no_grad():
            assert m.Model().eval()(leaf() * 1).shape == (3, 4)
    else:  # a ModuleList net: its blocks' outputs are not saved, so the write after the loop runs
        for n in (1, 2):
            _backward(lambda: m.Net(n)(leaf() * 1))


def test_a_flag_parameter_of_an_exported_class_is_decided_by_its_users(tmp_path):
    """`Block` is imported by the package's `__init__`: a user may call `Block()(x, inplace_safe=True)` with
    grad on, whatever the package's own calls pass."""
    from inplace_lint.adapters.cli import main
    from inplace_lint import workspace

    package = tmp_path / "proj" / "pkg"
    package.mkdir(parents=True)
    (tmp_path / "proj" / "pyproject.toml").write_text('[project]\nname = "pkg"\n')
    (package / "__init__.py").write_text("from .m import Block, Model\n")
    (package / "m.py").write_text(CASE_C14)
    workspace._PROJECTS.clear()
    try:
        assert main(["check", "-q", "--no-cache", str(tmp_path / "proj")]) == 1
    finally:
        workspace._PROJECTS.clear()
    m = _module(tmp_path, "c14", CASE_C14)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        _backward(lambda: m.Block()(leaf(), inplace_safe=True))


CASE_C14 = textwrap.dedent("""\
    import torch
    from torch import nn
    class Block(nn.Module):
        def forward(self, x, inplace_safe=False):
            y = x.exp()
            if inplace_safe:
                y.mul_(2)
            return y
    class Model(nn.Module):
        def __init__(self):
            super().__init__()
            self.block = Block()
        def forward(self, x):
            inplace_safe = not (self.training or torch.is_grad_enabled())
            return self.block(x, inplace_safe=inplace_safe)
    """)


def test_a_no_grad_view_of_a_saved_output_raises_at_the_write_so_ipv005_names_it(tmp_path):
    """Both IPV005 and IPV006 describe `v`; torch raises IPV005's error at the write itself, before any
    backward, so IPV005 reports it (the rules' priority: the earlier failure first)."""
    source = textwrap.dedent("""\
        import torch
        def f(x):
            y = x.exp()
            with torch.no_grad():
                v = y[-1]
            v.mul_(2)
            return y
        """)
    assert [(f.line, f.code) for f in analyze_source(source, filename="c38.py")] == [(6, "IPV005")]
    m = _module(tmp_path, "c38", source)
    with pytest.raises(RuntimeError, match="A view was created in no_grad mode and is being modified inplace"):
        m.f(leaf())
