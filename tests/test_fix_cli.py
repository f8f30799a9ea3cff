"""``inplace-lint fix`` on the shared surfaces: the runner (--jobs, crashes), fix-style and
per-file-ignores from the config file."""
from __future__ import annotations

import pytest

from inplace_lint.adapters.jobs import FixJob
from inplace_lint.adapters.cli import main

BAD = "def f(model, h, t):\n    x = model(h).logits.squeeze(0)\n    x.div_(t)\n    return x\n"
RUNTIME = ("from inplace_lint.runtime import out_of_place\n\n"
           "def f(model, h, t):\n    x = model(h).logits.squeeze(0)\n    x = out_of_place(x, \"div_\", t)\n    return x\n")
INLINE = ("try:\n    from torch.distributed.tensor import DTensor\n"
          "except ImportError:  # torch < 2.5\n    from torch.distributed._tensor import DTensor\n\n"
          "def f(model, h, t):\n    x = model(h).logits.squeeze(0)\n    if isinstance(x, DTensor) and not isinstance(t, DTensor) and getattr(t, \"ndim\", 0) > 0:\n"
          "        x = x.full_tensor()\n    x = x.clone().div_(t)\n    return x\n")


@pytest.fixture
def project(tmp_path):
    for name in ("a.py", "b.py", "c.py"):
        (tmp_path / name).write_text(BAD)
    return tmp_path


@pytest.mark.parametrize("jobs", ["1", "3"])
def test_fix_all_files_whatever_jobs(project, capsys, jobs):
    assert main(["fix", "-j", jobs, str(project)]) == 0
    assert [(project / n).read_text() for n in ("a.py", "b.py", "c.py")] == [INLINE] * 3  # the default style
    assert capsys.readouterr().err == "3 fixes applied in 3 files; 0 findings remain; 0 files skipped. Scanned 3 files.\n"


def test_fix_style_and_per_file_ignores_from_config(project, capsys):
    (project / "setup.cfg").write_text("[inplace_lint]\nfix-style = runtime\nper-file-ignores = b.py:IPV001\n")
    assert main(["fix", "-q", str(project)]) == 0
    assert [(project / n).read_text() for n in ("a.py", "b.py", "c.py")] == [RUNTIME, BAD, RUNTIME]
    (project / "a.py").write_text(BAD)
    assert main(["fix", "-q", "--style", "inline", str(project / "a.py")]) == 0  # the flag wins
    assert (project / "a.py").read_text() == INLINE


def test_fix_crash_is_reported_and_run_goes_on(project, capsys, monkeypatch):
    def crash_on_b(self, path):
        if path.endswith("b.py"):
            raise KeyError("boom")
        return real(self, path)

    real = FixJob.__call__
    monkeypatch.setattr(FixJob, "__call__", crash_on_b)
    assert main(["fix", "-j", "1", str(project)]) == 1
    err = capsys.readouterr().err.splitlines()
    assert err[0].startswith(f"{project / 'b.py'}: internal error, the analysis crashed: KeyError: 'boom' (at ")
    assert err[1] == "2 fixes applied in 2 files; 0 findings remain; 1 file skipped. Scanned 3 files."
    assert (project / "b.py").read_text() == BAD and (project / "c.py").read_text() == INLINE
