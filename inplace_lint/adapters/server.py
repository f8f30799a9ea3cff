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

Every request is answered while documents are analysed: checks run in two separate processes (one for
the diagnostics, one for code actions; :class:`Analyser`), never on the event loop, so ``shutdown``, a
hover or a code action on another document is answered at once during a long analysis (``ast.parse``
of a 10 MB buffer holds the GIL for seconds: a thread would not do). A queued check of a document that
changed again is dropped; ``shutdown`` kills an analysis in progress. A request whose params do not
deserialize gets an ``InvalidParams`` error response (:class:`_Protocol`).

A finding whose fix was withdrawn (``Finding.no_fix``: a statement too deep for the rewriter) gets a
disabled action (LSP ``disabled.reason``) that says why, never an error.
"""
from __future__ import annotations

import asyncio
import collections
import multiprocessing
import pathlib
import queue
import threading
from typing import Dict, List, Optional, Sequence, Tuple

import cattrs
from lsprotocol import types
from pygls.exceptions import JsonRpcException
from pygls.lsp.server import LanguageServer
from pygls.protocol import LanguageServerProtocol
from pygls.workspace import TextDocument

from .. import __version__, config, textpos
from ..pipeline import check_source
from ..source.problems import FileResult, Problem
from ..workspace import ProjectMode
from ..findings import Applicability, Finding
from ..source.files import read_source
from .reporters import code_url, level

SOURCE = "inplace-lint"
SEVERITY = {"error": types.DiagnosticSeverity.Error, "warning": types.DiagnosticSeverity.Warning}


def utf16_column(line_text: str, byte_col: int) -> int:
    """LSP's default position encoding (UTF-16 code units) for ``ast``'s UTF-8 byte column."""
    return textpos.utf16_column(line_text, textpos.char_column(line_text, byte_col))


def _other_file_lines(path: str) -> List[str]:
    try:
        return textpos.split_lines(read_source(path))
    except (OSError, SyntaxError, UnicodeDecodeError, LookupError):  # a FIFO is refused, never read
        return []


def to_diagnostic(finding: Finding, lines: Sequence[str], uri: Optional[str] = None) -> types.Diagnostic:
    """One LSP diagnostic (UTF-16 columns); with ``uri``, the finding's related locations as
    ``relatedInformation`` (a location in another file is named by its own URI). A
    :class:`~inplace_lint.source.problems.Problem` (the buffer does not parse) spans the rest of its line."""

    def position(text_lines: Sequence[str], line: int, byte_col: int) -> types.Position:
        text = textpos.line_text(text_lines, line)
        return types.Position(line=max(line - 1, 0), character=utf16_column(text, byte_col))

    def line_end(text_lines: Sequence[str], line: int) -> types.Position:
        text = textpos.line_text(text_lines, line)
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
        code_description=types.CodeDescription(href=code_url(finding.code)) if code_url(finding.code) else None,
        source=SOURCE,
        related_information=related,
    )


#: the last few checks, by (text, path, options): a re-open or a code action request on text that did
#: not change is not analysed again (a save starts afresh)
_RESULTS: "collections.OrderedDict[tuple, FileResult]" = collections.OrderedDict()
_RESULTS_SIZE = 16


def result_for(source: str, path: Optional[str], with_edits: bool = False,
               project: Optional[ProjectMode] = None) -> FileResult:
    """The document's check, with the options of its file (:meth:`config.FileOptions.for_path`: the
    configuration found from its folder upward; defaults without a path); ``with_edits``: each fix carries
    its edits in the config's fix-style; ``project``: the server's mode (with the project's summaries;
    default: the document alone)."""
    opts = config.FileOptions.for_path(path)
    fix_style = opts.fix_style if with_edits else None
    key = (source, path, opts, fix_style, project)
    result = _RESULTS.get(key)
    if result is None:
        result = _RESULTS[key] = check_source(source, path or "<document>", opts.settings, opts.select, opts.ignore,
                                              fix_style=fix_style, target=opts.target, project=project)
        while len(_RESULTS) > _RESULTS_SIZE:
            _RESULTS.popitem(last=False)
    else:
        _RESULTS.move_to_end(key)
    return result


def findings_for(source: str, path: Optional[str], with_edits: bool = False,
                 project: Optional[ProjectMode] = None) -> List[Finding]:
    return result_for(source, path, with_edits, project).findings


def diagnostics_for(source: str, path: Optional[str], uri: Optional[str] = None,
                    project: Optional[ProjectMode] = None) -> List[types.Diagnostic]:
    """The diagnostics of one document; configuration found from ``path`` upward (defaults without a path).
    A document that does not parse gets one ``IPV000`` diagnostic where Python says the error is."""
    lines = textpos.split_lines(source)
    if uri is None and path:
        uri = pathlib.Path(path).as_uri()
    result = result_for(source, path, project=project)
    shown = [result.problem] if result.problem is not None else result.findings
    return [to_diagnostic(f, lines, uri) for f in shown]


def _workspace_edit(uri: str, source: str, edits) -> types.WorkspaceEdit:
    """Edits (character columns) as LSP TextEdits (UTF-16 columns), merged as ``fix`` merges them."""
    from ..fix.edits import merge_edits

    lines = textpos.split_lines(source)

    def position(line: int, col: int) -> types.Position:
        return types.Position(line=line - 1, character=textpos.utf16_column(textpos.line_text(lines, line), col))

    return types.WorkspaceEdit(changes={uri: [
        types.TextEdit(range=types.Range(start=position(e.line, e.col), end=position(e.end_line, e.end_col)),
                       new_text=e.content) for e in merge_edits(edits)]})


def quick_fixes(document: TextDocument, params: types.CodeActionParams,
                project: Optional[ProjectMode] = None) -> List[types.CodeAction]:
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
    lines = textpos.split_lines(source)
    findings = findings_for(source, path, with_edits=True, project=project)
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


def _document_diagnostics(project: Optional[ProjectMode], source: str, path: Optional[str],
                          uri: str) -> Tuple[Optional[str], List[types.Diagnostic]]:
    """What a publish sends: (a configuration error to show, or None; the diagnostics). With a broken
    configuration the document is checked with the defaults."""
    try:
        return None, diagnostics_for(source, path, uri, project)
    except config.ConfigError as exc:
        return f"inplace-lint: {exc}", diagnostics_for(source, None, uri, project)


def _document_actions(project: Optional[ProjectMode], uri: str, source: str,
                      params: types.CodeActionParams) -> List[types.CodeAction]:
    try:
        return quick_fixes(TextDocument(uri, source), params, project)
    except config.ConfigError:  # already shown when the diagnostics were published
        return []


def _clear(project: Optional[ProjectMode]) -> None:
    _RESULTS.clear()


#: what the analysis process does, by name (nothing else can be asked of it); each is called with the
#: server's project mode first
_CALLS = {"diagnostics": _document_diagnostics, "actions": _document_actions, "clear": _clear}


def _analysis_main(conn, project: Optional[ProjectMode] = None) -> None:
    """The analysis process: answers each ``(name, args)`` from :data:`_CALLS` (in the server's
    ``project`` mode) with ``("ok", value)`` or ``("error", text)``, until the server closes the pipe
    (or kills it)."""
    import os
    import sys

    from .. import workspace

    os.dup2(2, 1)  # stdout is the server's LSP stream: nothing printed here may reach it
    sys.stdout = sys.stderr
    workspace.keep_function_walks(True)  # an edit walks only the functions it changed
    while True:
        try:
            name, args = conn.recv()
        except (EOFError, OSError):
            return
        try:
            reply = ("ok", _CALLS[name](project, *args))
        except Exception as exc:  # noqa: BLE001 -- reported to the server, which answers its request
            reply = ("error", f"{type(exc).__name__}: {exc}")
        try:
            conn.send(reply)
        except (EOFError, OSError):
            return
        except Exception as exc:  # noqa: BLE001 -- a value that does not pickle: the request still gets an answer
            conn.send(("error", f"{type(exc).__name__}: {exc}"))


class Analyser:
    """Analysis off the server's event loop: every check runs in one separate process, fed by one thread.

    A thread alone would not do: ``ast.parse`` of a 10 MB buffer holds the GIL for seconds, and nothing
    else in the server runs meanwhile. Here the event loop only queues a job and awaits its future; the
    feeding thread blocks in pipe reads and writes (which release the GIL); the process keeps the
    incremental walks of earlier edits (:func:`inplace_lint.workspace.keep_function_walks`). A job whose
    document changed again before its turn is dropped (``stale``). :meth:`stop` kills the process (a
    ``shutdown`` does not wait for an analysis in progress); a later job starts a new one.
    """

    def __init__(self, project: Optional[ProjectMode] = None) -> None:
        #: the mode every check in the process runs in (handed to it when it starts)
        self.project = project
        self._jobs: queue.Queue = queue.Queue()
        self._proc = None
        self._conn = None
        self._lock = threading.Lock()
        threading.Thread(target=self._feed, name="inplace-lint analyses", daemon=True).start()

    def call(self, name: str, *args, stale=lambda: False) -> asyncio.Future:
        """A future of ``("ok", value)``, ``("error", text)`` or ``("stale", None)`` for ``_CALLS[name](*args)``."""
        loop = asyncio.get_running_loop()
        future = loop.create_future()
        self._jobs.put((name, args, stale, loop, future))
        return future

    def _start(self):
        with self._lock:
            if self._proc is None or not self._proc.is_alive():
                ctx = multiprocessing.get_context("spawn")  # no fork of a process that runs threads
                self._conn, child = ctx.Pipe()
                self._proc = ctx.Process(target=_analysis_main, args=(child, self.project),
                                         name="inplace-lint analysis", daemon=True)
                self._proc.start()
                child.close()
            return self._conn

    def _feed(self) -> None:
        while True:
            name, args, stale, loop, future = self._jobs.get()
            if future.cancelled():
                continue
            if stale():
                reply = ("stale", None)
            else:
                try:
                    conn = self._start()
                    conn.send((name, args))
                    reply = conn.recv()
                except (EOFError, OSError) as exc:  # killed by stop(), or crashed: the next job starts anew
                    reply = ("error", f"the analysis process ended ({type(exc).__name__})")
                except Exception as exc:  # noqa: BLE001 -- this thread must outlive any one job
                    self.stop()  # the pipe may hold half an exchange: start afresh
                    reply = ("error", f"{type(exc).__name__}: {exc}")
            try:
                loop.call_soon_threadsafe(_settle, future, reply)
            except RuntimeError:  # the event loop is closed: the server is exiting
                return

    def stop(self) -> None:
        with self._lock:
            if self._proc is not None and self._proc.is_alive():
                self._proc.kill()
            self._proc = None


def _settle(future, reply) -> None:
    if not future.done():
        future.set_result(reply)


class _Protocol(LanguageServerProtocol):
    """pygls's protocol, answering a request whose params do not deserialize with a JSON-RPC
    ``InvalidParams`` error (pygls logs it and sends nothing: the client would wait forever)."""

    def structure_message(self, data):
        try:
            return super().structure_message(data)
        except JsonRpcException as exc:
            if isinstance(data, dict) and "method" in data and data.get("id") is not None:
                cause = exc.__cause__
                detail = "; ".join(cattrs.transform_error(cause)) if isinstance(cause, cattrs.BaseValidationError) \
                    else str(cause or exc)
                error = type(exc)(message=f"{exc.message}: {data['method']}: {detail}")
                self._send_response(data["id"], None, error.to_response_error())
            raise


def make_server(project: Optional[ProjectMode] = None) -> LanguageServer:
    """The language server; ``project``: the mode its analyses run in (``inplace-lint server``: enabled)."""
    server = LanguageServer("inplace-lint", __version__, text_document_sync_kind=types.TextDocumentSyncKind.Full,
                            protocol_cls=_Protocol)
    # two processes: a code action (small, asked for now) does not wait behind another document's long
    # analysis for its diagnostics
    analyser, fixer = Analyser(project), Analyser(project)
    #: each open document's latest publish: a queued one for an older text is dropped
    latest: Dict[str, object] = {}

    async def publish(ls: LanguageServer, uri: str) -> None:
        document = ls.workspace.get_text_document(uri)
        path = document.path if uri.startswith("file:") else None
        version = document.version  # of the text analysed (the document object is updated in place)
        token = latest[uri] = object()
        reply = await analyser.call("diagnostics", document.source, path, uri, stale=lambda: latest.get(uri) is not token)
        if reply[0] != "ok" or latest.get(uri) is not token:
            if reply[0] == "error":
                ls.window_log_message(types.LogMessageParams(type=types.MessageType.Error,
                                                             message=f"inplace-lint: {reply[1]}"))
            return
        shown, diagnostics = reply[1]
        if shown is not None:
            ls.window_show_message(types.ShowMessageParams(type=types.MessageType.Error, message=shown))
        ls.text_document_publish_diagnostics(
            types.PublishDiagnosticsParams(uri=uri, version=version, diagnostics=diagnostics))

    @server.feature(types.TEXT_DOCUMENT_DID_OPEN)
    async def did_open(ls: LanguageServer, params: types.DidOpenTextDocumentParams) -> None:
        await publish(ls, params.text_document.uri)

    @server.feature(types.TEXT_DOCUMENT_DID_CHANGE)
    async def did_change(ls: LanguageServer, params: types.DidChangeTextDocumentParams) -> None:
        await publish(ls, params.text_document.uri)

    @server.feature(types.TEXT_DOCUMENT_DID_SAVE)
    async def did_save(ls: LanguageServer, params: types.DidSaveTextDocumentParams) -> None:
        for worker in (analyser, fixer):  # a save is when users expect a fresh look (other files may have changed)
            worker.call("clear")
        await publish(ls, params.text_document.uri)

    @server.feature(types.TEXT_DOCUMENT_DID_CLOSE)
    def did_close(ls: LanguageServer, params: types.DidCloseTextDocumentParams) -> None:
        latest.pop(params.text_document.uri, None)  # a queued analysis of it is dropped
        ls.text_document_publish_diagnostics(
            types.PublishDiagnosticsParams(uri=params.text_document.uri, diagnostics=[]))

    @server.feature(types.TEXT_DOCUMENT_CODE_ACTION,
                    types.CodeActionOptions(code_action_kinds=[types.CodeActionKind.QuickFix,
                                                               types.CodeActionKind.SourceFixAll]))
    async def code_action(ls: LanguageServer, params: types.CodeActionParams) -> List[types.CodeAction]:
        if not any(d.source == SOURCE for d in params.context.diagnostics):
            return []
        document = ls.workspace.get_text_document(params.text_document.uri)
        reply = await fixer.call("actions", document.uri, document.source, params)
        return reply[1] if reply[0] == "ok" else []

    @server.feature(types.INITIALIZED)
    def initialized(ls: LanguageServer, params: types.InitializedParams) -> None:
        for worker in (analyser, fixer):  # start both processes now, not at the first document
            worker.call("clear")

    @server.feature(types.SHUTDOWN)
    def shutdown(ls: LanguageServer, params: None) -> None:
        for worker in (analyser, fixer):  # an analysis in progress is abandoned, not waited for
            worker.stop()

    return server


def serve(project: Optional[ProjectMode] = None) -> None:
    make_server(project).start_io()
