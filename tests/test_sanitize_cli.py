"""Sanitizer surfaces: ``python -m inplace_lint.sanitize`` (the script's stdout, exceptions and exit code
untouched), its report formats, ``inplace-lint check --runtime-report``, and the pytest plugin."""
import json
import os
import pathlib
import subprocess
import sys
import textwrap

import pytest

from inplace_lint.adapters import runtime_report
from inplace_lint.adapters.cli import main

pytest.importorskip("torch")
pytest_plugins = ["pytester"]

ROOT = pathlib.Path(__file__).resolve().parent.parent
SCHEMA = ROOT / "tests" / "data" / "sarif-schema-2.1.0.json"

TRAIN = textwrap.dedent("""\
    import sys
    import torch
    import torch.nn as nn


    class ModelOutput(dict):
        __getattr__ = dict.__getitem__


    class LM(nn.Module):
        def __init__(self):
            super().__init__()
            self.head = nn.Linear(4, 6)

        def forward(self, x):
            return ModelOutput(logits=self.head(x))


    def scale(t, temperature):
        t.div_(temperature)


    model = LM()
    for _ in range(2):
        output = model(torch.randn(1, 3, 4))
        logits_rmpad = output.logits.squeeze(0)
        logits_rmpad.div_(0.7)
        act = getattr(torch, "sigmoid")
        y = act(logits_rmpad * 1)
        scale(y, 0.5)
    print("argv:", sys.argv[1:])
    if "--fail" in sys.argv:
        raise ValueError("the script's own error")
    sys.exit(int(sys.argv[-1]) if sys.argv[-1].isdigit() else 0)
    """)
SEED_LINE = 27  # logits_rmpad.div_(0.7)
HELPER_LINE = 20  # t.div_(temperature), on a sigmoid output reached through getattr: static analysis can't see it


def sanitize_run(tmp_path, *args):
    script = tmp_path / "train.py"
    script.write_text(TRAIN)
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    cmd = [sys.executable, "-m", "inplace_lint.sanitize", *[str(script) if a == "SCRIPT" else a for a in args]]
    return subprocess.run(cmd, capture_output=True, text=True, cwd=tmp_path, env=env, timeout=300), script


def report_lines(stderr):
    return [line for line in stderr.splitlines() if ": IPV" in line or line.startswith("inplace-lint sanitize:")]


def test_runner_reports_to_stderr_and_leaves_stdout_argv_and_exit_code_alone(tmp_path):
    proc, script = sanitize_run(tmp_path, "SCRIPT", "--lr", "1", "3")
    assert proc.returncode == 3
    assert proc.stdout == "argv: ['--lr', '1', '3']\n"
    assert report_lines(proc.stderr) == [
        f"{script}:{HELPER_LINE}:5: IPV006 in-place `div_` on a tensor that autograd saved for backward, in a graph "
        "that is still alive: backward() will fail (or, through `.data`, compute wrong gradients) (seen 2 times at "
        "run time)",
        f"{script}:{SEED_LINE}:5: IPV001 in-place `div_` on a view of `output.logits` of a top-level `LM` call "
        "that its output object still holds: every later reader sees the change (seen 2 times at run time)",
        "inplace-lint sanitize: 2 sites (4 writes) with in-place hazards (IPV001: 1, IPV006: 1).",
    ]


def test_runner_passes_the_scripts_exception_through_and_still_writes_the_report(tmp_path):
    proc, script = sanitize_run(tmp_path, "--format", "json", "--output", "report.json", "SCRIPT", "--fail")
    assert proc.returncode == 1
    assert proc.stderr.rstrip().endswith("ValueError: the script's own error")
    data = json.loads((tmp_path / "report.json").read_text())
    assert [(d["code"], d["location"]["row"], d["location"]["column"]) for d in data] == [
        ("IPV006", HELPER_LINE, 5), ("IPV001", SEED_LINE, 5)]
    assert data[0]["filename"] == str(script) and data[0]["fix"] is None


def test_runner_sarif_validates_and_carries_the_count(tmp_path):
    jsonschema = pytest.importorskip("jsonschema")
    proc, _ = sanitize_run(tmp_path, "--format", "sarif", "-o", "report.sarif", "SCRIPT")
    assert proc.returncode == 0, proc.stderr
    log = json.loads((tmp_path / "report.sarif").read_text())
    jsonschema.validate(log, json.loads(SCHEMA.read_text(encoding="utf-8")), cls=jsonschema.Draft4Validator)
    results = log["runs"][0]["results"]
    assert [(r["ruleId"], r["locations"][0]["physicalLocation"]["region"]["startLine"], r["occurrenceCount"])
            for r in results] == [("IPV006", HELPER_LINE, 2), ("IPV001", SEED_LINE, 2)]


def test_runner_runs_a_module_with_dash_m(tmp_path):
    pkg = tmp_path / "mypkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "train.py").write_text(TRAIN)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), str(tmp_path)]))
    proc = subprocess.run([sys.executable, "-m", "inplace_lint.sanitize", "-m", "mypkg.train", "x", "4"],
                          capture_output=True, text=True, cwd=tmp_path, env=env, timeout=300)
    assert proc.returncode == 4 and proc.stdout == "argv: ['x', '4']\n"
    assert [line.split(": ")[1].split()[0] for line in report_lines(proc.stderr)[:-1]] == ["IPV006", "IPV001"]


def test_runner_leaves_every_argument_after_the_script_to_it():
    from inplace_lint.sanitize.__main__ import build_parser

    args = build_parser().parse_args(["--format", "json", "s.py", "-h", "--output", "y", "-m"])
    assert (args.format, args.output, args.module, args.script, args.args) == (
        "json", None, False, "s.py", ["-h", "--output", "y", "-m"])


def test_runner_usage_errors(tmp_path):
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    proc = subprocess.run([sys.executable, "-m", "inplace_lint.sanitize", str(tmp_path / "missing.py")],
                          capture_output=True, text=True, env=env)
    assert proc.returncode == 2 and "no such file" in proc.stderr


@pytest.mark.parametrize("fmt", ["text", "json", "sarif"])
def test_check_runtime_report_confirms_and_lists_what_static_analysis_missed(tmp_path, capsys, fmt):
    proc, script = sanitize_run(tmp_path, "--format", fmt, "-o", f"report.{fmt}", "SCRIPT")
    assert proc.returncode == 0, proc.stderr
    code = main(["check", "-q", "--format", "json", "--runtime-report", str(tmp_path / f"report.{fmt}"), str(script)])
    out, err = capsys.readouterr()
    assert code == 1
    assert [(d["code"], d["location"]["row"], d["message"].endswith("[confirmed at run time]"))
            for d in json.loads(out)] == [("IPV001", SEED_LINE, True)]
    assert err.splitlines()[0] == "Seen at run time but not found by the static analysis (1):"
    assert err.splitlines()[1].startswith(f"{runtime_report.relative_path(str(script))}:{HELPER_LINE}: IPV006 ")


def test_runtime_report_join_marks_another_code_and_ignores_unchecked_files(tmp_path):
    from inplace_lint.findings import Finding, Origin, RootKind, WriteKind
    from inplace_lint.source.problems import FileResult

    path = str(tmp_path / "a.py")
    finding = Finding("IPV001", 3, 4, 3, 10, "msg", "div_", WriteKind.METHOD, "x", Origin(RootKind.TENSOR, "x", 1))
    sites = runtime_report.parse(f"{path}:3:5: IPV002 cf\n{path}:9:1: IPV004 exp\n/elsewhere/b.py:1:1: IPV001 o\n"
                                 "inplace-lint sanitize: 3 sites (3 writes) with in-place hazards.\n")
    items, missed = runtime_report.join([(FileResult(path), finding)], sites, [path])
    assert items[0][1].message == "msg [confirmed at run time as IPV002]"
    assert [(s.line, s.code) for s in missed] == [(9, "IPV004")]


def test_runtime_sites_that_check_would_not_report_are_not_missed(tmp_path):
    from inplace_lint.config import RunOptions, Settings
    from inplace_lint.adapters.jobs import CheckJob

    path = tmp_path / "a.py"
    path.write_text("x = 1\ny = 2  # noqa: IPV006 -- in place on purpose\nz = 3\n")
    sites = runtime_report.parse(f"{path}:1:1: IPV001 o\n{path}:2:1: IPV006 s\n{path}:3:1: IPV004 e\n")
    _, missed = runtime_report.join([], sites, [str(path)], CheckJob(RunOptions(Settings(), ignore=("IPV004",))))
    assert [(s.line, s.code) for s in missed] == [(1, "IPV001")]
    _, missed = runtime_report.join([], sites, [str(path)], CheckJob(RunOptions(Settings()), disable_noqa=True))
    assert [(s.line, s.code) for s in missed] == [(1, "IPV001"), (2, "IPV006"), (3, "IPV004")]


def test_check_runtime_report_unreadable_is_a_usage_error(tmp_path, capsys):
    (tmp_path / "a.py").write_text("x = 1\n")
    (tmp_path / "bad.json").write_text("{not json")
    assert main(["check", "-q", "--runtime-report", str(tmp_path / "bad.json"), str(tmp_path / "a.py")]) == 2
    assert "--runtime-report" in capsys.readouterr().err


# --- pytest plugin ------------------------------------------------------------------------------------------

PLUGIN = "inplace_lint.sanitize.pytest_plugin"
TEST_FILE = textwrap.dedent("""\
    import torch


    def test_step():
        x = torch.randn(4, requires_grad=True)
        y = x.sigmoid()
        y.mul_(2)
        assert y.shape == (4,)


    def test_legal():
        x = torch.randn(4, requires_grad=True)
        y = x * 2
        y.add_(1)
        y.sum().backward()
    """)


def _plugin_args():
    from importlib import metadata

    installed = any(ep.value == PLUGIN for ep in metadata.entry_points(group="pytest11"))
    return [] if installed else ["-p", PLUGIN]


def test_pytest_plugin_reports_in_the_terminal_summary(pytester):
    path = pytester.makepyfile(test_model=TEST_FILE)
    result = pytester.runpytest(*_plugin_args(), "--inplace-sanitize", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines([
        "*inplace-lint sanitize*",
        f"{path}:7:5: IPV006 in-place `mul_` on a tensor that autograd saved for backward*",
        "inplace-lint sanitize: 1 site (1 write) with in-place hazards (IPV006: 1).",
    ])


def test_pytest_plugin_raise_and_output_file(pytester):
    pytester.makepyfile(test_model=TEST_FILE)
    result = pytester.runpytest(*_plugin_args(), "--inplace-sanitize", "--inplace-sanitize-raise",
                                "--inplace-sanitize-format", "json", "--inplace-sanitize-output", "r.json",
                                "-p", "no:cacheprovider")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(["*InplaceHazardError*IPV006*"])
    assert [d["code"] for d in json.loads((pytester.path / "r.json").read_text())] == ["IPV006"]


def test_pytest_plugin_is_off_by_default(pytester):
    pytester.makepyfile(test_model=TEST_FILE)
    result = pytester.runpytest(*_plugin_args(), "-p", "no:cacheprovider")
    result.assert_outcomes(passed=2)
    assert "inplace-lint sanitize" not in result.stdout.str()


def test_plugin_module_and_package_do_not_import_torch():
    code = (f"import sys, {PLUGIN}, inplace_lint.sanitize.report, inplace_lint.adapters.runtime_report; "
            "assert 'torch' not in sys.modules, 'torch imported'")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr


def test_setup_cfg_declares_the_pytest11_entry_point():
    import configparser

    cfg = configparser.ConfigParser()
    cfg.read(ROOT / "setup.cfg")
    assert f"{PLUGIN} = {PLUGIN}" in cfg["options.entry_points"]["pytest11"]
