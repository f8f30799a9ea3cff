"""Robust rewriting (issue 21 item 3): a statement too deep for the rewriter is "no fix, because ..." in
every surface, never a crash; hard links keep pointing at the fixed text.

The deep case: 140 nested calls around one write. libcst walks a tree recursively and raised
``RecursionError`` there, while ``check`` said ``[fix: safe]``, ``fix`` and ``--format json`` crashed and
the language server's quick fix answered -32603.
"""
from __future__ import annotations

import json
import os
import sys

import pytest

from inplace_lint.adapters.cli import main
from inplace_lint.analysis import fixplan
from inplace_lint.config import DEFAULT_SETTINGS
from inplace_lint.fixing import fix_code, fix_file
from inplace_lint.pipeline import check_source
from tests.test_fix_invariant import check_invariant

REASON = "the statement is nested more than 64 levels deep, too deep for the rewriter (libcst)"
MESSAGE = "`div_` writes in place to `x`, a view of model output `model(h).logits`"


def nested(n: int) -> str:
    """A write inside ``n`` nested calls: the statement is ``n + 5`` ``ast`` levels deep."""
    return ("import torch\n\n\ndef f(model, h, t, g):\n    x = model(h).logits.squeeze(0)\n"
            "    y = " + "g(" * n + "x.div_(t)" + ")" * n + "\n    return y\n")


DEEP = nested(140)
COL = 4 + 2 * 140 + 5  # 1-based column of `x.div_` on line 6


@pytest.fixture
def deep(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "deep.py").write_text(DEEP)
    return tmp_path / "deep.py"


def test_text_says_no_fix_and_why(deep, capsys):
    assert main(["check", "deep.py"]) == 1
    assert capsys.readouterr().out == f"deep.py:6:{COL}: IPV001 {MESSAGE} [no fix: {REASON}]\n"


def test_json_has_no_fix_and_the_reason(deep, capsys):
    assert main(["check", "--format", "json", "deep.py"]) == 1
    captured = capsys.readouterr()
    [item] = json.loads(captured.out)
    assert (item["code"], item["location"], item["fix"], item["no_fix"]) == (
        "IPV001", {"row": 6, "column": COL}, None, REASON)
    assert "internal error" not in captured.err


def test_sarif_has_no_fixes_and_the_reason(deep, capsys):
    assert main(["check", "--format", "sarif", "deep.py"]) == 1
    [result] = json.loads(capsys.readouterr().out)["runs"][0]["results"]
    assert "fixes" not in result
    assert result["properties"] == {"noFix": REASON}
    assert result["locations"][0]["physicalLocation"]["region"]["startColumn"] == COL


@pytest.mark.parametrize("diff", [False, True])
def test_fix_leaves_it_and_says_why(deep, capsys, diff):
    assert main(["fix"] + (["--diff"] if diff else []) + ["deep.py"]) == 1
    captured = capsys.readouterr()
    line = f"deep.py:6:{COL}: IPV001 {MESSAGE} [no automatic fix: {REASON}]\n"
    if diff:  # --diff keeps stdout for the patch (nothing here): what is left goes to stderr
        assert captured.out == "" and captured.err.startswith(line)
    else:
        assert captured.out == line
    assert "0 fixes" in captured.err and "1 finding remains; 0 files skipped" in captured.err
    assert "internal error" not in captured.err
    assert deep.read_text() == DEEP


def test_fix_stdin_says_why(deep, capsys, monkeypatch):
    import io

    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(DEEP.encode())))
    assert main(["fix", "-"]) == 1
    captured = capsys.readouterr()
    assert captured.out == DEEP
    assert f"[no automatic fix: {REASON}]" in captured.err


@pytest.mark.parametrize("style", ["runtime", "inline"])
def test_other_findings_of_the_file_are_still_fixed(style):
    source = DEEP.replace("    return y\n", "    z = model(h).logits.squeeze(0)\n    z.mul_(t)\n    return y, z\n")
    findings = check_source(source, "m.py", DEFAULT_SETTINGS, fix_style=style).findings
    assert [(f.line, f.fix is None, f.no_fix) for f in findings] == [(6, True, REASON), (8, False, "")]
    result = fix_code(source, style=style)
    assert result.error is None and [f.line for f in result.applied] == [8] and [f.line for f in result.unfixed] == [6]
    assert "g(" * 140 + "x.div_(t)" in result.new_source


@pytest.mark.parametrize("style, memory_aware", [("runtime", False), ("inline", False), ("runtime", True)])
def test_advertised_equals_applied_around_the_limit(style, memory_aware):
    """Statements at the limit are fixed (as libcst writes them), one level deeper is "no fix", and far
    deeper is no crash: the invariant of tests/test_fix_invariant.py holds for each."""
    limit = fixplan.MAX_REWRITE_DEPTH - 5  # `y = g(...)` inside the function: 5 levels around the calls
    assert check_invariant(nested(limit), style, memory_aware) == 1
    assert check_invariant(nested(limit + 1), style, memory_aware) == 0
    assert check_invariant(DEEP, style, memory_aware) == 0
    [finding] = check_source(nested(limit + 1), "m.py", DEFAULT_SETTINGS).findings
    assert (finding.fix, finding.no_fix) == (None, REASON)


def test_a_fix_at_the_limit_is_written_from_a_deep_stack():
    """The limit leaves room for the caller's frames: a language server or a test runner call the codemod
    from deep in their own stack."""
    source = nested(fixplan.MAX_REWRITE_DEPTH - 5)

    def from_depth(n):
        return from_depth(n - 1) if n else fix_code(source)

    result = from_depth(300)
    assert result.error is None and len(result.applied) == 1


def test_the_rewriter_failing_costs_the_fix_not_the_file(monkeypatch):
    """Past the analysis's limit (here lifted), libcst's RecursionError drops the fix; nothing crashes."""
    monkeypatch.setattr(fixplan.recipe, "MAX_REWRITE_DEPTH", 10_000)
    [finding] = check_source(DEEP, "m.py", DEFAULT_SETTINGS, fix_style="runtime").findings
    assert finding.fix is None
    assert fix_code(DEEP).new_source is None


def test_a_deep_statement_outside_any_finding_costs_nothing():
    """Only statements holding a planned fix are measured: a deep one elsewhere changes nothing."""
    source = nested(3).replace("    return y\n", "    w = " + "g(" * 140 + "1" + ")" * 140 + "\n    return y\n")
    [finding] = check_source(source, "m.py", DEFAULT_SETTINGS, fix_style="runtime").findings
    assert finding.fix is not None and finding.fix.edits and finding.no_fix == ""


def test_language_server_offers_a_disabled_action_with_the_reason():
    pytest.importorskip("pygls")
    from lsprotocol import types
    from pygls.workspace import TextDocument

    from inplace_lint.adapters.server import diagnostics_for, quick_fixes

    [diagnostic] = diagnostics_for(DEEP, None)
    params = types.CodeActionParams(
        text_document=types.TextDocumentIdentifier(uri="untitled:deep.py"),
        range=diagnostic.range, context=types.CodeActionContext(diagnostics=[diagnostic]))
    [action] = quick_fixes(TextDocument("untitled:deep.py", DEEP), params)
    assert (action.title, action.edit, action.disabled.reason) == ("IPV001: no fix", None, f"no fix: {REASON}")


pytest_lsp = pytest.importorskip("pytest_lsp")
from lsprotocol import types as lsp  # noqa: E402
from pytest_lsp import ClientServerConfig, LanguageClient  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@pytest_lsp.fixture(config=ClientServerConfig(
    server_command=[sys.executable, "-m", "inplace_lint", "server"],
    server_env={**os.environ, "PYTHONPATH": os.pathsep.join([ROOT, os.environ.get("PYTHONPATH", "")])},
))
async def client(lsp_client: LanguageClient):
    await lsp_client.initialize_session(lsp.InitializeParams(capabilities=lsp.ClientCapabilities()))
    yield
    await lsp_client.shutdown_session()


@pytest.mark.asyncio
async def test_language_server_quick_fix_answers_no_fix(client: LanguageClient, tmp_path):
    """The server (a real one, over stdio) answers the code action request (it was error -32603)."""
    uri = (tmp_path / "deep.py").as_uri()
    client.text_document_did_open(lsp.DidOpenTextDocumentParams(
        text_document=lsp.TextDocumentItem(uri=uri, language_id="python", version=1, text=DEEP)))
    await client.wait_for_notification(lsp.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
    diagnostics = list(client.diagnostics[uri])
    assert [(d.code, d.range.start.line, d.range.start.character) for d in diagnostics] == [("IPV001", 5, COL - 1)]
    actions = await client.text_document_code_action_async(lsp.CodeActionParams(
        text_document=lsp.TextDocumentIdentifier(uri=uri), range=diagnostics[0].range,
        context=lsp.CodeActionContext(diagnostics=diagnostics)))
    assert [(a.title, a.edit, a.disabled.reason) for a in actions] == [("IPV001: no fix", None, f"no fix: {REASON}")]


# ---------------------------------------------------------------- hard links

BAD = "def f(model, h, t):\n    x = model(h).logits.squeeze(0)\n    x.div_(t)\n    return x\n"
FIXED = ("from inplace_lint.runtime import out_of_place\n\n"
         "def f(model, h, t):\n    x = model(h).logits.squeeze(0)\n    x = out_of_place(x, \"div_\", t)\n    return x\n")


@pytest.mark.skipif(not hasattr(os, "link"), reason="no hard links")
def test_hard_links_keep_pointing_at_the_fixed_text(tmp_path, capsys):
    """docs/fixes.md: a file with other hard links is written in place, on its own inode."""
    first = tmp_path / "a" / "m.py"
    first.parent.mkdir()
    first.write_text(BAD)
    os.chmod(first, 0o640)
    other = tmp_path / "b.py"
    os.link(first, other)
    inode = first.stat().st_ino
    assert main(["fix", "--style", "runtime", str(first)]) == 0
    assert first.read_text() == other.read_text() == FIXED
    assert first.stat().st_ino == other.stat().st_ino == inode and first.stat().st_nlink == 2
    assert first.stat().st_mode & 0o777 == 0o640
    assert not [p for p in (tmp_path / "a").iterdir() if p.name.startswith(".inplace-lint-")]
    assert "1 fix applied in 1 file" in capsys.readouterr().err


def test_a_lone_file_is_still_replaced_by_rename(tmp_path):
    path = tmp_path / "m.py"
    path.write_text(BAD)
    assert fix_file(str(path), style="runtime").written
    assert path.read_text() == FIXED and path.stat().st_nlink == 1
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".inplace-lint-")]


@pytest.mark.skipif(not hasattr(os, "link"), reason="no hard links")
def test_two_names_of_one_file_in_one_run_are_fixed_once(tmp_path, capsys):
    (tmp_path / "a.py").write_text(BAD)
    os.link(tmp_path / "a.py", tmp_path / "b.py")
    assert main(["fix", "--style", "runtime", "-j", "2", str(tmp_path)]) == 0
    assert (tmp_path / "a.py").read_text() == (tmp_path / "b.py").read_text() == FIXED
    assert "1 fix applied in 1 file; 0 findings remain; 0 files skipped. Scanned 1 file." in capsys.readouterr().err


@pytest.mark.skipif(not hasattr(os, "link") or os.geteuid() == 0, reason="no hard links, or root writes anything")
def test_a_hard_linked_file_that_cannot_be_written_is_an_error(tmp_path, capsys):
    path = tmp_path / "m.py"
    path.write_text(BAD)
    os.link(path, tmp_path / "n.txt")
    os.chmod(path, 0o444)
    assert main(["fix", "--style", "runtime", str(path)]) == 1
    err = capsys.readouterr().err
    assert f"{path}: cannot write: [Errno 13] Permission denied" in err and "0 fixes applied" in err
    assert path.read_text() == BAD
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".inplace-lint-")]


def test_an_overwrite_that_fails_keeps_the_fixed_text_beside_the_file(tmp_path, monkeypatch):
    """The crash window documented in docs/fixes.md: the full new text is on disk before the overwrite."""
    from inplace_lint import fixing

    path = tmp_path / "m.py"
    path.write_text(BAD)
    os.link(path, tmp_path / "n.txt")
    real_fsync, calls = os.fsync, []

    def failing_fsync(fd):
        calls.append(fd)
        if len(calls) == 2:  # the second: the overwrite of the file itself
            raise OSError(5, "Input/output error")
        real_fsync(fd)

    monkeypatch.setattr(fixing.os, "fsync", failing_fsync)
    result = fix_file(str(path), style="runtime")
    assert not result.written and result.applied == []
    [tmp] = [p for p in tmp_path.iterdir() if p.name.startswith(".inplace-lint-")]
    assert tmp.read_text() == FIXED
    assert result.error == f"cannot write: [Errno 5] Input/output error: {path} may be part written; " \
                           f"its fixed text is in {tmp}"
