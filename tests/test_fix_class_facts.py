"""What a class elsewhere in the project says about every rewrite (``analysis/class_facts.py``), each case executed
under torch 2.13: a ``forward`` returning one tensor under two field names makes those fields one storage, and a
tensor subclass that disables ``__torch_function__`` loses its class in ``clone()``. Both made a "safe" fix
change the result in the eleventh session's review; the fix is unsafe now, and saying so depends on a file the
written function never names, so a cached result is walked again when such a class appears."""
from __future__ import annotations

import pathlib
import textwrap

import pytest

from inplace_lint import workspace
from inplace_lint.adapters.cli import main
from inplace_lint.analysis import analyze_source, cache
from inplace_lint.findings import Applicability
from inplace_lint.fixing import fix_code

torch = pytest.importorskip("torch")

HEADER = "from dataclasses import dataclass\n\nimport torch\nfrom torch import nn\n\n\n"

SHARED = """
@dataclass
class Out:
    logits: torch.Tensor
    scores: torch.Tensor


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.head = nn.Linear(4, 3)

    def forward(self, x):
        h = self.head(x)
        scores = h
        return Out(logits=h, scores=scores)


def step(net, x, t):
    out = net(x)
    logits = out.logits
    logits.div_(t)
    return logits, out.{field}


def observe():
    torch.manual_seed(0)
    with torch.no_grad():
        return globals()["step"](Net(), torch.ones(2, 4), 2.0)[1].clone()  # (a call the analysis cannot see)
"""

SUBCLASS = """
class Scores(torch.Tensor):
    __torch_function__ = torch._C._disabled_torch_function_impl

    def top(self):
        return self.argmax(-1)


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 3)

    def forward(self, x):
        return self.lin(x).as_subclass(Scores)


def decide(model, x, t):
    scores = model(x)
    scores.div_(t)
    return scores.top()


def observe():
    torch.manual_seed(0)
    with torch.no_grad():
        return globals()["decide"](Net(), torch.ones(2, 4), 2.0)  # (a call the analysis cannot see)
"""


def _src(body: str) -> str:
    return HEADER + textwrap.dedent(body)


def _observe(code: str):
    namespace: dict = {}
    exec(compile(code, "<case>", "exec"), namespace)
    return namespace["observe"]()


def _finding(src: str):
    line = next(i for i, text in enumerate(src.splitlines(), 1) if "div_(t)" in text)
    [finding] = [f for f in analyze_source(src) if f.line == line]
    return finding


def test_a_field_the_forward_returns_the_written_tensor_under_makes_the_fix_unsafe():
    src = _src(SHARED.replace("{field}", "scores"))
    finding = _finding(src)
    assert finding.code == "IPV001"
    assert finding.fix.applicability is Applicability.UNSAFE
    assert finding.fix.reason == "`out` is read after the write (line 29) and would no longer see the change"
    assert fix_code(src).new_source is None
    forced = fix_code(src, unsafe_fixes=True).new_source
    assert forced is not None and not torch.equal(_observe(src), _observe(forced))  # scores: divided, then not


def test_another_field_of_the_same_output_still_takes_the_safe_fix():
    # `Out(logits=h, scores=h)` joins those two fields only: reading `out.hidden` afterwards sees no write
    src = _src(SHARED.replace("{field}", "hidden").replace("return Out(logits=h, scores=scores)",
                                                          "return Out(logits=h, scores=scores, hidden=h * 2)"))
    src = src.replace("    scores: torch.Tensor\n", "    scores: torch.Tensor\n    hidden: torch.Tensor\n")
    finding = _finding(src)
    assert finding.fix.applicability is Applicability.SAFE
    fixed = fix_code(src).new_source
    assert "logits = logits.clone().div_(t)" in fixed or "logits = logits / t" in fixed, fixed
    assert torch.equal(_observe(src), _observe(fixed))


def test_a_tensor_subclass_that_disables_torch_function_makes_the_fix_unsafe():
    src = _src(SUBCLASS)
    finding = _finding(src)
    assert finding.fix.applicability is Applicability.UNSAFE
    assert finding.fix.reason.startswith("the project defines tensor subclass `") \
        and "Scores` with its own `__torch_function__`" in finding.fix.reason, finding.fix.reason
    assert fix_code(src).new_source is None
    assert _observe(src).shape == (2,)
    forced = fix_code(src, unsafe_fixes=True).new_source
    with pytest.raises(AttributeError, match="top"):
        _observe(forced)


def test_a_torch_function_mode_is_no_tensor_subclass():
    src = _src(SUBCLASS.replace("class Scores(torch.Tensor):", "class Scores(torch.overrides.TorchFunctionMode):")
               .replace("__torch_function__ = torch._C._disabled_torch_function_impl",
                        "def __torch_function__(self, func, types, args=(), kwargs=None):\n"
                        "        return func(*args, **(kwargs or {}))")
               .replace(".as_subclass(Scores)", "").replace("scores.top()", "scores.argmax(-1)"))
    finding = _finding(src)
    assert finding.fix.applicability is Applicability.SAFE, finding.fix.reason


@pytest.fixture()
def own_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "user-cache"))
    monkeypatch.delenv(cache.ENV_KEY, raising=False)
    workspace._PROJECTS.clear()
    cache.reset()
    yield
    workspace._PROJECTS.clear()
    cache.reset()


def _check(root: pathlib.Path, capsys) -> str:
    workspace._PROJECTS.clear()  # a new process: only the disk cache is kept
    main(["check", "-j", "1", str(root)])
    return capsys.readouterr().out


def test_a_cached_verdict_is_walked_again_when_a_subclass_appears_elsewhere(tmp_path, capsys, own_cache):
    root = tmp_path / "proj"
    (root / "pkg").mkdir(parents=True)
    (root / "pyproject.toml").write_text("[project]\nname = 'proj'\n")
    (root / "pkg" / "__init__.py").write_text("")
    (root / "pkg" / "use.py").write_text(textwrap.dedent("""
        def decide(model, x, t):
            scores = model(x)
            scores.div_(t)
            return scores.argmax(-1)
        """))
    first = _check(root, capsys)
    assert "use.py:4:5: IPV001" in first and "[fix: safe]" in first, first
    (root / "pkg" / "types.py").write_text(_src(SUBCLASS.split("class Net")[0]))
    second = _check(root, capsys)
    assert "use.py:4:5: IPV001" in second and "[fix: unsafe]" in second, second
    (root / "pkg" / "types.py").unlink()
    assert "[fix: safe]" in _check(root, capsys)
