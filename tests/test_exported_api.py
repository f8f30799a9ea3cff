"""A package's API (what its `__init__` imports under a public name) is called by its users where no call site
shows: its in-project calls do not decide a guess about its parameters, and the message names the condition
the write needs. Its private twin is decided by its in-project calls. Executed under torch."""
from __future__ import annotations

import importlib
import pathlib
import shutil
import sys

import pytest

from inplace_lint.analysis.project import Project
from inplace_lint.config import DEFAULT_SETTINGS

PACKAGE = pathlib.Path(__file__).resolve().parent.parent / "fixtures" / "project" / "exportpkg"


def test_an_exported_function_keeps_its_guess_with_the_condition(tmp_path):
    work = tmp_path / "exportpkg"
    shutil.copytree(PACKAGE, work)
    project = Project(DEFAULT_SETTINGS, tmp_path)
    for path in sorted(work.glob("*.py")):
        project.add_file(str(path), source=path.read_text())
    project.build()
    found = [(f.line, f.col, f.code, f.message) for f in project.findings(str(work / "volrend.py"))]
    assert found == [(13, 8, "IPV006", "`*=` writes in place to `trans`, `torch.exp(-torch.cumsum(sigmas * dt, dim=-1))`, "
                      "whose output autograd saves for backward; backward raises when `prefix_trans is not None` "
                      "(it does when `sigmas` requires grad)")]
    assert project.findings(str(work / "__init__.py")) == []


def test_the_exported_write_raises_for_a_user_and_the_private_call_runs(tmp_path):
    torch = pytest.importorskip("torch")
    shutil.copytree(PACKAGE, tmp_path / "exportpkg")
    sys.path.insert(0, str(tmp_path))
    try:
        pkg = importlib.import_module("exportpkg")
        sigmas = torch.rand(2, 4, requires_grad=True)
        with pytest.raises(RuntimeError, match="modified by an inplace operation"):
            pkg.transmittance(sigmas, torch.full((2, 4), 0.5), torch.rand(2, 4)).sum().backward()
        pkg.transmittance(sigmas, torch.full((2, 4), 0.5)).sum().backward()  # no prefix: nothing written
        out = pkg.occupancy(4)  # what the package itself passes needs no grad: legal
        assert not out.requires_grad
        assert torch.allclose(out, 2 * torch.exp(-torch.cumsum(torch.full((4,), 0.5), -1)))
    finally:
        sys.path.remove(str(tmp_path))
        for name in [m for m in sys.modules if m == "exportpkg" or m.startswith("exportpkg.")]:
            del sys.modules[name]


def test_a_tests_package_is_no_api(tmp_path):
    """``tests/__init__.py`` re-exporting a helper does not make it a library's API: its one in-project call
    (which passes a tensor that needs no grad) decides, as for any function (a review's case, executed)."""
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "__init__.py").write_text("from .helpers import ref_entropy\n")
    (tmp_path / "tests" / "helpers.py").write_text(
        "import torch\n\n\ndef ref_entropy(logits: torch.Tensor) -> torch.Tensor:\n    p = logits.softmax(-1)\n"
        "    p.mul_(logits)\n    return -p.sum(-1)\n")
    (tmp_path / "tests" / "test_entropy.py").write_text(
        "import torch\n\nfrom .helpers import ref_entropy\n\n\ndef test_it():\n"
        "    assert ref_entropy(torch.zeros(2, 4)).shape == (2,)\n")
    project = Project(DEFAULT_SETTINGS, tmp_path)
    for path in sorted((tmp_path / "tests").glob("*.py")):
        project.add_file(str(path), source=path.read_text())
    project.build()
    assert project.findings(str(tmp_path / "tests" / "helpers.py")) == []
