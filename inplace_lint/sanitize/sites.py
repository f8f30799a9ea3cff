"""Where in the user's code a write happened: the first frame outside torch and inplace-lint, and its text."""
from __future__ import annotations

import dataclasses
import dis
import itertools
import linecache
import os
import sys
from typing import Any, Dict, Optional, Tuple

import torch

_SKIP_DIRS = (
    os.path.dirname(os.path.abspath(torch.__file__)) + os.sep,
    os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep,  # inplace_lint/
)
_AUG_BINARY_OPS = {i: sym for i, (_, sym) in enumerate(getattr(dis, "_nb_ops", ())) if sym.endswith("=")}
_BINARY_OP = dis.opmap.get("BINARY_OP", -1)
#: Python 3.10: one opcode per augmented operator
_INPLACE_OPCODES = {dis.opmap[name]: sym for name, sym in {
    "INPLACE_ADD": "+=", "INPLACE_SUBTRACT": "-=", "INPLACE_MULTIPLY": "*=", "INPLACE_TRUE_DIVIDE": "/=",
    "INPLACE_FLOOR_DIVIDE": "//=", "INPLACE_MODULO": "%=", "INPLACE_POWER": "**=", "INPLACE_AND": "&=",
    "INPLACE_OR": "|=", "INPLACE_XOR": "^=", "INPLACE_LSHIFT": "<<=", "INPLACE_RSHIFT": ">>=",
    "INPLACE_MATRIX_MULTIPLY": "@="}.items() if name in dis.opmap}


@dataclasses.dataclass(frozen=True)
class Site:
    path: str
    line: int
    col: int
    end_line: int
    end_col: int
    augmented: str = ""  # the operator, when the instruction is an augmented assignment


_SITES: Dict[Tuple[Any, int], Site] = {}


def user_site() -> Optional[Site]:
    """The first frame outside torch and inplace-lint: its file, and the span of its current instruction."""
    frame = sys._getframe(1)
    while frame is not None and frame.f_code.co_filename.startswith(_SKIP_DIRS):
        frame = frame.f_back
    if frame is None:
        return None
    code, lasti = frame.f_code, frame.f_lasti
    site = _SITES.get((code, lasti))
    if site is None:
        line, end_line, col, end_col = frame.f_lineno, None, None, None
        positions = getattr(code, "co_positions", None)
        if positions is not None and lasti >= 0:
            found = next(itertools.islice(positions(), lasti // 2, None), None)
            if found is not None and found[0] is not None:
                line, end_line, col, end_col = found
        augmented = ""
        if 0 <= lasti < len(code.co_code) - 1:
            opcode = code.co_code[lasti]
            augmented = _AUG_BINARY_OPS.get(code.co_code[lasti + 1], "") if opcode == _BINARY_OP else \
                _INPLACE_OPCODES.get(opcode, "")
        path = code.co_filename if code.co_filename.startswith("<") else os.path.abspath(code.co_filename)
        site = Site(path, line, col or 0, end_line or line, end_col if end_col is not None else (col or 0),
                    augmented)
        if len(_SITES) < 100_000:
            _SITES[(code, lasti)] = site
    return site


def source_text(site: Site) -> str:
    text = linecache.getline(site.path, site.line)
    if not text:
        return ""
    raw = text.encode("utf-8")
    end = site.end_col if site.end_line == site.line and site.end_col > site.col else len(raw)
    snippet = raw[site.col:end].decode("utf-8", errors="replace").strip()
    return snippet if len(snippet) <= 80 else snippet[:77] + "..."
