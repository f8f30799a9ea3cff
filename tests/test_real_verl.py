"""The seed bug in the real verl release: found in 0.8.0, gone in 0.9.1 (the upstream fix, verl PR 6935)."""
from __future__ import annotations

import subprocess
import sys

import pytest

from inplace_lint.cli import main
from tests.realcode import fetch

pytestmark = pytest.mark.network
ENGINE = "verl/workers/engine/fsdp/transformer_impl.py"


def _verl(version):
    tree = fetch("verl", version)
    if tree is None:
        pytest.skip(f"verl=={version} could not be downloaded (package registry unreachable)")
    return tree


def _lines(output: str, path: str):
    return sorted(int(line.split(":")[1]) for line in output.splitlines() if line.startswith(path))


def test_verl_080_seed_found_by_cli_and_flake8(capsys):
    tree = _verl("0.8.0")
    assert main(["check", "-q", str(tree / ENGINE)]) == 1
    out = capsys.readouterr().out
    assert _lines(out, str(tree / ENGINE)) == [1112, 1196]
    assert out.count(" IPV001 `div_` writes in place to ") == 2
    flake8 = subprocess.run([sys.executable, "-m", "flake8", "--isolated", "--select=IPV", ENGINE],
                            cwd=tree, capture_output=True, text=True)
    assert _lines(flake8.stdout, ENGINE) == [1112, 1196], flake8.stderr


def test_verl_091_fixed_statements_not_flagged(capsys):
    tree = _verl("0.9.1")
    assert main(["check", "-q", str(tree / ENGINE)]) == 0
    assert capsys.readouterr().out == ""
