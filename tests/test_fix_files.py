"""``inplace-lint fix`` on files: bytes kept, bad input untouched, noqa respected, exit codes, libcst runner."""
from __future__ import annotations

import os
import subprocess
import sys


from inplace_lint.adapters.cli import main
from inplace_lint.fixing import fix_file

BAD = "def f(model, h, t):\n    x = model(h).logits.squeeze(0)\n    x.div_(t)  # scale\n    return x\n"
#: the default style, inline; no torch floor stated, so DTensor's import is guarded for torch < 2.5
FIXED = ("try:\n    from torch.distributed.tensor import DTensor\n"
         "except ImportError:  # torch < 2.5\n    from torch.distributed._tensor import DTensor\n\n"
         "def f(model, h, t):\n    x = model(h).logits.squeeze(0)\n"
         "    if isinstance(x, DTensor) and not isinstance(t, DTensor) and getattr(t, \"ndim\", 0) > 0:\n"
         "        x = x.full_tensor()\n"
         "    x = x.clone().div_(t)  # scale\n    return x\n")


def test_fix_writes_and_second_run_changes_nothing(tmp_path, capsys):
    path = tmp_path / "m.py"
    path.write_text(BAD)
    assert main(["fix", str(path)]) == 0
    assert path.read_text() == FIXED
    assert "1 fix applied in 1 file; 0 findings remain; 0 files skipped." in capsys.readouterr().err
    assert main(["fix", str(path)]) == 0
    assert path.read_text() == FIXED
    assert not [p for p in os.listdir(tmp_path) if p.startswith(".inplace-lint-")]


def test_diff_writes_nothing_and_exits_one(tmp_path, capsys):
    path = tmp_path / "m.py"
    path.write_text(BAD)
    assert main(["fix", "--diff", str(path)]) == 1
    out = capsys.readouterr().out
    assert path.read_text() == BAD
    assert "-    x.div_(t)  # scale\n+    if isinstance(x, DTensor)" in out and "+    x = x.clone().div_(t)  # scale\n" in out
    assert out.startswith(f"--- {path}\n+++ {path}\n")


def test_crlf_bom_and_cookie_survive(tmp_path):
    crlf = tmp_path / "crlf.py"
    crlf.write_bytes(BAD.replace("\n", "\r\n").encode())
    assert fix_file(str(crlf)).written
    assert crlf.read_bytes() == FIXED.replace("\n", "\r\n").encode()

    bom = tmp_path / "bom.py"
    bom.write_bytes(b"\xef\xbb\xbf" + BAD.encode())
    fix_file(str(bom))
    assert bom.read_bytes() == b"\xef\xbb\xbf" + FIXED.encode()

    latin = tmp_path / "latin.py"
    source = "# -*- coding: latin-1 -*-\n# caf\xe9\n" + BAD
    latin.write_bytes(source.encode("latin-1"))
    result = fix_file(str(latin))
    assert result.written
    data = latin.read_bytes().decode("latin-1")
    assert data.startswith("# -*- coding: latin-1 -*-\n# caf\xe9\n")
    assert "    x = x.clone().div_(t)  # scale\n" in data


def test_unparsable_file_untouched(tmp_path, capsys):
    broken = tmp_path / "broken.py"
    broken.write_text("def f(:\n    x.div_(t)\n")
    good = tmp_path / "good.py"
    good.write_text(BAD)
    assert main(["fix", str(tmp_path)]) == 1
    assert broken.read_text() == "def f(:\n    x.div_(t)\n"
    assert good.read_text() == FIXED
    assert f"{broken}: cannot parse" in capsys.readouterr().err


def test_noqa_lines_are_never_rewritten(tmp_path):
    path = tmp_path / "m.py"
    source = BAD.replace("# scale", "# noqa: IPV001 -- in place on purpose, saves a 20 GB copy")
    path.write_text(source)
    assert main(["fix", "-q", str(path)]) == 0
    assert path.read_text() == source


def test_base_from_a_parameter_makes_the_fix_unsafe(tmp_path, capsys):
    """The caller passed `output` in and can read `output.logits` after the call (verl's prepare_model_outputs)."""
    path = tmp_path / "m.py"
    source = "def f(output, t):\n    x = output.logits.squeeze(0)\n    x.div_(t)  # scale\n    return x\n"
    path.write_text(source)
    assert main(["fix", str(path)]) == 1
    assert path.read_text() == source
    assert ("[unsafe fix not applied: `output` is a parameter: the caller would no longer see the change to "
            "`output.logits`; use --unsafe-fixes]") in capsys.readouterr().out
    assert main(["fix", "--unsafe-fixes", "--style", "inline", str(path)]) == 0
    assert "    x = x.clone().div_(t)  # scale\n" in path.read_text()


def test_base_read_after_the_write_makes_the_fix_unsafe(tmp_path, capsys):
    path = tmp_path / "m.py"
    source = ("def f(model, h, t):\n    out = model(h)\n    x = out.logits.squeeze(0)\n    x.div_(t)\n"
              "    return x, out.logits\n")
    path.write_text(source)
    assert main(["fix", str(path)]) == 1
    assert path.read_text() == source
    assert ("[unsafe fix not applied: `out` is read after the write (line 5) and would no longer see the change; "
            "use --unsafe-fixes]") in capsys.readouterr().out


def test_libcst_tool_runs_the_same_codemod(tmp_path):
    path = tmp_path / "m.py"
    path.write_text(BAD)
    (tmp_path / ".libcst.codemod.yaml").write_text("generated_code_marker: '@generated'\nformatter: []\n"
                                                   "blacklist_patterns: []\nmodules: []\nrepo_root: .\n")
    proc = subprocess.run([sys.executable, "-m", "libcst.tool", "codemod", "-x", "--no-format",
                           "inplace_lint.adapters.libcst_command.InplaceToOutOfPlace", str(path)],
                          cwd=tmp_path, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert path.read_text() == FIXED
