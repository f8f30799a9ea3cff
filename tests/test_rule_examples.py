"""Every rule's executable examples (``invalid`` / ``valid`` in its module) run as tests.

Also the check the docs promise: every Example printed by ``inplace-lint rule --all`` is reported with
its rule's code, and every "Use instead" block is clean, through the real CLI.
"""
from __future__ import annotations

import json
import re
import textwrap

import pytest

from inplace_lint.adapters.cli import main
from inplace_lint.analysis import analyze_source
from inplace_lint.fixing import fix_code
from inplace_lint.rules import RULES

INVALID = [(code, i, ex) for code, rule in RULES.items() for i, ex in enumerate(rule.invalid)]
VALID = [(code, i, src) for code, rule in RULES.items() for i, src in enumerate(rule.valid)]


@pytest.mark.parametrize("code, index, example", INVALID, ids=[f"{c}-invalid{i}" for c, i, _ in INVALID])
def test_invalid_example_is_reported_with_its_message_and_fix(code, index, example):
    findings = analyze_source(example.source)
    assert [f.code for f in findings] == [code], findings
    assert example.message in findings[0].message
    result = fix_code(example.source, unsafe_fixes=True)
    fixed = result.new_source if result.new_source is not None else example.source
    assert fixed == (example.fixed if example.fixed is not None else example.source)


@pytest.mark.parametrize("code, index, source", VALID, ids=[f"{c}-valid{i}" for c, i, _ in VALID])
def test_valid_example_is_clean(code, index, source):
    assert analyze_source(textwrap.dedent(source)) == []


def test_rule_all_examples_are_reported_and_use_instead_is_clean(tmp_path, capsys):
    assert main(["rule", "--all"]) == 0
    pages = capsys.readouterr().out
    found = re.findall(r"^# (IPV\d{3}) .*?^## Example\n\n```python\n(.*?)```\n\n## Use instead\n\n```python\n(.*?)```",
                       pages, flags=re.M | re.S)
    assert [code for code, _, _ in found] == list(RULES)
    for code, example, use_instead in found:
        bad, good = tmp_path / f"{code}_example.py", tmp_path / f"{code}_use_instead.py"
        bad.write_text(example)
        good.write_text(use_instead)
        assert main(["check", "--format", "json", str(bad)]) == 1
        items = json.loads(capsys.readouterr().out)
        assert [item["code"] for item in items] == [code]
        assert main(["check", str(good)]) == 0, capsys.readouterr().out
        capsys.readouterr()
