"""``inplace-lint server``: a language server over stdio (pygls 2.x, the ``[server]`` extra).

It publishes diagnostics for Python documents on open, change and save, from the same
:func:`inplace_lint.checker.check_source` the CLI uses (``# noqa`` honoured, configuration read from
the document's folder upward, as ``inplace-lint check`` does), and clears them on close.

Quick fixes come from the codemod through one hook, :func:`quick_fixes`: it returns no actions until
``inplace_lint.codemod`` provides a fixer (then: one action per diagnostic plus "fix all in file";
unsafe fixes offered with the title suffix " (unsafe)" and ``isPreferred=False``).
"""
from __future__ import annotations

import pathlib
import re
from typing import List, Optional, Sequence

from lsprotocol import types
from pygls.lsp.server import LanguageServer
from pygls.workspace import TextDocument

from . import __version__, config
from .checker import check_source
from .engine import DEFAULT_SETTINGS
from .findings import Finding
from .reporters import level
from .rules import url

SOURCE = "inplace-lint"
SEVERITY = {"error": types.DiagnosticSeverity.Error, "warning": types.DiagnosticSeverity.Warning}


def utf16_column(line_text: str, byte_col: int) -> int:
    """LSP's default position encoding (UTF-16 code units) for ``ast``'s UTF-8 byte column."""
    prefix = line_text.encode("utf-8")[:byte_col].decode("utf-8", errors="ignore")
    return len(prefix.encode("utf-16-le")) // 2


def to_diagnostic(finding: Finding, lines: Sequence[str]) -> types.Diagnostic:
    def position(line: int, byte_col: int) -> types.Position:
        text = lines[line - 1] if 0 < line <= len(lines) else ""
        return types.Position(line=line - 1, character=utf16_column(text, byte_col))

    return types.Diagnostic(
        range=types.Range(start=position(finding.line, finding.col), end=position(finding.end_line, finding.end_col)),
        message=finding.message,
        severity=SEVERITY[level(finding.code)],
        code=finding.code,
        code_description=types.CodeDescription(href=url(finding.code)),
        source=SOURCE,
    )


def diagnostics_for(source: str, path: Optional[str]) -> List[types.Diagnostic]:
    """The diagnostics of one document; configuration found from ``path`` upward (defaults without a path)."""
    settings, cli, cfg_path = DEFAULT_SETTINGS, {}, None
    if path:
        settings, cli, cfg_path = config.load(pathlib.Path(path).parent)
    ignore = list(cli.get("ignore", []))
    if path:
        ignore += config.per_file_ignored(path, list(cli.get("per-file-ignores", [])),
                                          cfg_path.parent if cfg_path else None)
    result = check_source(source, path or "<document>", settings, cli.get("select", []), ignore)
    lines = re.split(r"\r\n|\r|\n", source)
    return [to_diagnostic(f, lines) for f in result.findings]


def quick_fixes(document: TextDocument, params: types.CodeActionParams) -> List[types.CodeAction]:
    """THE HOOK for codemod quick fixes: code actions for the inplace-lint diagnostics in ``params``.

    Empty until ``inplace_lint.codemod`` can fix a source. Then: one ``quickfix`` action per
    diagnostic (``diagnostics=[that one]``) and a "Fix all inplace-lint findings in file" action;
    a fix with unsafe applicability gets " (unsafe)" in its title and ``is_preferred=False``.
    """
    return []


def make_server() -> LanguageServer:
    server = LanguageServer("inplace-lint", __version__, text_document_sync_kind=types.TextDocumentSyncKind.Full)

    def publish(ls: LanguageServer, uri: str) -> None:
        document = ls.workspace.get_text_document(uri)
        path = document.path if uri.startswith("file:") else None
        try:
            diagnostics = diagnostics_for(document.source, path)
        except config.ConfigError as exc:
            ls.window_show_message(types.ShowMessageParams(type=types.MessageType.Error, message=f"inplace-lint: {exc}"))
            diagnostics = diagnostics_for(document.source, None)
        ls.text_document_publish_diagnostics(
            types.PublishDiagnosticsParams(uri=uri, version=document.version, diagnostics=diagnostics))

    @server.feature(types.TEXT_DOCUMENT_DID_OPEN)
    def did_open(ls: LanguageServer, params: types.DidOpenTextDocumentParams) -> None:
        publish(ls, params.text_document.uri)

    @server.feature(types.TEXT_DOCUMENT_DID_CHANGE)
    def did_change(ls: LanguageServer, params: types.DidChangeTextDocumentParams) -> None:
        publish(ls, params.text_document.uri)

    @server.feature(types.TEXT_DOCUMENT_DID_SAVE)
    def did_save(ls: LanguageServer, params: types.DidSaveTextDocumentParams) -> None:
        publish(ls, params.text_document.uri)

    @server.feature(types.TEXT_DOCUMENT_DID_CLOSE)
    def did_close(ls: LanguageServer, params: types.DidCloseTextDocumentParams) -> None:
        ls.text_document_publish_diagnostics(types.PublishDiagnosticsParams(uri=params.text_document.uri, diagnostics=[]))

    @server.feature(types.TEXT_DOCUMENT_CODE_ACTION,
                    types.CodeActionOptions(code_action_kinds=[types.CodeActionKind.QuickFix]))
    def code_action(ls: LanguageServer, params: types.CodeActionParams) -> List[types.CodeAction]:
        return quick_fixes(ls.workspace.get_text_document(params.text_document.uri), params)

    return server


def serve() -> None:
    make_server().start_io()
