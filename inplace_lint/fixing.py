"""The fix use case: check a file, apply its advertised edits, re-parse, and write atomically
(``fix_code``, ``fix_file``, ``fix_one``, :func:`atomic_write`)."""
from __future__ import annotations

import ast
import io
import os
import tempfile
import tokenize
from dataclasses import dataclass, field
from typing import List, Optional, Sequence, Tuple

from . import floor
from .config import DEFAULT_SETTINGS, Settings
from .findings import Applicability, Edit, Finding
from .fix.attach import STYLES, attach_edits
from .fix.edits import apply_edits, merge_edits
from .fix.imports import imports_runtime
from .pipeline import check_source
from .source.problems import decode_problem
from .source.files import read_bytes


@dataclass
class FixResult:
    """What ``fix`` did to one file. ``new_source`` is None when nothing changed."""

    path: str
    applied: List[Finding] = field(default_factory=list)
    unsafe_skipped: List[Finding] = field(default_factory=list)
    #: findings with no correct out-of-place form (or one this file's layout does not allow)
    unfixed: List[Finding] = field(default_factory=list)
    new_source: Optional[str] = None
    old_source: Optional[str] = None
    error: Optional[str] = None
    written: bool = False
    #: the edits applied (merged, in source order)
    edits: List[Edit] = field(default_factory=list)
    #: the rewrite adds the file's first import of ``inplace_lint.runtime`` (a new dependency)
    adds_runtime_import: bool = False
    #: the floor the rewrite was written for (:mod:`inplace_lint.floor`)
    floor: Optional[object] = None

    @property
    def remaining(self) -> List[Finding]:
        """The findings left, in source order (an unsafe fix skipped and one with none, mixed as the file has them)."""
        return sorted(self.unsafe_skipped + self.unfixed, key=lambda f: (f.line, f.col, f.code))



def _applicable(finding: Finding, unsafe_fixes: bool) -> bool:
    return finding.fix is not None and bool(finding.fix.edits) and \
        (unsafe_fixes or finding.fix.applicability is Applicability.SAFE)


def fix_findings(source: str, result: FixResult, findings: Sequence[Finding], unsafe_fixes: bool,
                 python_floor: Optional[Tuple[int, int]] = None) -> None:
    """Apply the edits of the applicable ``findings`` (with edits attached) to ``source``: sets
    ``result.applied`` / ``unsafe_skipped`` / ``unfixed`` and ``new_source`` (None when unchanged).

    The result is re-parsed, with the grammar of ``python_floor`` (the project's oldest Python) when
    the original parses with it: a rewrite never needs a newer Python than the code it rewrites."""
    todo: List[Finding] = []
    for finding in findings:
        if _applicable(finding, unsafe_fixes):
            todo.append(finding)
        elif finding.fix is None:
            result.unfixed.append(finding)
        else:
            result.unsafe_skipped.append(finding)
    if not todo:
        return
    try:
        edits = merge_edits(e for f in todo for e in f.fix.edits)
        new = apply_edits(source, edits)
        ast.parse(new)  # a rewrite is re-parsed before anyone sees it
        version = python_floor if python_floor is not None and python_floor >= (3, 7) else None
        if version is not None:
            try:
                ast.parse(source, feature_version=version)
            except SyntaxError:
                version = None  # the original already needs a newer Python than the stated floor
        if version is not None:
            ast.parse(new, feature_version=version)
    except (SyntaxError, ValueError, RecursionError) as exc:  # pragma: no cover - a bug in the codemod
        result.error = f"internal error: the rewrite does not apply or parse ({exc}); file left unchanged"
        return
    result.applied.extend(todo)
    if new != source:
        result.new_source = new
        result.edits = edits
        result.adds_runtime_import = imports_runtime(new) and not imports_runtime(source)



def fix_code(source: str, path: str = "<string>", *, settings: Settings = DEFAULT_SETTINGS, style: str = STYLES[0],
             unsafe_fixes: bool = False, select: Sequence[str] = (), ignore: Sequence[str] = (),
             memory_aware: bool = False,
             target: Tuple[Optional[Tuple[int, int]], Optional[Tuple[int, int]]] = (None, None),
             project=None) -> FixResult:
    """Fix ``source`` (text); ``result.new_source`` is the rewritten text, or None when unchanged.

    ``target``: (Python, torch) versions overriding the floor of the project ``path`` is in
    (:mod:`inplace_lint.floor`; ``--target-version`` / ``--torch-version``). ``project``: a
    :class:`~inplace_lint.workspace.ProjectMode` (see :func:`inplace_lint.pipeline.check_source`)."""
    result = FixResult(path, old_source=source)
    result.floor = stated = floor.for_path(path).override(*target)
    checked = check_source(source, path, settings, select, ignore, target=(stated.python, stated.torch),
                           project=project)
    if checked.error:
        result.error = checked.error
        return result
    findings = checked.findings
    if any(f.fix is not None for f in findings):  # the style goes to the printers, not through the check
        findings = attach_edits(source, ast.parse(source, filename=path), findings, style, memory_aware, stated.torch)
    fix_findings(source, result, findings, unsafe_fixes, stated.python)
    return result


def fix_file(path: str, *, settings: Settings = DEFAULT_SETTINGS, style: str = STYLES[0], unsafe_fixes: bool = False,
             select: Sequence[str] = (), ignore: Sequence[str] = (), write: bool = True,
             memory_aware: bool = False,
             target: Tuple[Optional[Tuple[int, int]], Optional[Tuple[int, int]]] = (None, None),
             project=None) -> FixResult:
    """Fix one file in place (atomically: temp file + rename; a symlink keeps pointing at its target,
    which is rewritten; a file with other hard links is overwritten on its own inode, so every link reads
    the fixed text: :func:`atomic_write`); encoding, BOM and newlines are kept.

    A file that cannot be read or parsed is reported in ``result.error`` and left untouched; one that
    cannot be written too (``cannot write: ...``, nothing counted as applied).
    """
    result = FixResult(path)
    try:
        raw = read_bytes(path)  # a FIFO or device is refused, never read
    except OSError as exc:  # the words check uses for it (IPV000 cannot read: ...)
        result.error = f"cannot read: {exc.strerror or exc}"
        return result
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(raw).readline)
        source = raw.decode(encoding)
    except (UnicodeDecodeError, LookupError, SyntaxError) as exc:  # the same words as check's IPV000
        problem = decode_problem(exc, raw)
        result.error = f"{problem.message} (line {problem.line}, column {problem.col + 1})"
        return result
    fixed = fix_code(source, path, settings=settings, style=style, unsafe_fixes=unsafe_fixes, select=select,
                     ignore=ignore, memory_aware=memory_aware, target=target, project=project)
    fixed.old_source = source
    if fixed.new_source is not None and write:
        try:
            atomic_write(path, fixed.new_source.encode(encoding))
        except OSError as exc:
            fixed.error = f"cannot write: {exc}"
            fixed.new_source, fixed.applied = None, []
            return fixed
        fixed.written = True
    return fixed


def fix_one(source: str, path: str, finding: Finding, *, settings: Settings = DEFAULT_SETTINGS,
            style: str = STYLES[0], select: Sequence[str] = (), ignore: Sequence[str] = ()) -> Optional[str]:
    """``source`` with ``finding``'s advertised edits applied (safe or not: the caller asked for this
    one), or None when it has none. ``finding`` must carry its edits (``check_source(fix_style=...)``)."""
    if finding.fix is None or not finding.fix.edits:
        return None
    return apply_edits(source, finding.fix.edits)


def atomic_write(path: str, data: bytes) -> None:
    """Replace the contents of ``path`` by ``data`` via a temp file and a rename in the same folder.
    A symlink is resolved first: its target is written (once, even when several links or the target
    itself are fixed in one run, since the second run finds nothing to fix) and the link stays a link.

    A file with other hard links (``st_nlink > 1``) is written in place instead (:func:`write_in_place`):
    a rename would give ``path`` a new inode and leave the other names on the unfixed text."""
    path = os.path.realpath(path)
    if os.stat(path).st_nlink > 1:
        write_in_place(path, data)
        return
    folder = os.path.dirname(path)
    fd, tmp = tempfile.mkstemp(dir=folder, prefix=".inplace-lint-", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        try:
            os.chmod(tmp, os.stat(path).st_mode & 0o7777)
        except OSError:
            pass
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def write_in_place(path: str, data: bytes) -> None:
    """Overwrite ``path``'s own inode with ``data`` (every hard link then reads the new text; inode, owner,
    mode and links are kept).

    The new text is first written in full to a temp file beside it and flushed to disk (so the space is
    there and a copy exists), then written over the file in one ``write`` and truncated, flushed, and the
    temp file removed. The crash window: a crash (power loss, ``kill -9``) during that one overwrite can
    leave the file part new, part old; the temp file ``.inplace-lint-*.tmp`` beside it then holds the
    whole new text. A file that cannot be opened for writing raises ``OSError`` with nothing written; an
    error while overwriting raises ``OSError`` naming the temp file, which is kept."""
    folder = os.path.dirname(path)
    fd, tmp = tempfile.mkstemp(dir=folder, prefix=".inplace-lint-", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
    except BaseException:
        os.unlink(tmp)
        raise
    try:
        fh = open(path, "r+b")
    except BaseException:  # not writable: nothing was written
        os.unlink(tmp)
        raise
    with fh:
        try:
            fh.write(data)
            fh.truncate()
            fh.flush()
            os.fsync(fh.fileno())
        except OSError as exc:
            raise OSError(exc.errno, f"{exc.strerror or exc}: {path} may be part written; "
                                     f"its fixed text is in {tmp}") from exc
    os.unlink(tmp)

