"""Scaffold a new rule: ``python scripts/add_rule.py IPV007 inplace-on-something "One-line summary."``

Writes ``inplace_lint/rules/ipv007_inplace_on_something.py`` (the rule's whole story, with TODOs),
adds its line to the registry in ``inplace_lint/rules/__init__.py`` (before IPV001, the least
certain rule, which is where most new rules belong; move it if yours is less certain) and creates
``fixtures/detect/IPV007/example.py``. Then fill in the predicate, the docs and the examples, run
``python scripts/fill_rule_fixes.py`` and ``python scripts/document_rules.py`` and the tests. See
CONTRIBUTING.md.
"""
from __future__ import annotations

import argparse
import pathlib
import re
import sys

ROOT = pathlib.Path(__file__).resolve().parents[1]
RULES_DIR = ROOT / "inplace_lint" / "rules"

TEMPLATE = '''"""{code}: {summary}"""
from ..findings import Origin
from .base import Example, Rule, Write


def applies(origin: Origin, write: Write) -> bool:
    # TODO: when is a write to a tensor with this origin this rule's business? Cite the fact it rests
    # on (docs/pytorch-facts.md#...).
    return False


RULE = Rule(
    code="{code}",
    name="{name}",
    severity="warning",
    summary="{summary}",
    applies=applies,
    what="TODO: what it finds.",
    why="TODO: what PyTorch does (the exact error, or the silent effect), with its source.",
    fix_safety="TODO: when the fix is safe.",
    references="TODO: PyTorch doc page, issue or PR; docs/pytorch-facts.md#...",
    invalid=(
        Example(
            """
            def f(x):
                x.mul_(2)  # TODO: the smallest realistic code this rule reports
            """,
            message="TODO: a fragment of the expected message",
            fix=None,
        ),
    ),
    valid=(
        """
        def f(x):
            return x * 2  # TODO: what to write instead
        """,
    ),
)
'''

FIXTURE = '''"""{code} detection fixture: each reported line carries ``# expect: {code}:COL`` (1-based column)."""


def f(x):
    x.mul_(2)  # TODO: a real case, then  # expect: {code}:5
'''


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("code", help="IPVnnn, not used yet")
    parser.add_argument("name", help="kebab-case name, e.g. inplace-on-leaf-parameter")
    parser.add_argument("summary", help="one sentence")
    args = parser.parse_args(argv)
    if not re.fullmatch(r"IPV\d{3}", args.code):
        parser.error(f"code must look like IPV007, got {args.code!r}")
    if not re.fullmatch(r"[a-z][a-z0-9-]*", args.name):
        parser.error(f"name must be kebab-case, got {args.name!r}")
    module = f"{args.code.lower()}_{args.name.replace('-', '_')}"
    path = RULES_DIR / f"{module}.py"
    registry = RULES_DIR / "__init__.py"
    text = registry.read_text(encoding="utf-8")
    if args.code.lower() + "_" in text or path.exists():
        parser.error(f"{args.code} already exists")
    anchor = '    "ipv001_model_output",\n'
    if anchor not in text:
        parser.error("the registry in inplace_lint/rules/__init__.py has no IPV001 line to insert before")
    path.write_text(TEMPLATE.format(code=args.code, name=args.name, summary=args.summary), encoding="utf-8")
    registry.write_text(text.replace(anchor, f'    "{module}",\n' + anchor), encoding="utf-8")
    fixture = ROOT / "fixtures" / "detect" / args.code / "example.py"
    fixture.parent.mkdir(parents=True, exist_ok=True)
    fixture.write_text(FIXTURE.format(code=args.code), encoding="utf-8")
    for written in (path, registry, fixture):
        print(f"wrote {written.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
