"""Whole-line edits in awkward layouts: tabs, CRLF, no final newline, docstring and __future__ import,
a decorated first statement, a name clash with ``out_of_place``, nested writes, multi-line calls,
backslash continuations, match cases. Exact text, and a second run changes nothing."""
from __future__ import annotations

import sys

import pytest

from inplace_lint.fixing import fix_code

IMPORT = "from inplace_lint.runtime import out_of_place\n"
BODY = "    x = model(h).logits.squeeze(0)\n"

CASES = [
    ("import torch\n\ndef f(model, h, t):\n\tx = model(h).logits.squeeze(0)\n\tif t:\n\t\tx.div_(t)\n\tx /= 2\n\treturn x\n",
     "import torch\nfrom inplace_lint.runtime import out_of_place, scale_logits\n\ndef f(model, h, t):\n"
     "\tx = model(h).logits.squeeze(0)\n\tif t:\n"
     '\t\tx = out_of_place(x, "div_", t)\n\tx = scale_logits(x, 2, inplace="auto")\n\treturn x\n'),
    ("def f(model, h, t):\r\n" + BODY.replace("\n", "\r\n") + "    if t: x.div_(t)\r\n    return x\r\n",
     IMPORT.replace("\n", "\r\n") + "\r\ndef f(model, h, t):\r\n" + BODY.replace("\n", "\r\n")
     + '    if t:\r\n        x = out_of_place(x, "div_", t)\r\n    return x\r\n'),
    ("def f(model, h, t):\n" + BODY + "    x.div_(t)",
     IMPORT + "\ndef f(model, h, t):\n" + BODY + '    x = out_of_place(x, "div_", t)'),
    ('"""Doc."""\nfrom __future__ import annotations\n# c\ndef f(model, h, t):\n' + BODY + "    x.div_(t)\n",
     '"""Doc."""\nfrom __future__ import annotations\n' + IMPORT + '\n# c\ndef f(model, h, t):\n' + BODY
     + '    x = out_of_place(x, "div_", t)\n'),
    ("@dec\ndef f(model, h, t):\n" + BODY + "    x.mul_(t)\n",
     IMPORT + "\n@dec\ndef f(model, h, t):\n" + BODY + '    x = out_of_place(x, "mul_", t)\n'),
    ("out_of_place = 3\ndef f(model, h, t):\n" + BODY + "    x.div_(t)\n",
     "from inplace_lint.runtime import out_of_place as _out_of_place\n\nout_of_place = 3\ndef f(model, h, t):\n"
     + BODY + '    x = _out_of_place(x, "div_", t)\n'),
    ("def f(model, h, t):\n" + BODY + "    y = model(h).logits.squeeze(0)\n    x.div_(y.mul_(2))\n",
     IMPORT + "\ndef f(model, h, t):\n" + BODY + "    y = model(h).logits.squeeze(0)\n"
     '    y = out_of_place(y, "mul_", 2)\n    x = out_of_place(x, "div_", y)\n'),
    ("def f(model, h, t):\n" + BODY + "    x.add_(\n        t,\n        alpha=2)\n",
     IMPORT + "\ndef f(model, h, t):\n" + BODY + '    x = out_of_place(\n        x, "add_", t,\n        alpha=2)\n'),
    ("def f(model, h, t):\n" + BODY + "    x.div_(t + \\\n           1)\n",
     IMPORT + "\ndef f(model, h, t):\n" + BODY + '    x = out_of_place(x, "div_", t + \\\n           1)\n'),
    pytest.param("def f(model, h, t, k):\n" + BODY + "    match k:\n        case 1: x.div_(t)\n",
                 IMPORT + "\ndef f(model, h, t, k):\n" + BODY + '    match k:\n        case 1:\n'
                 '            x = out_of_place(x, "div_", t)\n',
                 marks=pytest.mark.skipif(sys.version_info < (3, 10), reason="match needs Python 3.10")),
]


@pytest.mark.parametrize("source, expected", CASES)
def test_layout(source, expected):
    result = fix_code(source, style="runtime")
    assert result.error is None and result.new_source == expected
    assert fix_code(expected, style="runtime").new_source is None


def test_crlf_inline_guard_keeps_crlf():
    source = "def f(model, h, t):\r\n" + BODY.replace("\n", "\r\n") + "    if t: x.div_(t)\r\n    return x\r\n"
    new = fix_code(source, style="inline").new_source
    assert "\n" not in new.replace("\r\n", "")
    assert ("    if t:\r\n        if isinstance(x, DTensor) and not isinstance(t, DTensor) and getattr(t, \"ndim\", 0) > 0:\r\n"
            "            x = x.full_tensor()\r\n        x = x.clone().div_(t)\r\n") in new


def _patch(source, diff):
    """Apply a unified diff (as produced by difflib) to ``source``."""
    import re

    lines = source.splitlines(keepends=True)
    out, pos = [], 0
    for i, line in enumerate(diff):
        m = re.match(r"@@ -(\d+)(?:,(\d+))? \+\d+(?:,\d+)? @@", line)
        if not m:
            continue
        start = int(m.group(1)) - (0 if m.group(2) != "0" else -1) - 1
        out += lines[pos:start]
        pos = start
        for body in diff[i + 1:]:
            if body.startswith("@@"):
                break
            if body[0] in " -":
                assert lines[pos] == body[1:]
                pos += 1
            if body[0] in " +":
                out.append(body[1:])
    return "".join(out + lines[pos:])


@pytest.mark.parametrize("source, expected", CASES[:2] + CASES[3:])
def test_diff_from_edits_applies_and_matches_difflib_line_counts(source, expected):
    import difflib

    from inplace_lint.fix.edits import unified_diff

    result = fix_code(source, style="runtime")
    diff = unified_diff("m.py", source, result.edits)
    assert _patch(source, diff) == expected
    reference = list(difflib.unified_diff(source.splitlines(keepends=True), expected.splitlines(keepends=True),
                                          fromfile="m.py", tofile="m.py"))
    assert sum(d.startswith("+") for d in diff) >= sum(d.startswith("+") for d in reference)
