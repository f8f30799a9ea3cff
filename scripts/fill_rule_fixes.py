"""Fill each INVALID example's expected ``fix=`` in inplace_lint/rules/ from what the codemod makes now.

Run after a deliberate change to the codemod, then READ the diff: the expected rewrites are the
rule's documented promise (``tests/test_rule_examples.py`` checks them). ``--keep CODE:INDEX`` leaves
an example as it is (e.g. one whose correct answer is "no fix" while the codemod still offers one).
"""
from __future__ import annotations

import argparse
import pathlib
import re
import sys
import textwrap

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from inplace_lint.fixing import fix_code  # noqa: E402
from inplace_lint.rules import RULES, _REGISTRY  # noqa: E402

FIX = re.compile(r"( +)fix=(None|\"\"\"\n.*?\"\"\"),\n", re.S)


def render(text, indent: str) -> str:
    if text is None:
        return f"{indent}fix=None,\n"
    body = textwrap.indent(text, indent + "    ")
    return f'{indent}fix="""\n{body}{indent}    """,\n'


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--keep", action="append", default=[])
    args = parser.parse_args()
    for module in _REGISTRY:
        path = ROOT / "inplace_lint" / "rules" / f"{module}.py"
        rule = next(r for r in RULES.values() if f"{r.code.lower()}_" in module)
        text, count = path.read_text(), 0
        out, pos = [], 0
        for match, example in zip(FIX.finditer(text), rule.invalid):
            out.append(text[pos:match.start()])
            if f"{rule.code}:{count}" in args.keep:
                out.append(match.group(0))
            else:
                result = fix_code(example.source, unsafe_fixes=True)
                out.append(render(result.new_source, match.group(1)))
            pos, count = match.end(), count + 1
        out.append(text[pos:])
        path.write_text("".join(out))


if __name__ == "__main__":
    main()
