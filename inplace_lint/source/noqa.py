"""``# noqa`` handling identical to flake8's, so the CLI and the plugin suppress the same findings.

It reuses flake8's own regular expressions (``flake8.defaults``) and mirrors its
line mapping (``flake8.processor.FileProcessor._noqa_line_mapping``): a comment
anywhere in a multi-line logical line (a call spread over lines, a triple-quoted
string) applies to every line of it. Codes match by prefix (``# noqa: IPV``
covers every IPV code). Text after the codes is a free-form reason:
``x.div_(t)  # noqa: IPV001 -- keep in place, a copy costs 20 GB``.
"""
from __future__ import annotations

import io
import tokenize
from typing import Dict, Iterable, List, Optional, Sequence, Tuple

from flake8 import defaults, utils

from .. import textpos


def line_mapping(lines: Sequence[str]) -> Dict[int, str]:
    """Map each 1-based line number to the text searched for ``# noqa`` (its whole logical line)."""
    mapping: Dict[int, str] = {}
    min_line, max_line = len(lines) + 2, -1
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO("".join(lines)).readline))
    except (tokenize.TokenError, SyntaxError):
        return mapping
    for tp, _, (s_line, _), (e_line, _), _ in tokens:
        if tp in (tokenize.ENDMARKER, tokenize.DEDENT):
            continue
        min_line, max_line = min(min_line, s_line), max(max_line, e_line)
        if tp in (tokenize.NL, tokenize.NEWLINE):
            joined = "".join(lines[min_line - 1:max_line])
            for n in range(min_line, max_line + 1):
                mapping[n] = joined
            min_line, max_line = len(lines) + 2, -1
    return mapping


def file_is_exempt(lines: Sequence[str]) -> bool:
    """``# flake8: noqa`` on a line of its own exempts the whole file (flake8's rule)."""
    return any(defaults.NOQA_FILE.match(line) for line in lines)


def suppressed(code: str, line: int, mapping: Dict[int, str], lines: Sequence[str]) -> bool:
    """True when a ``# noqa`` comment covering ``line`` names ``code`` (or a prefix of it) or no code."""
    text: Optional[str] = mapping.get(line)
    if text is None:
        text = lines[line - 1] if 0 < line <= len(lines) else ""
    match = defaults.NOQA_INLINE_REGEXP.search(text)
    if match is None:
        return False
    codes_str = match.groupdict()["codes"]
    if codes_str is None:
        return True
    codes = set(utils.parse_comma_separated_list(codes_str))
    return code in codes or code.startswith(tuple(codes))


def _noqa_line(line: int, string_spans: Sequence[Tuple[int, int]]) -> int:
    """The line a ``# noqa`` for ``line`` goes on: the last line of a multi-line string that spans it
    (a comment cannot go inside the string), else ``line`` itself."""
    for start, end in string_spans:
        if start <= line < end:
            return end
    return line


def add_noqa(source: str, findings: Iterable) -> Tuple[str, int]:
    """``source`` with ``# noqa: CODE`` added for each finding (ruff's ``--add-noqa``): appended to a
    ``# noqa: ...`` already on the line (its codes and any reason kept), else a new comment at the end of
    the line; a line whose comment already covers the code (or a bare ``# noqa``) is left alone. Returns
    the new text and the number of lines changed (0: nothing to add, so a second run changes nothing)."""
    lines = textpos.split_lines(source)  # as ast numbers lines (a form feed does not end one)
    spans: List[Tuple[int, int]] = []
    try:
        for tok in tokenize.generate_tokens(io.StringIO(source).readline):
            if tok.type == tokenize.STRING and tok.end[0] > tok.start[0]:
                spans.append((tok.start[0], tok.end[0]))
    except (tokenize.TokenError, SyntaxError):
        pass
    wanted: Dict[int, List[str]] = {}
    for f in findings:
        where = _noqa_line(f.line, spans)
        while 0 < where < len(lines) and lines[where - 1].rstrip("\r\n").endswith("\\"):
            where = _noqa_line(where + 1, spans)  # no comment after a line continuation: on the line it continues to
        if f.code not in wanted.setdefault(where, []):
            wanted[where].append(f.code)
    changed = 0
    for number, codes in sorted(wanted.items()):
        if not 0 < number <= len(lines):
            continue
        text = lines[number - 1]
        body = text.rstrip("\r\n")
        newline = text[len(body):]
        match = defaults.NOQA_INLINE_REGEXP.search(body)
        if match is not None and match.groupdict()["codes"] is None:
            continue  # a bare `# noqa` covers every code
        if match is not None:
            have = utils.parse_comma_separated_list(match.groupdict()["codes"])
            add = [c for c in codes if not (c in have or c.startswith(tuple(have)))]
            if not add:
                continue
            end = match.start("codes") + len(match.group("codes").rstrip())
            body = body[:end] + ", " + ", ".join(add) + body[end:]
        else:
            body = body.rstrip() + "  # noqa: " + ", ".join(codes)
        lines[number - 1] = body + newline
        changed += 1
    return "".join(lines), changed
