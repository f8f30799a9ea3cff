"""The language server's incremental path (issue 11, editor budget): after any sequence of edits, the
diagnostics of an open buffer are exactly those of a full check of the same text, done from scratch.

The incremental path keeps one project per process (summaries loaded once, refreshed from the disk),
parses the buffer once, walks only what changed and reuses the project pass when no call site and no
grad-off declaration changed. Each step below compares it with a fresh project built without a cache.
"""
from __future__ import annotations

import ast
import pathlib
import shutil

import pytest

pytest.importorskip("pygls")
from inplace_lint import pipeline  # noqa: E402
from inplace_lint.adapters import server  # noqa: E402
from inplace_lint.config import DEFAULT_SETTINGS  # noqa: E402

PROJECT = pathlib.Path(__file__).resolve().parent.parent / "fixtures" / "project" / "rlpkg"

OPS = (PROJECT / "rl" / "ops.py").read_text()
CALLER = (
    "\n\ndef use(model, ids, t):\n"
    "    out = model(ids)\n"
    "    scale_(out.logits.squeeze(0), t)\n"
    "    return out\n"
)
SEED = (
    "\n\ndef prepare(output, temperature):\n"
    "    logits_rmpad = output.logits.squeeze(0)\n"
    "    logits_rmpad.div_(temperature)\n"
    "    return logits_rmpad\n"
)

#: the open buffer of rl/ops.py, edit after edit (each a whole-document change, as the server gets them)
OPS_EDITS = [
    OPS,
    OPS + CALLER,  # a new caller in the buffer: it hands a model output's view to the helper scale_
    OPS + CALLER + SEED,
    OPS + CALLER + SEED.replace("temperature)\n    return", "temperature)  # typing\n    return"),
    # a callee another function depends on changes: scale_ no longer writes in place
    OPS.replace("    logits.div_(t)  # a mutating helper: reported at each risky call", "    logits = logits / t")
    + CALLER + SEED,
    # and back
    OPS + CALLER + SEED,
    # lines shift: everything below moves down three lines
    "# a header\n# of comments\n\n" + OPS + CALLER + SEED,
    # a function renamed (its callers in other files no longer reach it)
    ("# a header\n# of comments\n\n" + OPS + CALLER + SEED).replace("def scale_(", "def scale2_("),
    # a syntax error, then the text before it
    "# a header\n# of comments\n\n" + OPS + CALLER + SEED + "def broken(:\n",
    "# a header\n# of comments\n\n" + OPS + CALLER + SEED,
    # scale_ keeps using what it writes: reported in scale_ itself, no longer at the calls in engine.py
    ("# a header\n\n" + OPS + CALLER + SEED).replace("    logits.div_(t)  # a mutating helper: reported at each risky call",
                                                     "    logits.div_(t)\n    return logits"),
    # lines shift up again, the caller goes away
    OPS + SEED,
    OPS,
]


@pytest.fixture()
def project(tmp_path, monkeypatch):
    work = tmp_path / "rlpkg"
    shutil.copytree(PROJECT, work)
    pipeline._PROJECTS.clear()
    server._RESULTS.clear()
    monkeypatch.setattr(pipeline, "REFRESH_AFTER_S", 0.0)
    pipeline.set_project_mode(True)
    yield work
    pipeline._PROJECTS.clear()
    server._RESULTS.clear()
    pipeline.set_project_mode(False)


def full_check(source: str, path: pathlib.Path):
    """The findings of ``source`` (the buffer of ``path``) from a project built from scratch, without a cache."""
    mode = pipeline.ProjectMode(True, use_cache=False)
    fresh_key = lambda key: key[2] is False  # noqa: E731  (use_cache is the third part of the key)
    for key in [k for k in pipeline._PROJECTS if fresh_key(k)]:
        del pipeline._PROJECTS[key]
    try:
        findings = pipeline.project_findings(source, str(path), DEFAULT_SETTINGS, mode)
    finally:
        for key in [k for k in pipeline._PROJECTS if fresh_key(k)]:
            del pipeline._PROJECTS[key]
    if findings is None:  # does not parse
        return pipeline.check_source(source, str(path), DEFAULT_SETTINGS, project=False).problem
    return findings


def incremental(source: str, path: pathlib.Path):
    result = pipeline.check_source(source, str(path), DEFAULT_SETTINGS)
    return result.problem if result.problem is not None else result.findings


def test_edits_of_a_buffer_give_the_findings_of_a_full_check(project):
    path = project / "rl" / "ops.py"
    seen = []
    for step, text in enumerate(OPS_EDITS):
        got = incremental(text, path)
        assert got == full_check(text, path), f"edit {step}"
        seen.append(got)
    # the sequence exercises what it claims: findings appear in callees, move with the lines, vanish
    codes = [sorted((f.line, f.code) for f in found) if isinstance(found, list) else found.code for found in seen]
    assert codes[0] == [(9, "IPV001")]  # temper(), reached by engine.py's call
    assert codes[1] == [(9, "IPV001"), (23, "IPV001")]  # the new caller's call of the helper scale_
    assert codes[4] == [(9, "IPV001"), (29, "IPV001")]  # scale_ no longer writes: its caller is clean
    assert codes[6] == [(12, "IPV001"), (26, "IPV001"), (32, "IPV001")]  # moved down three lines
    assert codes[7] == [(12, "IPV001"), (32, "IPV001")]  # scale_ renamed: the call reaches nothing
    assert codes[8] == "IPV000" and codes[9] == codes[6]
    assert codes[10] == [(7, "IPV001"), (12, "IPV001"), (32, "IPV001")]  # reported in scale_ itself
    assert codes[-1] == [(9, "IPV001")]


def test_edits_of_a_callee_on_disk_reach_the_open_buffer(project):
    """The buffer is engine.py; its callee (ops.py) changes on disk between edits (saved in another editor)."""
    engine = project / "rl" / "engine.py"
    ops = project / "rl" / "ops.py"
    text = engine.read_text()
    steps = [
        (text, None),
        (text + "\n", OPS.replace("    logits.div_(t)  # a mutating helper: reported at each risky call",
                                  "    logits = logits / t")),
        ("\n\n" + text, None),
        ("\n\n" + text, OPS),
        (text.replace("scale_(out.logits.squeeze(0), t)", "pass"), None),
    ]
    for step, (buffer, on_disk) in enumerate(steps):
        if on_disk is not None:
            ops.write_text(on_disk)
        assert incremental(buffer, engine) == full_check(buffer, engine), f"step {step}"


def test_the_server_publishes_what_a_full_check_reports(project):
    """Through the server's own entry point (configuration, ``# noqa``, LSP conversion)."""
    path = project / "rl" / "ops.py"
    for step, text in enumerate(OPS_EDITS):
        found = full_check(text, path)
        lines = text.splitlines()
        want = [server.to_diagnostic(f, lines, path.as_uri()) for f in ([found] if not isinstance(found, list)
                                                                         else found)]
        assert server.diagnostics_for(text, str(path)) == want, f"edit {step}"


def test_an_edit_is_parsed_once(project, monkeypatch):
    path = project / "rl" / "ops.py"
    incremental(OPS, path)
    parses = []
    real = ast.parse
    monkeypatch.setattr(ast, "parse", lambda *a, **k: parses.append(1) or real(*a, **k))
    incremental(OPS + SEED, path)
    assert len(parses) == 1


def test_an_edit_that_changes_no_call_reuses_the_project_pass(project):
    path = project / "rl" / "ops.py"
    incremental(OPS + CALLER, path)
    project_ = pipeline.load_project(str(path), DEFAULT_SETTINGS)
    before = project_.finalize()
    incremental(OPS + CALLER + "\n# typing a comment\n", path)
    assert project_.finalize() is before
    incremental(OPS + CALLER.replace("scale_(", "temper("), path)  # a call changed: computed again
    assert project_.finalize() is not before
