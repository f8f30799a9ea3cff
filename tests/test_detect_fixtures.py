"""Detection fixtures: the expected findings are written on the line, as ``# expect: CODE:COL``.

Each fixture is checked twice: through the engine as the CLI runs it (noqa
included) and through real ``flake8 --select=IPV`` in a subprocess; both must give
exactly the expected (line, column, code) set. Columns are 1-based, as flake8 prints.
"""
from __future__ import annotations

import pathlib
import re
import subprocess
import sys
from collections import defaultdict

import pytest

from inplace_lint.pipeline import check_file
from inplace_lint.config import DEFAULT_SETTINGS
from inplace_lint.rules import RULES

FIXTURES = pathlib.Path(__file__).resolve().parent.parent / "fixtures" / "detect"
FILES = sorted(FIXTURES.rglob("*.py"))
EXPECT = re.compile(r"# expect: (.*)$")


def expected(path: pathlib.Path):
    out = set()
    for lineno, line in enumerate(path.read_text().splitlines(), 1):
        m = EXPECT.search(line)
        if m:
            for item in m.group(1).split(","):
                code, col = item.strip().split(":")
                out.add((lineno, int(col), code))
    return out


@pytest.fixture(scope="module")
def flake8_results():
    proc = subprocess.run(
        [sys.executable, "-m", "flake8", "--select=IPV", "--isolated", str(FIXTURES)],
        capture_output=True, text=True,
    )
    assert proc.returncode in (0, 1), proc.stderr
    found = defaultdict(set)
    for line in proc.stdout.splitlines():
        path, lineno, col, rest = line.split(":", 3)
        found[pathlib.Path(path).resolve()].add((int(lineno), int(col), rest.split()[0]))
    return found


def test_every_rule_has_fixtures():
    folders = {p.parent.name for p in FILES}
    assert set(RULES) | {"clean", "noqa"} <= folders
    for path in FILES:
        if path.parent.name.startswith("IPV"):
            assert any(code == path.parent.name for _, _, code in expected(path)), path


@pytest.mark.parametrize("path", FILES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_engine_matches_expectations(path):
    result = check_file(str(path), DEFAULT_SETTINGS, [], [])
    assert result.error is None
    assert {(f.line, f.col + 1, f.code) for f in result.findings} == expected(path)


@pytest.mark.parametrize("path", FILES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_flake8_matches_expectations(path, flake8_results):
    assert flake8_results.get(path.resolve(), set()) == expected(path)


def test_clean_fixtures_are_clean_apart_from_marked_lines():
    for path in (FIXTURES / "clean").glob("*.py"):
        result = check_file(str(path), DEFAULT_SETTINGS, [], [])
        assert {(f.line, f.col + 1, f.code) for f in result.findings} == expected(path)
