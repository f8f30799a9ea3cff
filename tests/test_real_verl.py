"""The seed bug in the real verl release: found in 0.8.0, gone in 0.9.1 (the upstream fix, verl PR 6935)."""
from __future__ import annotations

import subprocess
import sys

import pytest

from inplace_lint.adapters.cli import main
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


@pytest.mark.parametrize("style", ["runtime", "inline"])
def test_verl_080_fix_rewrites_the_seed_only(style, tmp_path, capsys):
    """issue 9: `output` is a parameter of prepare_model_outputs, but its only caller in verl
    (forward_step) never reads what it passed afterwards, so a plain `fix` (safe fixes only) rewrites
    both PR 6935 sites; it also rewrites the same bug in the torchtitan engine, where the logits reach
    `logits.div_(temperature)` through a call (a DTensor's full_tensor() returned by model_forward_step)."""
    import ast
    import filecmp
    import json
    import shutil

    tree = _verl("0.8.0")
    work = tmp_path / "verl"
    shutil.copytree(tree / "verl", work)
    assert main(["check", "-q", "--no-cache", "--format", "json", str(work)]) == 1
    reported = json.loads(capsys.readouterr().out)
    fixes = {(f["filename"].split("verl/", 1)[1], f["location"]["row"]): f["fix"] for f in reported}
    assert sorted(fixes) == [("workers/engine/fsdp/transformer_impl.py", 1112),
                             ("workers/engine/fsdp/transformer_impl.py", 1196),
                             ("workers/engine/torchtitan/transformer_impl.py", 686)]
    assert all(fix["applicability"] == "safe" for fix in fixes.values())
    assert main(["fix", "-q", "--no-cache", "--style", style, str(work)]) == 0
    changed = sorted(str(p.relative_to(work)) for p in work.rglob("*.py")
                     if not filecmp.cmp(p, tree / "verl" / p.relative_to(work), shallow=False))
    assert changed == ["workers/engine/fsdp/transformer_impl.py", "workers/engine/torchtitan/transformer_impl.py"]
    for name in changed:
        ast.parse((work / name).read_text())
    text = (work / "workers/engine/fsdp/transformer_impl.py").read_text()
    if style == "inline":
        # the upstream fix: gather a DTensor (only next to a plain temperature with dimensions), divide out
        # of place, divisor in the logits dtype; verl states no torch floor, so DTensor's import is guarded
        assert ("                _logits_rmpad_operand = temperature_rmpad.clamp(min=1e-8).unsqueeze(-1)"
                ".to(logits_rmpad.dtype)\n"
                "                if isinstance(logits_rmpad, DTensor) and not isinstance(_logits_rmpad_operand, DTensor)"
                " and getattr(_logits_rmpad_operand, \"ndim\", 0) > 0:\n"
                "                    logits_rmpad = logits_rmpad.full_tensor()\n"
                "                logits_rmpad = logits_rmpad.clone().div_(_logits_rmpad_operand)\n") in text
        # verl 0.8.0 imports DTensor from torch.distributed.tensor itself: that import is reused, none added
        assert text.count("import DTensor\n") == 1 and "from torch.distributed.tensor import DTensor\n" in text
    else:
        # both seed sites call the corrected scaling routine, in place where autograd allows it
        assert ("                logits_rmpad = scale_logits(logits_rmpad, temperature_rmpad.unsqueeze(-1), eps=1e-8, "
                "broadcast=\"trailing\", inplace=\"auto\")\n") in text
        assert ("                logits = scale_logits(logits, temperature, eps=1e-8, broadcast=\"trailing\", "
                "inplace=\"auto\")\n") in text
        assert "from inplace_lint.runtime import scale_logits\n" in text
    for name in changed:  # both styles: Python 3.9's grammar
        ast.parse((work / name).read_text(), feature_version=(3, 9))
    capsys.readouterr()
    before = {p: p.read_bytes() for p in work.rglob("*.py")}
    main(["fix", "-q", "--style", style, str(work)])
    assert {p: p.read_bytes() for p in work.rglob("*.py")} == before
