"""Fixes that run on the target's floor (issue 21 item 1): the project's oldest Python and torch are read
from its own files, ``--target-version``/``--torch-version`` override them, the inline DTensor guard imports
``DTensor`` from where that torch has it, both styles' rewrites parse with Python 3.9's grammar, the
runtime module itself parses there, and the summary says when the runtime style adds a dependency."""
from __future__ import annotations

import ast
import os
import pathlib
import subprocess
import sys
import textwrap

import pytest

from inplace_lint import config, floor
from inplace_lint.adapters.cli import main
from inplace_lint.fix.imports import dtensor_import_form
from inplace_lint.fixing import fix_code

ROOT = pathlib.Path(__file__).resolve().parent.parent

SRC = textwrap.dedent("""\
    import torch


    def route(model, h, experts_weights, temperature):
        scores = model(h).logits
        rw = torch.softmax(scores, dim=-1)
        rw /= rw.sum(-1, keepdim=True)
        logits = model(h).logits.squeeze(0)
        logits.div_(temperature.clamp(min=1e-8).unsqueeze(-1).to(logits.dtype))
        return experts_weights * rw, logits
    """)

GUARDED = ("try:\n    from torch.distributed.tensor import DTensor\n"
           "except ImportError:  # torch < 2.5\n    from torch.distributed._tensor import DTensor\n")


def _project(tmp_path: pathlib.Path, files: dict) -> pathlib.Path:
    for name, text in files.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))
    return tmp_path


# --------------------------------------------------------------------------- reading the floor


def test_floor_from_pyproject(tmp_path):
    root = _project(tmp_path, {"pyproject.toml": """\
        [project]
        name = "fork"
        requires-python = ">=3.9"
        dependencies = ["numpy", "torch>=2.4,<2.7", "torchvision>=0.19"]
        [project.optional-dependencies]
        sglang = ["torch==2.6.0"]
        """})
    floor.read.cache_clear()
    assert floor.read(root.resolve()) == floor.Floor((3, 9), (2, 4), "pyproject.toml", "pyproject.toml")


def test_floor_from_setup_py_and_requirements(tmp_path):
    root = _project(tmp_path, {
        "setup.py": """\
            from setuptools import setup
            install_requires = ["ray>=2.10", "torch==2.5.1+cu121"]
            setup(name="fork", python_requires=">=3.8", install_requires=install_requires,
                  extras_require={"vllm": ["vllm<=0.6.3"]})
            """,
        "requirements.txt": "# pinned for vllm 0.6.3\ntorch==2.4.0  # cuda 12.1\ntransformers\n",
        "requirements/dev.txt": "-r ../requirements.txt\npytest\n",
    })
    floor.read.cache_clear()
    stated = floor.read(root.resolve())
    assert (stated.python, stated.torch, stated.python_source, stated.torch_source) == \
        ((3, 8), (2, 4), "setup.py", "requirements.txt")


def test_floor_from_setup_cfg_and_poetry(tmp_path):
    cfg = _project(tmp_path / "a", {"setup.cfg": """\
        [options]
        python_requires = >=3.10
        install_requires =
            torch~=2.3
        """})
    poetry = _project(tmp_path / "b", {"pyproject.toml": """\
        [tool.poetry.dependencies]
        python = "^3.9"
        torch = "2.1.2"
        """})
    floor.read.cache_clear()
    assert (floor.read(cfg.resolve()).python, floor.read(cfg.resolve()).torch) == ((3, 10), (2, 3))
    assert (floor.read(poetry.resolve()).python, floor.read(poetry.resolve()).torch) == ((3, 9), (2, 1))


def test_no_bound_is_no_floor():
    assert floor.lower_bound("<2.7") is None
    assert floor.torch_requirement_floor("torch") is None
    assert floor.torch_requirement_floor("torchvision>=0.1") is None
    assert floor.torch_requirement_floor('torch>=2.1; sys_platform == "linux"') == (2, 1)


@pytest.mark.parametrize("value, expected", [("3.9", (3, 9)), ("py39", (3, 9)), ("2.4.1", (2, 4)), ("py310", (3, 10))])
def test_version_option(value, expected):
    assert config.parse_version_option(value, "x") == expected


def test_bad_version_option_is_a_config_error():
    with pytest.raises(config.ConfigError, match="expected a version such as 3.9 or 2.4, got 'new'"):
        config.parse_version_option("new", "pyproject.toml: torch-version")


# --------------------------------------------------------------------------- how DTensor is imported


@pytest.mark.parametrize("torch_floor, form", [(None, "guarded"), ((2, 4), "guarded"), ((2, 0), "guarded"),
                                               ((2, 5), "public"), ((2, 13), "public"), ((1, 13), "none")])
def test_dtensor_import_form(torch_floor, form):
    assert dtensor_import_form(torch_floor) == form


def test_inline_guard_on_torch_24_floor_is_a_guarded_import(tmp_path):
    root = _project(tmp_path, {"requirements.txt": "torch==2.4.0\n", "m.py": SRC})
    fixed = fix_code(SRC, str(root / "m.py"), style="inline").new_source
    assert fixed.startswith("import torch\n" + GUARDED + "\n\ndef route(")
    assert "from torch.distributed.tensor import DTensor\n" not in fixed.replace(GUARDED, "")


def test_inline_guard_on_torch_25_floor_imports_the_public_module(tmp_path):
    root = _project(tmp_path, {"requirements.txt": "torch>=2.5\n", "m.py": SRC})
    fixed = fix_code(SRC, str(root / "m.py"), style="inline").new_source
    assert fixed.startswith("import torch\nfrom torch.distributed.tensor import DTensor\n\n\ndef route(")


def test_inline_style_below_torch_2_has_no_guard(tmp_path):
    root = _project(tmp_path, {"requirements.txt": "torch==1.13.1\n", "m.py": SRC})
    fixed = fix_code(SRC, str(root / "m.py"), style="inline").new_source
    assert fixed == SRC.replace(
        "    rw /= rw.sum(-1, keepdim=True)\n", "    rw = rw.clone().div_(rw.sum(-1, keepdim=True))\n").replace(
        "    logits.div_(temperature.clamp(min=1e-8).unsqueeze(-1).to(logits.dtype))\n",
        "    logits = logits.clone().div_(temperature.clamp(min=1e-8).unsqueeze(-1).to(logits.dtype))\n")


def test_torch_version_flag_overrides_the_project(tmp_path, capsys):
    root = _project(tmp_path, {"requirements.txt": "torch==2.4.0\n", "m.py": SRC})
    assert main(["fix", "--diff", "-j", "1", "--torch-version", "2.6", str(root / "m.py")]) == 1
    out = capsys.readouterr().out
    assert "+from torch.distributed.tensor import DTensor\n" in out and "torch.distributed._tensor" not in out
    assert main(["fix", "--diff", "-j", "1", str(root / "m.py")]) == 1
    assert "+    from torch.distributed._tensor import DTensor\n" in capsys.readouterr().out


def test_torch_version_config_key(tmp_path, capsys):
    root = _project(tmp_path, {"pyproject.toml": '[project]\ndependencies = ["torch==2.4.0"]\n'
                                                 '[tool.inplace-lint]\ntorch-version = "2.5"\n', "m.py": SRC})
    assert main(["fix", "--diff", "-j", "1", str(root / "m.py")]) == 1
    assert "+from torch.distributed.tensor import DTensor\n" in capsys.readouterr().out


def test_a_later_fix_reuses_the_guarded_import(tmp_path):
    fixed = fix_code(SRC, "m.py", style="inline").new_source
    again = fixed + textwrap.dedent("""\


        def more(model, h, t):
            x = model(h).logits.squeeze(0)
            x.mul_(t.unsqueeze(-1))
            return x
        """)
    twice = fix_code(again, "m.py", style="inline").new_source
    assert twice.count("import DTensor") == 2 and "_DTensor" not in twice
    assert "    if isinstance(x, DTensor) and not isinstance(_x_operand, DTensor)" in twice


# --------------------------------------------------------------------------- Python 3.9


def test_runtime_module_parses_with_python_39_grammar():
    for path in (sorted((ROOT / "inplace_lint" / "runtime").rglob("*.py"))
                 + sorted((ROOT / "inplace_lint" / "torch_facts").rglob("*.py"))
                 + [ROOT / "inplace_lint" / "__init__.py"]):
        ast.parse(path.read_text(), str(path), feature_version=(3, 9))  # what the runtime imports


@pytest.mark.parametrize("style", ["inline", "runtime"])
def test_rewrites_parse_with_python_39_grammar(style):
    for path in sorted((ROOT / "fixtures" / "fix").glob("*.in.py")):
        result = fix_code(path.read_text(), path.name, style=style, unsafe_fixes=True)
        ast.parse(result.new_source, feature_version=(3, 9))
    ast.parse(fix_code(SRC, "m.py", style=style).new_source, feature_version=(3, 9))


@pytest.mark.skipif(sys.version_info < (3, 10), reason="the rewrite under test uses match (Python 3.10)")
def test_a_rewrite_is_checked_with_the_projects_python_grammar(tmp_path):
    """A fix never needs a newer Python than the code it fixes: the re-parse uses the floor's grammar."""
    from inplace_lint.fixing import FixResult, fix_findings
    from inplace_lint.findings import Edit
    from inplace_lint.pipeline import check_source

    checked = check_source(SRC, "m.py", config.DEFAULT_SETTINGS, fix_style="inline")
    finding = checked.findings[0]
    bad = Edit(finding.line, 0, finding.line + 1, 0, "    match rw:\n        case _: rw = rw * 1\n")
    import dataclasses
    finding = dataclasses.replace(finding, fix=dataclasses.replace(finding.fix, edits=(bad,)))
    result = FixResult("m.py")
    fix_findings(SRC, result, [finding], False, python_floor=(3, 9))
    assert result.error is not None and result.new_source is None
    result = FixResult("m.py")
    fix_findings(SRC, result, [finding], False, python_floor=(3, 10))
    assert result.error is None and "match rw" in result.new_source


# --------------------------------------------------------------------------- torch 2.4's layout, simulated

_OLD_TORCH = textwrap.dedent("""\
    import importlib.util, sys
    import torch
    import torch.distributed._tensor  # torch 2.4 keeps DTensor here
    sys.modules["torch.distributed.tensor"] = None  # and has no DTensor in torch.distributed.tensor
    try:
        from torch.distributed.tensor import DTensor
    except ImportError:
        pass
    else:
        raise SystemExit("the simulation does not hide torch.distributed.tensor")
    spec = importlib.util.spec_from_file_location("fixed", sys.argv[1])
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    g = torch.Generator().manual_seed(0)
    h = torch.randn(1, 4, 8, generator=g)
    weights, t = torch.rand(8, generator=g), torch.linspace(0.5, 2, 4)
    model = lambda x: type("Out", (), {"logits": x * 1.0})
    a, b = module.route(model, h, weights, t)
    rw = torch.softmax(h, dim=-1)
    assert torch.equal(a, weights * (rw / rw.sum(-1, keepdim=True)))
    assert torch.equal(b, h.squeeze(0) / t.clamp(min=1e-8).unsqueeze(-1))
    print("ran")
    """)


@pytest.mark.parametrize("style", ["inline", "runtime"])
def test_rewrite_imports_nothing_torch_24_lacks(tmp_path, style):
    """Both styles' rewrites import and run where ``torch.distributed.tensor`` has no DTensor (torch 2.4),
    and the simulation is real: the public import fails under it."""
    pytest.importorskip("torch")
    fixed = tmp_path / "fixed.py"
    fixed.write_text(fix_code(SRC, "m.py", style=style).new_source)
    script = tmp_path / "old_torch.py"
    script.write_text(_OLD_TORCH)
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    run = subprocess.run([sys.executable, str(script), str(fixed)], capture_output=True, text=True, env=env)
    assert run.returncode == 0 and run.stdout == "ran\n", run.stderr
    public = tmp_path / "public.py"
    public.write_text("from torch.distributed.tensor import DTensor\n" + SRC)
    run = subprocess.run([sys.executable, str(script), str(public)], capture_output=True, text=True, env=env)
    assert run.returncode == 1 and "ModuleNotFoundError" in run.stderr


def test_runtime_module_finds_dtensor_in_the_old_module():
    pytest.importorskip("torch")
    code = ("import sys, torch, torch.distributed._tensor as old\n"
            "sys.modules['torch.distributed.tensor'] = None\n"
            "import inplace_lint.runtime as rt\n"
            "assert rt.DTensor is old.DTensor and rt.dtensor.dtensor_types()[0] is old.DTensor\nprint('ok')\n")
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env=dict(os.environ, PYTHONPATH=str(ROOT)))
    assert run.stdout == "ok\n", run.stderr


# --------------------------------------------------------------------------- the new dependency, said


def test_summary_counts_files_that_now_import_the_runtime(tmp_path, capsys):
    root = _project(tmp_path, {"pyproject.toml": '[project]\nrequires-python = ">=3.8"\n',
                               "a.py": SRC, "b.py": SRC, "c.py": "x = 1\n"})
    assert main(["fix", "-j", "1", "--style", "runtime", str(root)]) == 0
    err = capsys.readouterr().err
    assert ("2 files now import inplace_lint.runtime (--style runtime): the project needs inplace-lint installed "
            "where it runs (a new dependency: Python >= 3.9, torch >= 2.4;") in err
    assert "Below the runtime's floor: pyproject.toml says Python >= 3.8." in err
    assert main(["fix", "-j", "1", "--style", "runtime", str(root)]) == 0  # the second run changes nothing
    assert "inplace_lint.runtime" not in capsys.readouterr().err


def test_inline_summary_names_no_dependency(tmp_path, capsys):
    root = _project(tmp_path, {"a.py": SRC})
    assert main(["fix", "-j", "1", str(root)]) == 0
    err = capsys.readouterr().err
    assert "2 fixes applied in 1 file" in err and "inplace_lint.runtime" not in err
    assert "inplace_lint" not in (root / "a.py").read_text()


# --------------------------------------------------------------------------- one default style


def test_one_default_style_everywhere():
    import yaml  # pre-commit's own dependency

    from inplace_lint.adapters.cli import build_parser
    from inplace_lint.adapters.libcst_command import InplaceToOutOfPlace

    assert config.FIX_STYLES[0] == "inline"
    hooks = {h["id"]: h for h in yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text())}
    assert hooks["inplace-lint-fix"]["entry"] == "inplace-lint fix"  # the configured style, else the default
    args = build_parser().parse_args(["fix", "x.py"])
    assert args.style is None  # the config's fix-style, else FIX_STYLES[0]
    import inspect

    assert inspect.signature(fix_code).parameters["style"].default == "inline"
    assert inspect.signature(InplaceToOutOfPlace.__init__).parameters["style"].default == "inline"
