"""``inplace-lint server``: a language server over stdio (pygls 2.x, the ``[server]`` extra).

It publishes diagnostics for Python documents on open, change and save, from the same
:func:`inplace_lint.pipeline.check_source` the CLI uses (``# noqa`` honoured, configuration read from
the document's folder upward, as ``inplace-lint check`` does), and clears them on close. Each
diagnostic carries its origin chain as ``relatedInformation`` (locations the editor can jump to). While
the buffer does not parse, one ``IPV000`` error diagnostic says where and why (as ruff shows syntax
errors), instead of the diagnostics vanishing. Code actions are computed only when the editor asks.

Quick fixes come from the findings' own edits (``Fix.edits``, attached once per document by the codemod
in the config's ``fix-style``) through one hook, :func:`quick_fixes`: one action per diagnostic that has
a fix (that finding's edits), plus "Fix all inplace-lint findings in file" (the safe findings' edits,
merged as ``fix`` merges them). Unsafe fixes are offered too, with the title suffix " (unsafe)" and
``isPreferred=False``. Each action edits only the changed lines, so cursors and folds elsewhere survive.
A finding whose fix was withdrawn (``Finding.no_fix``: a statement too deep for the rewriter) gets a
disabled action (LSP ``disabled.reason``) that says why, never an error.
"""
from __future__ import annotations

import collections
import pathlib
import re
from typing import Dict, List, Optional, Sequence, Tuple

from lsprotocol import types
from pygls.lsp.server import LanguageServer
from pygls.workspace import TextDocument

from .. import __version__, config, textpos
from ..pipeline import FileResult, Problem, check_source
from ..config import DEFAULT_SETTINGS
from ..findings import Applicability, Finding
from .reporters import code_url, level

SOURCE = "inplace-lint"
SEVERITY = {"error": types.DiagnosticSeverity.Error, "warning": types.DiagnosticSeverity.Warning}


def utf16_column(line_text: str, byte_col: int) -> int:
    """LSP's default position encoding (UTF-16 code units) for ``ast``'s UTF-8 byte column."""
    return textpos.utf16_column(line_text, textpos.char_column(line_text, byte_col))


def _other_file_lines(path: str) -> List[str]:
    try:
        return re.split(r"\r\n|\r|\n", pathlib.Path(path).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError):
        return []


def to_diagnostic(finding: Finding, lines: Sequence[str], uri: Optional[str] = None) -> types.Diagnostic:
    """One LSP diagnostic (UTF-16 columns); with ``uri``, the finding's related locations as
    ``relatedInformation`` (a location in another file is named by its own URI). A
    :class:`~inplace_lint.pipeline.Problem` (the buffer does not parse) spans the rest of its line."""

    def position(text_lines: Sequence[str], line: int, byte_col: int) -> types.Position:
        text = text_lines[line - 1] if 0 < line <= len(text_lines) else ""
        return types.Position(line=max(line - 1, 0), character=utf16_column(text, byte_col))

    def line_end(text_lines: Sequence[str], line: int) -> types.Position:
        text = text_lines[line - 1] if 0 < line <= len(text_lines) else ""
        return types.Position(line=max(line - 1, 0), character=len(text.encode("utf-16-le")) // 2)

    start = position(lines, finding.line, finding.col)
    end = position(lines, finding.end_line, finding.end_col)
    if isinstance(finding, Problem):  # a zero-width range is easy to miss: underline to the end of the line
        end = line_end(lines, finding.line)
        if end.character <= start.character:
            end = types.Position(line=start.line, character=start.character + 1)
    related = None
    if uri is not None and finding.related:
        related = []
        for r in finding.related:
            r_lines, r_uri = (lines, uri) if r.path is None else (_other_file_lines(r.path), pathlib.Path(r.path).as_uri())
            related.append(types.DiagnosticRelatedInformation(
                location=types.Location(uri=r_uri, range=types.Range(start=position(r_lines, r.line, r.col),
                                                                     end=line_end(r_lines, r.line))),
                message=r.message))
    return types.Diagnostic(
        range=types.Range(start=start, end=end),
        message=finding.message,
        severity=SEVERITY[level(finding.code)],
        code=finding.code,
        code_description=types.CodeDescription(href=code_url(finding.code)),
        source=SOURCE,
        related_information=related,
    )


def _document_options(path: Optional[str]) -> Tuple[config.Settings, List[str], List[str], str]:
    """Settings, select, ignore (per-file-ignores included) and fix-style for a document."""
    if not path:
        return DEFAULT_SETTINGS, [], [], config.FIX_STYLES[0]
    settings, cli, cfg_path = config.load(pathlib.Path(path).parent)
    ignore = list(cli.get("ignore", [])) + config.per_file_ignored(
        path, list(cli.get("per-file-ignores", [])), cfg_path.parent if cfg_path else None)
    return settings, list(cli.get("select", [])), ignore, str(cli.get("fix-style", config.FIX_STYLES[0]))


#: the last few checks, by (text, path, options): a re-open or a code action request on text that did
#: not change is not analysed again (a save starts afresh)
_RESULTS: "collections.OrderedDict[tuple, FileResult]" = collections.OrderedDict()
_RESULTS_SIZE = 16


def result_for(source: str, path: Optional[str], with_edits: bool = False) -> FileResult:
    """The document's check; ``with_edits``: each fix carries its edits in the config's fix-style."""
    settings, select, ignore, style = _document_options(path)
    fix_style = style if with_edits else None
    key = (source, path, settings, tuple(select), tuple(ignore), fix_style)
    result = _RESULTS.get(key)
    if result is None:
        result = _RESULTS[key] = check_source(source, path or "<document>", settings, select, ignore,
                                              fix_style=fix_style)
        while len(_RESULTS) > _RESULTS_SIZE:
            _RESULTS.popitem(last=False)
    else:
        _RESULTS.move_to_end(key)
    return result


def findings_for(source: str, path: Optional[str], with_edits: bool = False) -> List[Finding]:
    return result_for(source, path, with_edits).findings


def diagnostics_for(source: str, path: Optional[str], uri: Optional[str] = None) -> List[types.Diagnostic]:
    """The diagnostics of one document; configuration found from ``path`` upward (defaults without a path).
    A document that does not parse gets one ``IPV000`` diagnostic where Python says the error is."""
    lines = re.split(r"\r\n|\r|\n", source)
    if uri is None and path:
        uri = pathlib.Path(path).as_uri()
    result = result_for(source, path)
    shown = [result.problem] if result.problem is not None else result.findings
    return [to_diagnostic(f, lines, uri) for f in shown]


def _workspace_edit(uri: str, source: str, edits) -> types.WorkspaceEdit:
    """Edits (character columns) as LSP TextEdits (UTF-16 columns), merged as ``fix`` merges them."""
    from ..fix.codemod import merge_edits

    lines = re.split(r"\r\n|\r|\n", source)

    def position(line: int, col: int) -> types.Position:
        text = lines[line - 1] if 0 < line <= len(lines) else ""
        return types.Position(line=line - 1, character=textpos.utf16_column(text, col))

    return types.WorkspaceEdit(changes={uri: [
        types.TextEdit(range=types.Range(start=position(e.line, e.col), end=position(e.end_line, e.end_col)),
                       new_text=e.content) for e in merge_edits(edits)]})


def quick_fixes(document: TextDocument, params: types.CodeActionParams) -> List[types.CodeAction]:
    """THE HOOK for codemod quick fixes: code actions for the inplace-lint diagnostics in ``params``.

    One ``quickfix`` action per diagnostic with a fix (its title is the fix's message; an unsafe fix
    gets " (unsafe)" and ``is_preferred=False``), then "Fix all inplace-lint findings in file" (safe
    fixes only) when any applies. Every action applies the findings' own edits; nothing is re-derived.
    """
    uri = document.uri
    path = document.path if uri.startswith("file:") else None
    source = document.source
    wanted = [d for d in params.context.diagnostics if d.source == SOURCE]
    if not wanted:
        return []
    lines = re.split(r"\r\n|\r|\n", source)
    findings = findings_for(source, path, with_edits=True)
    by_range: Dict[Tuple[str, int, int], Finding] = {}
    for f in findings:
        d = to_diagnostic(f, lines)
        by_range[(f.code, d.range.start.line, d.range.start.character)] = f
    actions: List[types.CodeAction] = []
    for diagnostic in wanted:
        finding = by_range.get((str(diagnostic.code), diagnostic.range.start.line, diagnostic.range.start.character))
        if finding is not None and finding.fix is None and finding.no_fix:
            actions.append(types.CodeAction(  # shown greyed out, with the reason, where the editor lists them
                title=f"{finding.code}: no fix", kind=types.CodeActionKind.QuickFix, diagnostics=[diagnostic],
                disabled=types.CodeActionDisabled(reason=f"no fix: {finding.no_fix}")))
            continue
        if finding is None or finding.fix is None or not finding.fix.edits:
            continue
        unsafe = finding.fix.applicability is not Applicability.SAFE
        actions.append(types.CodeAction(
            title=f"{finding.code}: {finding.fix.message}" + (" (unsafe)" if unsafe else ""),
            kind=types.CodeActionKind.QuickFix,
            diagnostics=[diagnostic],
            is_preferred=not unsafe,
            edit=_workspace_edit(uri, source, finding.fix.edits),
        ))
    safe = [e for f in findings if f.fix is not None and f.fix.applicability is Applicability.SAFE
            for e in f.fix.edits]
    if safe:
        actions.append(types.CodeAction(
            title="Fix all inplace-lint findings in file (safe fixes)",
            kind=types.CodeActionKind.SourceFixAll,
            diagnostics=wanted,
            is_preferred=False,
            edit=_workspace_edit(uri, source, safe),
        ))
    return actions


def make_server() -> LanguageServer:
    server = LanguageServer("inplace-lint", __version__, text_document_sync_kind=types.TextDocumentSyncKind.Full)

    def publish(ls: LanguageServer, uri: str) -> None:
        document = ls.workspace.get_text_document(uri)
        path = document.path if uri.startswith("file:") else None
        try:
            diagnostics = diagnostics_for(document.source, path, uri)
        except config.ConfigError as exc:
            ls.window_show_message(types.ShowMessageParams(type=types.MessageType.Error,
                                                           message=f"inplace-lint: {exc}"))
            diagnostics = diagnostics_for(document.source, None, uri)
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
        _RESULTS.clear()  # a save is when users expect a fresh look (other files may have changed too)
        publish(ls, params.text_document.uri)

    @server.feature(types.TEXT_DOCUMENT_DID_CLOSE)
    def did_close(ls: LanguageServer, params: types.DidCloseTextDocumentParams) -> None:
        ls.text_document_publish_diagnostics(
            types.PublishDiagnosticsParams(uri=params.text_document.uri, diagnostics=[]))

    @server.feature(types.TEXT_DOCUMENT_CODE_ACTION,
                    types.CodeActionOptions(code_action_kinds=[types.CodeActionKind.QuickFix,
                                                               types.CodeActionKind.SourceFixAll]))
    def code_action(ls: LanguageServer, params: types.CodeActionParams) -> List[types.CodeAction]:
        try:
            return quick_fixes(ls.workspace.get_text_document(params.text_document.uri), params)
        except config.ConfigError:  # already shown when the diagnostics were published
            return []

    return server


def serve() -> None:
    from .. import pipeline

    pipeline.keep_function_walks(True)  # an edit walks only the functions it changed
    make_server().start_io()
