"""Rule docs: ``inplace-lint rule``, and docs/rules.md + the README table generated from the rules."""
from __future__ import annotations

import re
import subprocess
import sys

import pytest

from inplace_lint.rules import docs as ruledocs
from inplace_lint.adapters.cli import main
from inplace_lint.rules import RULES, url


def test_generated_docs_are_up_to_date(root):
    old = [str(p.relative_to(root)) for p in ruledocs.stale(root)]
    assert not old, f"{', '.join(old)} out of date with inplace_lint/rules/; run: python scripts/document_rules.py"


def test_every_rule_url_has_its_anchor(root):
    page = (root / "docs" / "rules.md").read_text(encoding="utf-8")
    anchors = re.findall(r'<a id="([^"]+)"></a>', page)
    assert anchors == [code.lower() for code in RULES]
    assert [ruledocs.anchor(code) for code in RULES] == anchors
    for code in RULES:  # the anchor is right above the rule's heading
        assert f'<a id="{code.lower()}"></a>\n\n## {code} ({RULES[code].name})\n' in page


def test_stale_readme_is_detected_and_rewritten(tmp_path):
    (tmp_path / "README.md").write_text(
        f"intro\n{ruledocs.TABLE_START}\n| old | table |\n{ruledocs.TABLE_END}\nrest\n")
    assert sorted(p.name for p in ruledocs.stale(tmp_path)) == ["README.md", "rules.md"]
    ruledocs.write(tmp_path)
    assert ruledocs.stale(tmp_path) == []
    readme = (tmp_path / "README.md").read_text()
    assert readme.startswith(f"intro\n{ruledocs.TABLE_START}\n| code | name | what |\n|---|---|---|\n"
                             "| [`IPV001`](docs/rules.md#ipv001) | inplace-on-model-output | ")
    assert readme.endswith(f"|\n{ruledocs.TABLE_END}\nrest\n")
    (tmp_path / "README.md").write_text("no markers\n")
    with pytest.raises(ValueError, match="README.md needs the markers"):
        ruledocs.stale(tmp_path)


def test_script_check_mode_passes_on_this_checkout(root, tmp_path):
    proc = subprocess.run([sys.executable, str(root / "scripts" / "document_rules.py"), "--check"],
                          capture_output=True, text=True)
    assert (proc.returncode, proc.stdout) == (0, "")


def test_headings_demoted_outside_code_only():
    text = "# T\n\n```python\n# comment\n```\n## S\n"
    assert ruledocs.demote_headings(text) == "## T\n\n```python\n# comment\n```\n### S\n"


def test_rule_command_prints_the_page(capsys):
    assert main(["rule", "ipv004"]) == 0
    out = capsys.readouterr().out
    assert out == RULES["IPV004"].document()
    assert out.startswith("# IPV004 (inplace-on-expanded-tensor)\n\nIn-place op on the result of `expand`")


def test_rule_command_lists_and_shows_all(capsys):
    assert main(["rule"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert [line.split()[0] for line in lines] == list(RULES)
    assert lines[0] == ("IPV001  inplace-on-model-output            In-place op on a model output "
                        "(`output.logits`, `outputs[0]`) or a view of one.")
    assert main(["rule", "--all"]) == 0
    out = capsys.readouterr().out
    assert out == "\n".join(r.document() for r in RULES.values())
    assert out.count("\n## Why is this bad?\n") == len(RULES)


def test_rule_command_unknown_code(capsys):
    assert main(["rule", "IPV999"]) == 2
    assert capsys.readouterr().err == (
        "inplace-lint: error: unknown rule 'IPV999' (known: "
        f"{', '.join(f'{code} ({rule.name})' for code, rule in RULES.items())})\n")
