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
from inplace_lint import pipeline, workspace  # noqa: E402
from inplace_lint.adapters import server  # noqa: E402
from inplace_lint.config import DEFAULT_SETTINGS  # noqa: E402

PROJECT = pathlib.Path(__file__).resolve().parent.parent / "fixtures" / "project" / "rlpkg"

OPS = (PROJECT / "rl" / "ops.py").read_text()
HELPER_WRITE = "    logits.div_(t)  # a mutating helper: reported at each risky call"
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
    OPS.replace(HELPER_WRITE, "    logits = logits / t") + CALLER + SEED,
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
    ("# a header\n\n" + OPS + CALLER + SEED).replace(HELPER_WRITE, "    logits.div_(t)\n    return logits"),
    # lines shift up again, the caller goes away
    OPS + SEED,
    OPS,
]


@pytest.fixture()
def project(tmp_path, monkeypatch):
    work = tmp_path / "rlpkg"
    shutil.copytree(PROJECT, work)
    workspace._PROJECTS.clear()
    server._RESULTS.clear()
    monkeypatch.setattr(workspace, "REFRESH_AFTER_S", 0.0)
    workspace.keep_function_walks(True)  # as the server does
    yield work
    workspace._PROJECTS.clear()
    server._RESULTS.clear()
    workspace.keep_function_walks(False)


def full_check(source: str, path: pathlib.Path):
    """What a check of ``source`` (the buffer of ``path``) reports from a project built from scratch,
    without a cache, in a process that never saw an earlier edit."""
    fresh_key = lambda key: key[2] is False  # noqa: E731  (use_cache is the third part of the key)
    for key in [k for k in workspace._PROJECTS if fresh_key(k)]:
        del workspace._PROJECTS[key]
    workspace.keep_function_walks(False)
    try:
        result = pipeline.check_source(source, str(path), DEFAULT_SETTINGS,
                                       project=workspace.ProjectMode(True, use_cache=False))
    finally:
        workspace.keep_function_walks(True)
        for key in [k for k in workspace._PROJECTS if fresh_key(k)]:
            del workspace._PROJECTS[key]
    return result.problem if result.problem is not None else result.findings


def incremental(source: str, path: pathlib.Path):
    result = pipeline.check_source(source, str(path), DEFAULT_SETTINGS, project=workspace.PROJECT)
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
        (text + "\n", OPS.replace(HELPER_WRITE, "    logits = logits / t")),
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
        shown = found if isinstance(found, list) else [found]
        want = [server.to_diagnostic(f, lines, path.as_uri()) for f in shown]
        assert server.diagnostics_for(text, str(path), project=workspace.PROJECT) == want, f"edit {step}"


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
    project_ = workspace.load_project(str(path), DEFAULT_SETTINGS)
    before = project_.finalize()
    incremental(OPS + CALLER + "\n# typing a comment\n", path)
    assert project_.finalize() is before
    incremental(OPS + CALLER.replace("scale_(", "temper("), path)  # a call changed: computed again
    assert project_.finalize() is not before


def test_unchanged_functions_are_not_walked_again(project):
    path = project / "rl" / "ops.py"
    incremental(OPS + CALLER + SEED, path)
    project_ = workspace.load_project(str(path), DEFAULT_SETTINGS)
    cache = project_._function_caches[str(path)]
    hits, misses = cache.hits, cache.misses
    # typing in the last function: the four above it are reused
    typed = SEED.replace("    return logits_rmpad", "    return logits_rmpad  # x")
    incremental(OPS + CALLER + typed, path)
    assert (cache.hits - hits, cache.misses - misses) == (4, 1)
    # scale_'s summary changes: `fresh` and `use` (its callers) are walked again, `temper` is not
    hits, misses = cache.hits, cache.misses
    text = OPS.replace(HELPER_WRITE, "    logits = logits / t")
    assert incremental(text + CALLER + typed, path) == full_check(text + CALLER + typed, path)
    assert (cache.hits - hits, cache.misses - misses) == (2, 3)
    # lines shift: the functions below the edit are walked again (their findings carry lines)
    hits, misses = cache.hits, cache.misses
    shifted = text.replace("def temper(", "# a comment\ndef temper(") + CALLER + typed
    assert incremental(shifted, path) == full_check(shifted, path)
    assert (cache.hits - hits, cache.misses - misses) == (1, 4)


DETECT = sorted((pathlib.Path(__file__).resolve().parent.parent / "fixtures" / "detect").rglob("*.py"))


def _edits(text: str, seed: int):
    """A few typing-like edits of ``text``, each applied to the last: lines inserted, removed, repeated,
    an in-place method made out of place and back (some edits leave a syntax error for a while)."""
    import random

    rng = random.Random(seed)
    lines = text.split("\n")
    out = []
    for _ in range(6):
        i = rng.randrange(len(lines))
        kind = rng.randrange(5)
        if kind == 0:
            lines.insert(i, "")
        elif kind == 1 and len(lines) > 3:
            del lines[i]
        elif kind == 2:
            lines.insert(i, lines[i])
        elif kind == 3:
            targets = [k for k, line in enumerate(lines) if "_(" in line]
            if targets:
                k = rng.choice(targets)
                lines[k] = lines[k].replace("_(", "(", 1)
        else:
            lines[i] = lines[i] + "  # typed"
        out.append("\n".join(lines))
    return out


@pytest.mark.parametrize("fixture", DETECT, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_random_edits_of_a_detection_fixture(project, fixture):
    """Each detection fixture as a buffer of the project, edited six times: always a full check's answer."""
    path = project / "rl" / "buffer.py"
    text = fixture.read_text()
    path.write_text(text)
    assert incremental(text, path) == full_check(text, path)
    for step, edited in enumerate(_edits(text, seed=len(text))):
        assert incremental(edited, path) == full_check(edited, path), f"edit {step}"


MODULE_STATE = (
    "import torch\n"
    "\n"
    "BASE = torch.zeros(3).expand(2, 3)\n"
    "\n"
    "\n"
    "def grow():\n"
    "    BASE.add_(1)\n"
    "\n"
    "\n"
    "def fresh():\n"
    "    y = torch.zeros(3).expand(2, 3)\n"
    "    y.mul_(2)\n"
)


def test_what_a_function_reads_from_its_module_and_its_lines_are_part_of_its_key(project):
    """``grow``'s text never changes, but what its walk starts from does (a module-level name); ``fresh``
    (no parameter, so nothing in its scope carries a line) moves down with an edit above it."""
    path = project / "rl" / "buffer.py"
    path.write_text(MODULE_STATE)
    steps = [
        MODULE_STATE,
        MODULE_STATE.replace("BASE = torch.zeros(3).expand(2, 3)", "BASE = torch.zeros(2, 3)"),
        MODULE_STATE,
        MODULE_STATE.replace("def fresh", "# moved\ndef fresh"),
        MODULE_STATE,
    ]
    found = []
    for step, text in enumerate(steps):
        got = incremental(text, path)
        assert got == full_check(text, path), f"step {step}"
        found.append([(f.line, f.code) for f in got])
    assert found[0] == [(7, "IPV004"), (12, "IPV004")] and found[1] == [(12, "IPV004")]
    assert found[3] == [(7, "IPV004"), (13, "IPV004")] and found[4] == found[0]


def test_a_function_that_appears_walks_the_callers_that_missed_it(project, capsys):
    """The on-disk cache too: engine.py is unchanged, but the helper it calls now exists."""
    from inplace_lint.adapters.cli import main

    engine = project / "rl" / "engine.py"
    engine.write_text(engine.read_text() + "\n\ndef late(model, ids, t):\n"
                      "    out = model(ids)\n    m.halve_(out.logits.squeeze(0))\n")
    main(["check", "-q", "-j", "1", str(project)])  # writes the cache: `m.halve_` finds nothing
    assert "engine.py:16:" not in capsys.readouterr().out
    ops = project / "rl" / "ops.py"
    ops.write_text(ops.read_text() + "\n\ndef halve_(x):\n    x.mul_(0.5)\n")
    main(["check", "-q", "-j", "1", str(project)])
    out = capsys.readouterr().out
    assert "rl/engine.py:16:5: IPV001" in out.replace(str(project) + "/", ""), out


def test_the_server_freezes_a_loaded_project_once(project, monkeypatch):
    """A full garbage collection walked every loaded summary every few edits: a project load moves
    what is alive out of its reach (once per load, not per edit; workspace.load_project does it)."""
    import gc

    frozen = []
    monkeypatch.setattr(gc, "freeze", lambda: frozen.append(1))
    workspace._PROJECTS.clear()
    path = project / "rl" / "ops.py"
    server.diagnostics_for(OPS, str(path), project=workspace.PROJECT)
    server.diagnostics_for(OPS + SEED, str(path), project=workspace.PROJECT)
    assert frozen == [1]
