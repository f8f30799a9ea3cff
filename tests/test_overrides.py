"""Overridden methods (issue 9, item 3): ``self.m(...)`` dispatches to the method seen from the class
and to every override of ``m`` in the project's subclasses (class-hierarchy analysis), in one file and
across modules, with the call sites counted for grad context and fix safety, and the editor seeing a
new subclass."""
from __future__ import annotations

import pathlib
import shutil

import pytest

from inplace_lint import pipeline, workspace
from inplace_lint.adapters.cli import main
from inplace_lint.analysis import analyze_source
from inplace_lint.analysis.project import Project
from inplace_lint.config import DEFAULT_SETTINGS
from inplace_lint.findings import Applicability

from .test_project_analysis import expected

PROJECT = pathlib.Path(__file__).resolve().parent.parent / "fixtures" / "project" / "enginepkg"


def _found(out: str, root: pathlib.Path):
    found = set()
    for line in out.splitlines():
        path, lineno, col, rest = line.split(":", 3)
        found.add((str(pathlib.Path(path).resolve().relative_to(root.resolve())), int(lineno), int(col),
                   rest.split()[0]))
    return found


@pytest.fixture()
def project(tmp_path):
    work = tmp_path / "enginepkg"
    shutil.copytree(PROJECT, work)
    workspace._PROJECTS.clear()
    yield work
    workspace._PROJECTS.clear()


def test_overrides_in_other_modules_are_reached_from_the_base(project, capsys):
    assert main(["check", "-q", "-j", "1", "--no-cache", str(project)]) == 1
    out = capsys.readouterr().out
    assert _found(out, project) == expected(project)
    assert "writes in place to `logits`, a view of model output `out.logits`, passed by the call at " \
           "eng/base.py:4" in out
    assert "`mul_` writes in place to `logits`, a view of model output `out.logits`, passed by the call at " \
           "eng/base.py:4" in out  # the subclass of a subclass
    assert "passed by the call at eng/mixin.py:4" in out  # the base that does not define the method
    assert "serve.py" not in out  # the only dispatching call runs under no_grad


def test_a_subclass_file_named_alone_gets_the_same_answer(project, capsys):
    for name in ("eng/fsdp.py", "eng/chunked.py", "eng/sampler.py", "eng/serve.py", "eng/base.py"):
        workspace._PROJECTS.clear()
        main(["check", "-q", "-j", "1", "--no-cache", str(project / name)])
        assert _found(capsys.readouterr().out, project) == {e for e in expected(project) if e[0] == name}, name


def test_dispatch_targets_and_the_subclass_index():
    project = Project(DEFAULT_SETTINGS, PROJECT)
    for path in sorted(PROJECT.rglob("*.py")):
        project.add_file(str(path))
    assert project.subclasses("eng.base.BaseEngine") == (
        "eng.chunked.ChunkedEngine", "eng.fsdp.FSDPEngine", "eng.fsdp.QuietEngine")
    assert [q for q, _ in project.dispatch("eng.base.BaseEngine", "prepare_model_outputs")] == [
        "eng.base.BaseEngine.prepare_model_outputs", "eng.chunked.ChunkedEngine.prepare_model_outputs",
        "eng.fsdp.FSDPEngine.prepare_model_outputs", "eng.fsdp.QuietEngine.prepare_model_outputs"]
    # seen from a subclass: its own method and its subclasses' only, never a sibling's
    assert [q for q, _ in project.dispatch("eng.fsdp.FSDPEngine", "prepare_model_outputs")] == [
        "eng.fsdp.FSDPEngine.prepare_model_outputs", "eng.chunked.ChunkedEngine.prepare_model_outputs"]
    assert [q for q, _ in project.dispatch("eng.mixin.LogProbMixin", "temper")] == [
        "eng.sampler.Plain.temper", "eng.sampler.Sampler.temper"]
    assert project.dispatch("eng.mixin.LogProbMixin", "missing") == ()
    # a new subclass added to the project is seen (the index is rebuilt when classes change)
    project.add_file("/virtual/eng/extra.py", module="eng.extra", source=(
        "from eng.sampler import Plain\nclass Extra(Plain):\n    def temper(self, logits, t):\n"
        "        return logits\n"))
    assert "eng.extra.Extra.temper" in [q for q, _ in project.dispatch("eng.mixin.LogProbMixin", "temper")]


MIXED = (
    "class Base:\n"
    "    def step(self, model, ids, t):\n"
    "        logits = model(ids).logits\n"
    "        y = self.scale(logits, t)\n"
    "        return y{READ}\n"
    "    def scale(self, logits, t):\n"
    "        return logits * t\n"
    "class Child(Base):\n"
    "    def run(self, model, ids, t):\n"
    "        return self.scale(model(ids).logits.squeeze(0), t)\n"
    "    def scale(self, logits, t):\n"
    "        logits.div_(t)\n"
    "        return logits\n"
)


def test_fix_safety_of_a_write_in_an_override_counts_the_dispatching_call():
    # two call sites reach Child.scale: Child.run's own and Base.step's, dispatched to the override
    (finding,) = analyze_source(MIXED.format(READ=""))
    assert (finding.line, finding.code) == (12, "IPV001")
    assert finding.fix.applicability is Applicability.SAFE
    assert "callers in this project checked: 2" in finding.fix.message
    # Base.step reads what it passed after the call: the override's rebinding would change what it sees
    (finding,) = analyze_source(MIXED.format(READ=", logits"))
    assert (finding.line, finding.code) == (12, "IPV001")
    assert finding.fix.applicability is Applicability.UNSAFE


def test_the_value_of_a_dispatched_call_is_the_union_of_the_returns():
    source = (
        "class Base:\n"
        "    def step(self, model, ids, t):\n"
        "        logits = self.forward_logits(model, ids)\n"
        "        logits.div_(t)\n"
        "        return logits\n"
        "    def forward_logits(self, model, ids):\n"
        "        return None\n"
        "class Child(Base):\n"
        "    def forward_logits(self, model, ids):\n"
        "        return model(ids).logits\n"
    )
    ((line, code, message),) = [(f.line, f.code, f.message) for f in analyze_source(source)]
    assert (line, code) == (4, "IPV001") and "`forward_logits(...)`" in message


def test_no_finding_where_no_override_writes():
    source = (
        "class Base:\n"
        "    def step(self, model, ids, t):\n"
        "        return self.scale(model(ids).logits.squeeze(0), t)\n"
        "    def scale(self, logits, t):\n"
        "        raise NotImplementedError\n"
        "class A(Base):\n"
        "    def scale(self, logits, t):\n"
        "        return logits / t\n"
        "class B(A):\n"
        "    def scale(self, logits, t):\n"
        "        out = logits.clone()\n"
        "        out.div_(t)\n"
        "        return out\n"
    )
    assert analyze_source(source) == []


def test_a_mutating_override_is_reported_at_the_dispatching_call():
    source = (
        "class Base:\n"
        "    def step(self, model, ids, t):\n"
        "        out = model(ids)\n"
        "        self.clip_(out.logits.squeeze(0), t)\n"
        "        return out\n"
        "    def clip_(self, logits, t):\n"
        "        pass\n"
        "class Clip(Base):\n"
        "    def clip_(self, logits, t):\n"
        "        logits.clamp_(max=t)\n"
    )
    (finding,) = analyze_source(source)
    assert (finding.line, finding.col, finding.code) == (4, 8, "IPV001")
    assert finding.message.startswith("`clamp_` in `clip_()` (line 10) writes in place to `out.logits.squeeze(0)`")


def test_a_new_subclass_in_an_open_buffer_walks_the_base_again(project, monkeypatch):
    """The editor: an open buffer adds an override; the base's file (from the cache) is walked again, as
    its walk depends on the targets its `self.m(...)` dispatched to."""
    main(["check", "-q", "-j", "1", str(project)])  # writes the cache
    workspace._PROJECTS.clear()
    monkeypatch.setattr(workspace, "REFRESH_AFTER_S", 0.0)
    workspace.keep_function_walks(True)  # as the language server does
    try:
        path = project / "eng" / "new_engine.py"
        path.write_text("from eng.base import BaseEngine\n")  # a new file, saved before the class is typed
        assert pipeline.check_source(path.read_text(), str(path), DEFAULT_SETTINGS,
                                     project=workspace.PROJECT).findings == []
        buffer = ("from eng.base import BaseEngine\n\n\nclass NewEngine(BaseEngine):\n"
                  "    def prepare_model_outputs(self, logits, t):\n        logits.sub_(t)\n        return logits\n")
        result = pipeline.check_source(buffer, str(path), DEFAULT_SETTINGS, project=workspace.PROJECT)
        assert [(f.line, f.code) for f in result.findings] == [(6, "IPV001")]
        assert "passed by the call at eng/base.py:4" in result.findings[0].message
        # the override stops writing: the finding goes
        result = pipeline.check_source(buffer.replace("logits.sub_(t)", "logits = logits - t"), str(path),
                                       DEFAULT_SETTINGS, project=workspace.PROJECT)
        assert result.findings == []
        # and writes again under another name of the class
        result = pipeline.check_source(buffer.replace("NewEngine", "Renamed"), str(path), DEFAULT_SETTINGS,
                                       project=workspace.PROJECT)
        assert [(f.line, f.code) for f in result.findings] == [(6, "IPV001")]
    finally:
        workspace.keep_function_walks(False)


def test_a_new_subclass_on_disk_with_a_warm_cache(project, capsys):
    main(["check", "-q", "-j", "1", str(project)])  # writes the cache
    capsys.readouterr()
    (project / "eng" / "later.py").write_text(
        "from eng.chunked import ChunkedEngine\n\n\nclass Later(ChunkedEngine):\n"
        "    def prepare_model_outputs(self, logits, t):\n        logits.add_(t)\n        return logits\n")
    workspace._PROJECTS.clear()
    main(["check", "-q", "-j", "1", str(project / "eng" / "later.py")])
    out = capsys.readouterr().out
    assert "later.py:6:9: IPV001" in out and "passed by the call at eng/base.py:4" in out, out


FSDP = (PROJECT / "eng" / "fsdp.py").read_text()
#: the open buffer of eng/fsdp.py, edit after edit: its findings come from a call in eng/base.py
FSDP_EDITS = [
    FSDP,
    FSDP.replace("class FSDPEngine(BaseEngine):", "class FSDPEngine:"),  # no longer a subclass
    FSDP,
    FSDP.replace("logits.div_(t)", "logits = logits / t"),  # the override stops writing
    FSDP.replace("def prepare_model_outputs(self, logits, t):\n        logits.div_",
                 "def prepare_outputs(self, logits, t):\n        logits.div_"),  # no longer an override
    FSDP + "\n\nclass Extra(QuietEngine):\n    def prepare_model_outputs(self, logits, t):\n"
           "        logits.mul_(t)\n        return logits\n",  # a new subclass of a subclass
    "\n\n" + FSDP,  # lines shift
    FSDP,
]


def test_edits_of_a_subclass_buffer_give_the_findings_of_a_full_check(project, monkeypatch):
    pytest.importorskip("pygls")
    monkeypatch.setattr(workspace, "REFRESH_AFTER_S", 0.0)
    main(["check", "-q", "-j", "1", str(project)])  # the server starts from a warm cache
    workspace._PROJECTS.clear()
    path = project / "eng" / "fsdp.py"

    def full_check(source):
        for key in [k for k in workspace._PROJECTS if k[2] is False]:
            del workspace._PROJECTS[key]
        workspace.keep_function_walks(False)
        try:
            return pipeline.check_source(source, str(path), DEFAULT_SETTINGS,
                                         project=workspace.ProjectMode(True, use_cache=False)).findings
        finally:
            workspace.keep_function_walks(True)
            for key in [k for k in workspace._PROJECTS if k[2] is False]:
                del workspace._PROJECTS[key]

    workspace.keep_function_walks(True)
    seen = []
    try:
        for step, text in enumerate(FSDP_EDITS):
            got = pipeline.check_source(text, str(path), DEFAULT_SETTINGS, project=workspace.PROJECT).findings
            assert got == full_check(text), f"edit {step}"
            seen.append([(f.line, f.code) for f in got])
    finally:
        workspace.keep_function_walks(False)
    assert seen[0] == [(6, "IPV001")] and seen[1] == [] and seen[2] == seen[0]
    assert seen[3] == [] and seen[4] == []
    assert seen[5] == [(6, "IPV001"), (17, "IPV001")] and seen[6] == [(8, "IPV001")]
    assert seen[7] == seen[0]
