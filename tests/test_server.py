"""``inplace-lint server`` driven by a real LSP client (pytest-lsp) over stdio in a subprocess."""
from __future__ import annotations

import os
import pathlib
import sys

import pytest

pytest.importorskip("pygls")
pytest_lsp = pytest.importorskip("pytest_lsp")
from lsprotocol import types  # noqa: E402
from pytest_lsp import ClientServerConfig, LanguageClient  # noqa: E402

ROOT = pathlib.Path(__file__).resolve().parent.parent
# line 3: IPV001 at byte col 4; line 5: IPV004 after a 2-byte, 1-UTF-16-unit character (LSP col 11, ast col 12);
# line 6: suppressed by noqa
SOURCE = (
    "def f(model, h, t):\n"
    "    x = model(h).logits.squeeze(0)\n"
    "    x.div_(t)\n"
    "    y = output.logits.expand(3)\n"
    "    \u00e9 = 1; y.mul_(t)\n"
    "    output.logits.add_(1)  # noqa: IPV001\n"
)


@pytest_lsp.fixture(config=ClientServerConfig(
    server_command=[sys.executable, "-m", "inplace_lint", "server"],
    server_env={**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])},
))
async def client(lsp_client: LanguageClient):
    await lsp_client.initialize_session(types.InitializeParams(capabilities=types.ClientCapabilities()))
    yield
    await lsp_client.shutdown_session()


def ranges(diagnostics):
    return [(d.code, d.range.start.line, d.range.start.character, d.range.end.line, d.range.end.character,
             d.severity, d.source) for d in diagnostics]


@pytest.mark.asyncio
async def test_diagnostics_on_open_change_close(client: LanguageClient, tmp_path):
    path = tmp_path / "model.py"
    path.write_text(SOURCE, encoding="utf-8")
    uri = path.as_uri()
    client.text_document_did_open(types.DidOpenTextDocumentParams(
        text_document=types.TextDocumentItem(uri=uri, language_id="python", version=1, text=SOURCE)))
    await client.wait_for_notification(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
    warning, error = types.DiagnosticSeverity.Warning, types.DiagnosticSeverity.Error
    assert ranges(client.diagnostics[uri]) == [
        ("IPV001", 2, 4, 2, 13, warning, "inplace-lint"),
        ("IPV004", 4, 11, 4, 20, error, "inplace-lint"),
    ]
    first = client.diagnostics[uri][0]
    assert first.message == "`div_` writes in place to `x`, a view of model output `model(h).logits`"
    assert first.code_description is None  # no project address in the package metadata: no link is made up

    fixed = SOURCE.replace("    x.div_(t)\n", "    x = x / t\n")
    client.text_document_did_change(types.DidChangeTextDocumentParams(
        text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=2),
        content_changes=[types.TextDocumentContentChangeWholeDocument(text=fixed)]))
    await client.wait_for_notification(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
    assert ranges(client.diagnostics[uri]) == [("IPV004", 4, 11, 4, 20, error, "inplace-lint")]

    client.text_document_did_close(types.DidCloseTextDocumentParams(
        text_document=types.TextDocumentIdentifier(uri=uri)))
    await client.wait_for_notification(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
    assert list(client.diagnostics[uri]) == []


@pytest.mark.asyncio
async def test_configuration_of_the_document_folder(client: LanguageClient, tmp_path):
    (tmp_path / "setup.cfg").write_text("[inplace_lint]\nper-file-ignores = model.py:IPV004\n")
    uri = (tmp_path / "model.py").as_uri()
    client.text_document_did_open(types.DidOpenTextDocumentParams(
        text_document=types.TextDocumentItem(uri=uri, language_id="python", version=1, text=SOURCE)))
    await client.wait_for_notification(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
    assert [d.code for d in client.diagnostics[uri]] == ["IPV001"]
    # saving re-checks, and re-reads the configuration
    (tmp_path / "setup.cfg").write_text("[inplace_lint]\nignore = IPV001\n")
    client.text_document_did_save(types.DidSaveTextDocumentParams(text_document=types.TextDocumentIdentifier(uri=uri)))
    await client.wait_for_notification(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
    assert [d.code for d in client.diagnostics[uri]] == ["IPV004"]


FIXABLE = (
    "def f(model, h, t):\n    x = model(h).logits.squeeze(0)\n    x.div_(t)\n    return x\n\n"
    "def g(output, t):\n    y = output.logits.squeeze(0)\n    y.mul_(t)\n    return output.logits\n"
)
# the default style, inline (config.FIX_STYLES[0]): the same as `inplace-lint fix` and the pre-commit hook
IMPORT = ("try:\n    from torch.distributed.tensor import DTensor\n"
          "except ImportError:  # torch < 2.5\n    from torch.distributed._tensor import DTensor\n\n")


def _guarded(name, op):
    return (f'    if isinstance({name}, DTensor) and not isinstance(t, DTensor) and getattr(t, "ndim", 0) > 0:\n'
            f"        {name} = {name}.full_tensor()\n    {name} = {name}.clone().{op}(t)\n")


F_FIXED = FIXABLE.replace("    x.div_(t)\n", _guarded("x", "div_"))
G_FIXED = FIXABLE.replace("    y.mul_(t)\n", _guarded("y", "mul_"))


@pytest.mark.asyncio
async def test_quick_fixes_from_the_codemod(client: LanguageClient, tmp_path):
    uri = (tmp_path / "fixable.py").as_uri()
    client.text_document_did_open(types.DidOpenTextDocumentParams(
        text_document=types.TextDocumentItem(uri=uri, language_id="python", version=1, text=FIXABLE)))
    await client.wait_for_notification(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
    diagnostics = list(client.diagnostics[uri])
    assert [(d.code, d.range.start.line, d.range.start.character) for d in diagnostics] == [
        ("IPV001", 2, 4), ("IPV001", 7, 4)]
    actions = await client.text_document_code_action_async(types.CodeActionParams(
        text_document=types.TextDocumentIdentifier(uri=uri),
        range=types.Range(start=types.Position(line=0, character=0), end=types.Position(line=9, character=0)),
        context=types.CodeActionContext(diagnostics=diagnostics)))
    summary = [(a.title, a.kind, a.is_preferred, [d.range.start.line for d in a.diagnostics]) for a in actions]
    assert summary == [
        ("IPV001: rebind `x` to the out-of-place result", types.CodeActionKind.QuickFix, True, [2]),
        ("IPV001: rebind `y` to the out-of-place result (unsafe)", types.CodeActionKind.QuickFix, False, [7]),
        ("Fix all inplace-lint findings in file (safe fixes)", types.CodeActionKind.SourceFixAll, False, [2, 7]),
    ]

    def apply(text, edits):
        lines = text.splitlines(keepends=True)
        for e in sorted(edits, key=lambda e: e.range.start.line, reverse=True):
            assert e.range.start.character == e.range.end.character == 0  # whole lines
            lines[e.range.start.line:e.range.end.line] = [e.new_text]
        return "".join(lines)

    # only the changed lines are edited: the import, and the one rewritten statement
    spans = [sorted((e.range.start.line, e.range.end.line) for e in a.edit.changes[uri]) for a in actions]
    assert spans == [[(0, 0), (2, 3)], [(0, 0), (7, 8)], [(0, 0), (2, 3)]]
    texts = [apply(FIXABLE, a.edit.changes[uri]) for a in actions]
    assert texts == [IMPORT + F_FIXED, IMPORT + G_FIXED, IMPORT + F_FIXED]


@pytest.mark.asyncio
async def test_related_information_is_the_origin_chain(client: LanguageClient, tmp_path):
    uri = (tmp_path / "model.py").as_uri()
    client.text_document_did_open(types.DidOpenTextDocumentParams(
        text_document=types.TextDocumentItem(uri=uri, language_id="python", version=1, text=SOURCE)))
    await client.wait_for_notification(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
    first = client.diagnostics[uri][0]
    related = [(r.message, r.location.uri, r.location.range.start.line, r.location.range.start.character,
                r.location.range.end.line, r.location.range.end.character) for r in first.related_information]
    # each step of the chain is a location in the document (line 2: `x = model(h).logits.squeeze(0)`), from where
    # its quoted text stands to the line's end
    assert related == [("model output `model(h).logits`", uri, 1, 8, 1, 34), ("view `.squeeze(0)`", uri, 1, 23, 1, 34)]


@pytest.mark.asyncio
async def test_syntax_error_is_a_diagnostic(client: LanguageClient, tmp_path):
    """While the buffer does not parse, one IPV000 error says where and why (the findings come back after)."""
    uri = (tmp_path / "model.py").as_uri()
    client.text_document_did_open(types.DidOpenTextDocumentParams(
        text_document=types.TextDocumentItem(uri=uri, language_id="python", version=1, text=SOURCE)))
    await client.wait_for_notification(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
    broken = SOURCE.replace("    x.div_(t)\n", "    x.div_(t\n")
    client.text_document_did_change(types.DidChangeTextDocumentParams(
        text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=2),
        content_changes=[types.TextDocumentContentChangeWholeDocument(text=broken)]))
    await client.wait_for_notification(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
    [d] = client.diagnostics[uri]
    assert (d.code, d.severity, d.source) == ("IPV000", types.DiagnosticSeverity.Error, "inplace-lint")
    assert d.message == "cannot parse: '(' was never closed"
    assert (d.range.start.line, d.range.start.character, d.range.end.line, d.range.end.character) == (2, 10, 2, 12)
    assert d.code_description is None  # (test_reporters checks the links when the metadata names an address)
    client.text_document_did_change(types.DidChangeTextDocumentParams(
        text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=3),
        content_changes=[types.TextDocumentContentChangeWholeDocument(text=SOURCE)]))
    await client.wait_for_notification(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
    assert [d.code for d in client.diagnostics[uri]] == ["IPV001", "IPV004"]
