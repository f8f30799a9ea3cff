"""Project-wide analysis (issue 9): calls resolved across modules, origins into and out of callees,
grad-off entry points in another module, a file named alone analysed with its project, the cache."""
from __future__ import annotations

import pathlib
import re
import shutil

import pytest

from inplace_lint import pipeline, workspace
from inplace_lint.adapters.cli import main
from inplace_lint.analysis.project import Project
from inplace_lint.analysis.resolve import find_root, module_name
from inplace_lint.config import DEFAULT_SETTINGS

PROJECT = pathlib.Path(__file__).resolve().parent.parent / "fixtures" / "project" / "rlpkg"
EXPECT = re.compile(r"# expect: (.*)$")


def expected(root: pathlib.Path):
    out = set()
    for path in sorted(root.rglob("*.py")):
        for lineno, line in enumerate(path.read_text().splitlines(), 1):
            m = EXPECT.search(line)
            if m:
                for item in m.group(1).split(","):
                    code, col = item.strip().split(":")
                    out.add((str(path.relative_to(root)), lineno, int(col), code))
    return out


@pytest.fixture()
def project(tmp_path):
    work = tmp_path / "rlpkg"
    shutil.copytree(PROJECT, work)
    workspace._PROJECTS.clear()
    yield work
    workspace._PROJECTS.clear()


def _found(out: str, root: pathlib.Path):
    found = set()
    for line in out.splitlines():
        path, lineno, col, rest = line.split(":", 3)
        found.add((str(pathlib.Path(path).resolve().relative_to(root.resolve())), int(lineno), int(col),
                   rest.split()[0]))
    return found


def test_root_and_module_names(project):
    assert find_root(str(project / "rl" / "ops.py")) == project.resolve()
    assert module_name(str(project / "rl" / "ops.py")) == ("rl.ops", False)
    assert module_name(str(project / "rl" / "__init__.py")) == ("rl", True)


def test_whole_project_matches_expectations(project, capsys):
    assert main(["check", "-q", "-j", "1", str(project)]) == 1
    out = capsys.readouterr().out
    assert _found(out, project) == expected(project)
    # the finding in the callee names the call site (path:line); the call of a mutating helper names it
    assert "writes in place to `logits`, model output `out.logits`, passed by the call at rl/engine.py:11" in out
    assert "`div_` in `scale_()` (rl/ops.py:5) writes in place to `out.logits.squeeze(0)`" in out
    # a helper in another module that keeps using what it wrote (`temper` returns it) is reported at its
    # write (above) and at the call, so that engine.py checked alone shows the hazard it takes part in
    assert ("rl/engine.py:11:16: IPV001 `div_` in `temper()` (rl/ops.py:9) writes in place to "
            "model output `out.logits`; at this call: pass `out.logits.clone()`\n") in out


def test_a_file_named_alone_gets_the_same_answer(project, capsys):
    for name in ("rl/ops.py", "rl/engine.py", "rl/sampler.py"):
        workspace._PROJECTS.clear()
        main(["check", "-q", "-j", "1", "--no-cache", str(project / name)])
        found = _found(capsys.readouterr().out, project)
        assert found == {e for e in expected(project) if e[0] == name}, name


def test_grad_off_entry_in_another_module(project):
    # alone, sampler.py looks like a training path ...
    alone = pipeline.check_file(str(project / "rl" / "sampler.py"), DEFAULT_SETTINGS, project=None)
    assert [(f.line, f.code) for f in alone.findings] == [(6, "IPV001")]
    # ... but its only caller runs it under inference_mode
    with_project = pipeline.check_file(str(project / "rl" / "sampler.py"), DEFAULT_SETTINGS,
                                       project=workspace.PROJECT)
    assert with_project.findings == []


def test_a_check_in_project_mode_leaves_no_mode_behind(project, capsys):
    """Project mode is an argument, not process state: it travelled in os.environ, and a later test ran in
    project mode because an earlier one had run the CLI. After a check, a library call analyses alone."""
    import os

    before = dict(os.environ)
    main(["check", "-q", "-j", "1", "--no-cache", str(project)])
    capsys.readouterr()
    assert dict(os.environ) == before
    alone = pipeline.check_file(str(project / "rl" / "sampler.py"), DEFAULT_SETTINGS)
    assert [(f.line, f.code) for f in alone.findings] == [(6, "IPV001")]


def test_cache_is_written_reused_and_invalidated(project, capsys):
    main(["check", "-q", "-j", "1", str(project)])
    cold = _found(capsys.readouterr().out, project)
    cache_dir = project / ".inplace_lint_cache"
    assert (cache_dir / ".gitignore").read_text().endswith("*\n")
    assert list(cache_dir.glob("manifests/*.json")) and list(cache_dir.glob("objects/*/*.json"))
    workspace._PROJECTS.clear()
    main(["check", "-q", "-j", "1", str(project / "rl" / "ops.py")])
    assert _found(capsys.readouterr().out, project) == {e for e in cold if e[0] == "rl/ops.py"}
    # the helper stops writing its argument: the finding at its caller goes, with the cache on (the
    # call of `temper`, which still writes, stays)
    ops = project / "rl" / "ops.py"
    ops.write_text(ops.read_text().replace("    logits.div_(t)  # a mutating helper", "    logits = logits / t  #"))
    workspace._PROJECTS.clear()
    main(["check", "-q", "-j", "1", str(project / "rl" / "engine.py")])
    assert _found(capsys.readouterr().out, project) == {("rl/engine.py", 11, 16, "IPV001")}


def test_cache_dir_flag_and_no_cache(project, tmp_path, capsys):
    elsewhere = tmp_path / "cache"
    main(["check", "-q", "-j", "1", "--cache-dir", str(elsewhere), str(project)])
    assert list(elsewhere.glob("manifests/*.json"))
    assert not (project / ".inplace_lint_cache").exists()
    workspace._PROJECTS.clear()
    main(["check", "-q", "-j", "1", "--no-cache", str(project)])
    assert not (project / ".inplace_lint_cache").exists()
    capsys.readouterr()


def test_summaries_reach_a_fixpoint_through_recursion(tmp_path):
    source = (
        "def a(model, x, t, n):\n"
        "    return b(model, x, t, n - 1) if n else model(x).logits\n"
        "def b(model, x, t, n):\n"
        "    return a(model, x, t, n)\n"
        "def c(model, x, t):\n"
        "    y = b(model, x, t, 3)\n"
        "    y.div_(t)\n"
    )
    path = tmp_path / "rec.py"
    path.write_text(source)
    project = Project(DEFAULT_SETTINGS, tmp_path)
    project.add_file(str(path), source=source)
    project.build()
    assert [(f.line, f.code) for f in project.findings(str(path))] == [(7, "IPV001")]


def test_flake8_reads_the_cache_and_is_alone_without_it(project, capsys):
    import subprocess
    import sys

    def flake8():
        proc = subprocess.run([sys.executable, "-m", "flake8", "--isolated", "--select=IPV", "rl/engine.py",
                               "rl/sampler.py"], cwd=project, capture_output=True, text=True)
        return sorted(line.split(" ")[0] + line.split(" ")[1] for line in proc.stdout.splitlines())

    # without a cache: each file alone (rl.ops is not seen; sampler.py looks like a training path)
    assert flake8() == ["rl/sampler.py:6:5:IPV001"]
    main(["check", "-q", "-j", "1", str(project)])  # writes the cache
    capsys.readouterr()
    assert flake8() == ["rl/engine.py:10:9:IPV001", "rl/engine.py:11:16:IPV001", "rl/engine.py:9:9:IPV001"]


def test_language_server_buffer_with_project_summaries(project):
    """The server's entry point: an unsaved buffer of engine.py, analysed with the rest of the project."""
    buffer = (project / "rl" / "engine.py").read_text().replace("scale_(out.logits.squeeze(0), t)", "pass")
    result = pipeline.check_source(buffer, str(project / "rl" / "engine.py"), DEFAULT_SETTINGS,
                                   project=workspace.PROJECT)
    assert [(f.line, f.code) for f in result.findings] == [(10, "IPV001"), (11, "IPV001")]


def test_a_long_lived_process_sees_other_files_change(project, monkeypatch):
    """The language server keeps its project: a helper edited on disk changes its callers' findings."""
    monkeypatch.setattr(workspace, "REFRESH_AFTER_S", 0.0)
    engine = project / "rl" / "engine.py"
    first = pipeline.check_source(engine.read_text(), str(engine), DEFAULT_SETTINGS, project=workspace.PROJECT)
    assert [f.line for f in first.findings] == [9, 10, 11]
    ops = project / "rl" / "ops.py"
    ops.write_text(ops.read_text().replace("    logits.div_(t)  # a mutating helper", "    logits = logits / t  #"))
    again = pipeline.check_source(engine.read_text(), str(engine), DEFAULT_SETTINGS, project=workspace.PROJECT)
    assert [f.line for f in again.findings] == [11]  # `temper` still writes what the call passes


@pytest.mark.parametrize("use", [
    'HANDLERS = {"scale": scale_logits}',
    "def step(output, t, fn=scale_logits):\n    return fn(output, t)",
    "import functools\nSCALE = functools.partial(scale_logits, temperature=2.0)",
    'import rl.helpers as h\nFN = getattr(h, "scale_logits")',
])
def test_a_helper_handed_around_as_a_value_keeps_its_fix_unsafe(tmp_path, use, capsys):
    """Callers are "all checked" only when every use of the function is a visible call: a helper also
    stored, passed or looked up by name may be called where no call site shows it."""
    root = tmp_path / "proj"
    (root / "rl").mkdir(parents=True)
    (root / "pyproject.toml").write_text("[project]\nname = 'rl'\n")
    (root / "rl" / "__init__.py").write_text("")
    (root / "rl" / "helpers.py").write_text(
        "def scale_logits(output, temperature):\n    logits = output.logits.squeeze(0)\n"
        "    logits.div_(temperature)\n    return logits\n")
    engine = ("from rl.helpers import scale_logits\n\n\ndef forward_step(model, batch, t):\n"
              "    return scale_logits(model(batch), t)\n")
    (root / "rl" / "engine.py").write_text(engine)
    workspace._PROJECTS.clear()
    try:
        assert main(["check", "--no-cache", str(root)]) == 1
        assert "[fix: safe]" in capsys.readouterr().out  # the one call is checked
        (root / "rl" / "engine.py").write_text(engine + "\n\n" + use + "\n")
        workspace._PROJECTS.clear()
        assert main(["check", "--no-cache", str(root)]) == 1
        out = capsys.readouterr().out
        assert "helpers.py:3:5: IPV001" in out and "[fix: unsafe]" in out, out
    finally:
        workspace._PROJECTS.clear()


NO_GRAD_SAMPLER = """\
from srv.helpers import shrink


def sample(logits, t):
    probs = logits.softmax(dim=-1)
    probs.div_(t)
    return shrink(probs, t)
"""
NO_GRAD_HELPERS = """\
def shrink(x, t):
    y = x.sigmoid()
    y.mul_(t)
    return y
"""


@pytest.mark.parametrize("configured", [False, True])
def test_no_grad_paths_silence_the_autograd_rules_there_and_in_what_only_they_call(tmp_path, configured, capsys):
    (tmp_path / "pyproject.toml").write_text(
        '[tool.inplace-lint]\nno-grad-paths = ["srv/sampler.py"]\n' if configured else "")
    (tmp_path / "srv").mkdir()
    (tmp_path / "srv" / "__init__.py").write_text("")
    (tmp_path / "srv" / "sampler.py").write_text(NO_GRAD_SAMPLER)
    (tmp_path / "srv" / "helpers.py").write_text(NO_GRAD_HELPERS)
    main(["check", "-q", "--no-cache", str(tmp_path)])
    out = capsys.readouterr().out.replace(str(tmp_path) + "/", "")
    found = sorted(re.findall(r"^(\S+:\d+:\d+): (IPV\d+)", out, re.M))
    if configured:  # the sampler runs with grad off, and so does shrink, called only from it
        assert found == []
    else:
        assert found == [("srv/helpers.py:3:5", "IPV006"), ("srv/sampler.py:6:5", "IPV006")]


def test_a_grad_off_flag_passed_down_through_modules(tmp_path, capsys):
    """``inplace_safe = not (self.training or torch.is_grad_enabled())`` in one module, passed to submodules
    defined in another: the writes under ``if inplace_safe:`` (and a helper called only there) run with
    grad off and are not reported; a submodule given ``fast=True`` by hand is."""
    work = tmp_path / "flagpkg"
    shutil.copytree(PROJECT.parent / "flagpkg", work)
    workspace._PROJECTS.clear()
    try:
        assert main(["check", "-q", "-j", "1", str(work)]) == 1
        assert _found(capsys.readouterr().out, work) == expected(work) == {("fold/blocks.py", 42, 13, "IPV006")}
        # the same from the cache
        workspace._PROJECTS.clear()
        assert main(["check", "-q", "-j", "1", str(work)]) == 1
        assert _found(capsys.readouterr().out, work) == expected(work)
    finally:
        workspace._PROJECTS.clear()


def test_a_namespace_folder_inside_a_package_is_part_of_its_modules_names(tmp_path, capsys):
    """`robo/datasets/` has no `__init__.py` but `robo/` has (a PEP 420 namespace portion, as in lerobot):
    `robo/datasets/utils.py` is `robo.datasets.utils`, the name its importers use, and its project is the
    package's, so a helper's write there is followed from another file; `robo/policies/utils.py` is another
    module, not the same `utils`."""
    root = tmp_path / "wheel"
    (root / "robo" / "datasets").mkdir(parents=True)
    (root / "robo" / "policies").mkdir()
    (root / "robo-1.0.dist-info").mkdir()
    (root / "robo" / "__init__.py").write_text("")
    (root / "robo" / "datasets" / "utils.py").write_text(
        "def scale_(logits, t):\n    logits.div_(t)\n")
    (root / "robo" / "policies" / "utils.py").write_text(
        "def scale_(logits, t):\n    return logits / t\n")
    (root / "robo" / "policies" / "act.py").write_text(
        "from robo.datasets.utils import scale_\n\n\n"
        "def step(model, batch, t):\n"
        "    out = model(batch)\n"
        "    logits = out.logits.squeeze(0)\n"
        "    scale_(logits, t)\n"
        "    return logits\n")
    utils = root / "robo" / "datasets" / "utils.py"
    assert module_name(str(utils)) == ("robo.datasets.utils", False)
    assert module_name(str(root / "robo" / "policies" / "utils.py")) == ("robo.policies.utils", False)
    assert find_root(str(utils)) == root.resolve()
    workspace._PROJECTS.clear()
    main(["check", "--no-cache", "-j", "1", str(root / "robo" / "policies" / "act.py")])
    out = capsys.readouterr().out
    workspace._PROJECTS.clear()
    assert "act.py:7:5: IPV001 `div_` in `scale_()`" in out, out


#: a free function whose parameter is guessed a tensor that requires grad: `exp` saves its output, then written
_WEIGHTS = (
    "def weights(lml):\n"
    "    w = (lml - lml.max()).exp()\n"
    "    w[w < 0.1] = 0.0\n"
    "    return w\n"
)


def _package_findings(root: pathlib.Path, files: dict) -> dict:
    """``files`` (name -> text) written as package ``pkg`` under ``root`` and built as one project: each file's
    findings as (line, code)."""
    pkg = root / "pkg"
    pkg.mkdir()
    project = Project(DEFAULT_SETTINGS, root)
    for name, text in files.items():
        (pkg / name).write_text(text)
        project.add_file(str(pkg / name), source=text)
    project.build()
    return {name: [(f.line, f.code) for f in project.findings(str(pkg / name))] for name in files}


def test_a_guess_in_a_private_module_nothing_imports_has_nothing_behind_it(tmp_path):
    """A free function's parameter guessed a tensor that requires grad keeps the guess when the function is an
    entry point; in a private module (`pkg/_dead.py`) that no module imports and the package does not export,
    nothing calls it, so there is nothing behind the guess (sober-bo's uncalled `_fully_Bayesian_gp.py`)."""
    body = _WEIGHTS
    caller = ("from .writers import clean_\n\n\n"
              "def weights(lml):\n"
              "    w = (lml - lml.max()).exp()\n"
              "    clean_(w)\n"
              "    return w\n")
    files = {"__init__.py": "", "_dead.py": body, "_used.py": body, "api.py": "from ._used import weights\n",
             "public.py": body, "writers.py": "def clean_(w):\n    w[w < 0.1] = 0.0\n", "_dead_caller.py": caller,
             "caller.py": caller, "_star.py": body, "gather.py": "from ._star import *\n", "_lazy.py": body,
             "lazy.py": "def load():\n    from ._lazy import weights\n    return weights\n"}
    found = _package_findings(tmp_path, files)
    assert found["_dead.py"] == []
    assert found["_used.py"] == [(3, "IPV006")] and found["public.py"] == [(3, "IPV006")]
    assert found["writers.py"] == [] and found["_dead_caller.py"] == []  # the helper's write, passed from there
    assert found["caller.py"] == [(6, "IPV006")]  # the same call in a public module: reported there
    # a private module imported with `*` or inside a function is reached: its entry point keeps the guess
    assert found["_star.py"] == [(3, "IPV006")] and found["_lazy.py"] == [(3, "IPV006")]
    torch = pytest.importorskip("torch")
    namespace: dict = {}
    exec(compile(body, "<dead>", "exec"), namespace)
    lml = torch.tensor([float(v) for v in torch.randn(5, requires_grad=True)])  # a new leaf: no grad
    assert not lml.requires_grad
    assert torch.equal(namespace["weights"](lml), torch.where((lml - lml.max()).exp() < 0.1, 0.0,
                                                              (lml - lml.max()).exp()))
    grads = torch.randn(5, requires_grad=True) * 1
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        namespace["weights"](grads).sum().backward()  # what the kept guess in `_used.py` warns of


def test_a_project_that_imports_by_computed_names_reaches_every_private_module(tmp_path):
    """`importlib.import_module(f"pkg._{kind}")` (or Hydra's `instantiate` of a config's `_target_`) may load any
    module: a private module nothing imports by statement still keeps its entry point's guess (a review's miss)."""
    files = {"__init__.py": "", "_impl.py": _WEIGHTS,
             "loader.py": "import importlib\n\n\ndef load(kind):\n    return importlib.import_module(f'pkg._{kind}')\n"}
    assert _package_findings(tmp_path, files)["_impl.py"] == [(3, "IPV006")]
