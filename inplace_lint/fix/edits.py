"""Edit algebra: apply and merge :class:`~inplace_lint.findings.Edit` lists, and a unified diff built from them."""
from __future__ import annotations

import dataclasses
import re
from typing import Dict, Iterable, List, Optional, Sequence, Set, Tuple

from .. import textpos
from ..findings import Edit


def apply_edits(source: str, edits: Iterable[Edit]) -> str:
    """``source`` with ``edits`` applied (lines 1-based, character columns 0-based).

    Identical edits (two findings sharing an import or a statement) count once; insertions at one
    point (imports) are merged into one import block (:func:`merge_edits`). Overlapping
    replacements raise ``ValueError``.
    """
    lines = textpos.split_lines(source)
    starts = textpos.offsets(lines)

    def offset(line: int, col: int) -> int:
        if line > len(lines):
            return len(source)
        return starts[line - 1] + col

    out: List[str] = []
    pos = 0
    for edit in merge_edits(edits):
        start, end = offset(edit.line, edit.col), offset(edit.end_line, edit.end_col)
        if start < pos:
            raise ValueError(f"overlapping edits at line {edit.line}")
        out.append(source[pos:start])
        out.append(edit.content)
        pos = end
    out.append(source[pos:])
    return "".join(out)


def merge_edits(edits: Iterable[Edit]) -> List[Edit]:
    """Edits in source order, duplicates dropped, insertions at one point merged into one import
    block: the import lines of all of them, sorted, then the widest separator."""
    unique = sorted(set(edits), key=lambda e: (e.line, e.col, e.end_line, e.end_col, e.content))
    merged: List[Edit] = []
    for edit in unique:
        prev = merged[-1] if merged else None
        if prev is not None and _is_insertion(prev) and _is_insertion(edit) and \
                (prev.line, prev.col) == (edit.line, edit.col):
            merged[-1] = _merge_imports(prev, edit)
        else:
            merged.append(edit)
    return merged


_FROM_IMPORT = re.compile(r"^from ([\w.]+) import ([\w, ]+)$")


def join_from_imports(lines: List[str]) -> List[str]:
    """``from m import a`` and ``from m import b`` as one ``from m import a, b`` (as libcst's
    ``AddImportsVisitor`` writes them); other statements unchanged. Sorted."""
    names: Dict[str, Set[str]] = {}
    other: List[str] = []
    for line in lines:
        match = _FROM_IMPORT.match(line)
        if match is None:
            other.append(line)
        else:
            names.setdefault(match.group(1), set()).update(n.strip() for n in match.group(2).split(","))
    joined = [f"from {module} import {', '.join(sorted(found, key=lambda n: n.split(' as ')[0]))}"
              for module, found in names.items()]
    return sorted(joined + other)


def _is_insertion(edit: Edit) -> bool:
    return (edit.line, edit.col) == (edit.end_line, edit.end_col)


def _merge_imports(a: Edit, b: Edit) -> Edit:
    def parts(content: str) -> Tuple[str, List[str], str, str]:
        nl = "\r\n" if "\r\n" in content else ("\r" if "\r" in content and "\n" not in content else "\n")
        lead = nl if content.startswith(nl) else ""
        body = content[len(lead):]
        lines: List[str] = []  # one entry per statement: a `try:` import block stays whole
        for ln in body.split(nl):
            if not ln.strip():
                continue
            if lines and (ln[:1] in " \t" or ln.startswith(("except", "else:", "finally:"))):
                lines[-1] += nl + ln
            else:
                lines.append(ln)
        tail = body[len(body.rstrip("\r\n")):]
        return lead, lines, tail, nl

    lead_a, lines_a, tail_a, nl = parts(a.content)
    lead_b, lines_b, tail_b, _ = parts(b.content)
    lines = join_from_imports(sorted(set(lines_a) | set(lines_b)))
    tail = max(tail_a, tail_b, key=len)
    return dataclasses.replace(a, content=(lead_a or lead_b) + nl.join(lines) + tail)



def unified_diff(path: str, source: str, edits: Sequence[Edit], context: int = 3) -> Optional[List[str]]:
    """``difflib.unified_diff``-style lines for ``edits`` applied to ``source``, built from the edits
    themselves (cost proportional to the change, not to the file: difflib's matcher is slow on a large
    file with thousands of edits)."""
    lines = textpos.split_lines(source)
    changes: List[Tuple[int, int, List[str]]] = []  # old [a, b) -> new lines
    for e in merge_edits(edits):
        a = e.line - 1
        b = e.end_line - 1 if e.end_col == 0 else e.end_line
        if e.col:
            b = max(b, a + 1)
        prefix = lines[a][:e.col] if e.col and a < len(lines) else ""
        suffix = lines[e.end_line - 1][e.end_col:] if e.end_col and e.end_line - 1 < len(lines) else ""
        if changes and changes[-1][1] > a:
            return None  # two edits on one line (not made by this codemod): let difflib do it
        changes.append((a, b, textpos.split_lines(prefix + e.content + suffix)))
    if not changes:
        return []
    out = [f"--- {path}\n", f"+++ {path}\n"]

    def rng(start: int, length: int) -> str:
        return f"{start + 1}" if length == 1 else f"{start if not length else start + 1},{length}"

    delta = 0
    i = 0
    while i < len(changes):
        j = i
        while j + 1 < len(changes) and changes[j + 1][0] - changes[j][1] <= 2 * context:
            j += 1
        lo = max(0, changes[i][0] - context)
        hi = min(len(lines), changes[j][1] + context)
        body: List[str] = []
        pos = lo
        new_len = 0
        for a, b, new in changes[i:j + 1]:
            body += [" " + ln for ln in lines[pos:a]]
            body += ["-" + ln for ln in lines[a:b]]
            body += ["+" + ln for ln in new]
            new_len += (a - pos) + len(new)
            pos = b
        body += [" " + ln for ln in lines[pos:hi]]
        new_len += hi - pos
        old_len = hi - lo
        new_start = lo + delta
        out.append(f"@@ -{rng(lo, old_len)} +{rng(new_start, new_len)} @@\n")
        out += body
        delta += sum(len(new) - (b - a) for a, b, new in changes[i:j + 1])
        i = j + 1
    return out

