"""A hazard made in one file and written in another is reported where a user would edit, on every
surface (issue 17): at the call in the caller's file (`check FILE`, flake8 with the project cache, the
language server with only that buffer open, a real pre-commit run) and at the write in the helper's
file; related locations name the file they are in, in every format."""
from __future__ import annotations

import json
import os
import pathlib
import shutil
import subprocess
import sys
import textwrap

import pytest

from inplace_lint import workspace
from inplace_lint.adapters.cli import main

ROOT = pathlib.Path(__file__).resolve().parent.parent

HELPERS = '''\
import torch


def scale_by_temperature_(logits: torch.Tensor, temperature: float) -> torch.Tensor:
    """Divide the logits by the temperature, in place."""
    logits.div_(temperature)
    return logits
'''
ACTOR = '''\
from pkg.helpers import scale_by_temperature_


def forward(model, ids, temperature):
    output = model(ids)
    logits_rmpad = output.logits.squeeze(0)
    scale_by_temperature_(logits_rmpad, temperature)
    return logits_rmpad
'''
AT_CALL = ("pkg/actor.py:7:5: IPV001 `div_` in `scale_by_temperature_()` (pkg/helpers.py:6) writes in place to "
           "`logits_rmpad`, a view of model output `output.logits`; at this call: clone `logits_rmpad` before "
           "the call (`logits_rmpad = logits_rmpad.clone()`)")
AT_WRITE = ("pkg/helpers.py:6:5: IPV001 `div_` writes in place to `logits`, a view of model output `output.logits`, "
            "passed by the call at pkg/actor.py:7 [fix: unsafe]")


@pytest.fixture()
def two_files(tmp_path, monkeypatch):
    work = tmp_path / "proj"
    (work / "pkg").mkdir(parents=True)
    (work / "pyproject.toml").write_text('[project]\nname = "proj"\n')
    (work / "pkg" / "__init__.py").write_text("")
    (work / "pkg" / "helpers.py").write_text(HELPERS)
    (work / "pkg" / "actor.py").write_text(ACTOR)
    monkeypatch.chdir(work)
    workspace._PROJECTS.clear()
    yield work
    workspace._PROJECTS.clear()


def _check(capsys, *args):
    workspace._PROJECTS.clear()
    rc = main(["check", "-q", "-j", "1", *args])
    return rc, capsys.readouterr().out


def test_the_caller_checked_alone_reports_the_call(two_files, capsys):
    assert _check(capsys, "--no-cache", "pkg/actor.py") == (1, AT_CALL + "\n")


def test_the_helper_checked_alone_still_reports_the_write(two_files, capsys):
    assert _check(capsys, "--no-cache", "pkg/helpers.py") == (1, AT_WRITE + "\n")


def test_the_whole_project_reports_each_place_to_edit_once(two_files, capsys):
    rc, out = _check(capsys, "--no-cache", "pkg")
    assert rc == 1 and out == AT_CALL + "\n" + AT_WRITE + "\n"


def test_a_mutating_helper_is_reported_at_the_call_only(two_files, capsys):
    """A helper that drops what it wrote does what it says (`..._`): the caller is the one to change."""
    helpers = two_files / "pkg" / "helpers.py"
    helpers.write_text(HELPERS.replace("    return logits\n", ""))
    rc, out = _check(capsys, "--no-cache", "pkg")
    assert rc == 1 and out == AT_CALL + "\n"
    assert _check(capsys, "--no-cache", "pkg/helpers.py") == (0, "")


def test_the_out_of_place_twin_is_offered(two_files, capsys):
    helpers = two_files / "pkg" / "helpers.py"
    helpers.write_text(HELPERS + "\n\ndef scale_by_temperature(logits, temperature):\n    return logits / temperature\n")
    _, out = _check(capsys, "--no-cache", "pkg/actor.py")
    assert out == AT_CALL.replace(
        "at this call: ", "at this call: call `scale_by_temperature()`, its out-of-place twin, and use what it "
        "returns or ") + "\n"


def test_fixing_the_helper_in_the_same_run_fixes_the_call(two_files, capsys):
    """`fix` rewrites writes, not calls: the call's finding stands for the helper's write, so it remains
    when the write is not fixed, and goes with it when this run fixes the write."""
    workspace._PROJECTS.clear()
    assert main(["fix", "-j", "1", "pkg"]) == 1  # the helper's fix is unsafe: nothing applied
    out = capsys.readouterr().out
    assert out.splitlines() == [AT_CALL + " [no automatic fix]",
                                AT_WRITE.replace(" [fix: unsafe]", " [unsafe fix not applied: `logits` is a parameter: "
                                                 "the caller would no longer see the change; use --unsafe-fixes]")]
    workspace._PROJECTS.clear()
    assert main(["fix", "-j", "1", "--unsafe-fixes", "--style", "runtime", "pkg"]) == 0
    assert capsys.readouterr().out == ""
    assert "logits = scale_logits(logits, temperature, eps=None)" in (two_files / "pkg" / "helpers.py").read_text()
    assert _check(capsys, "--no-cache", "pkg") == (0, "")


def _flake8(work):
    proc = subprocess.run([sys.executable, "-m", "flake8", "--isolated", "--select=IPV", "pkg/actor.py"],
                          cwd=work, capture_output=True, text=True)
    return proc.stdout


def test_flake8_on_the_caller_with_the_project_cache(two_files, capsys):
    # without a cache flake8 sees the file alone: the helper's write is out of its sight
    assert _flake8(two_files) == ""
    _check(capsys, "pkg")  # writes the cache
    assert _flake8(two_files) == "pkg/actor.py:7:5: " + AT_CALL.split(": ", 1)[1] + "\n"


@pytest.mark.skipif(shutil.which("pre-commit") is None or shutil.which("git") is None,
                    reason="pre-commit or git is not installed")
def test_pre_commit_run_on_the_caller(two_files, tmp_path):
    """A real ``pre-commit run --files pkg/actor.py`` (a local hook running this checkout: no network)."""
    work = two_files
    config = textwrap.dedent(f"""\
        repos:
          - repo: local
            hooks:
              - id: inplace-lint
                name: inplace-lint
                entry: {sys.executable} -m inplace_lint check
                language: system
                types: [python]
        """)
    (work / ".pre-commit-config.yaml").write_text(config)
    env = {**os.environ, "PRE_COMMIT_HOME": str(tmp_path / "pre-commit-home"),
           "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run(git + ["init", "-q"], cwd=work, check=True)
    subprocess.run(git + ["add", "."], cwd=work, check=True)
    proc = subprocess.run(["pre-commit", "run", "--files", "pkg/actor.py"], cwd=work, env=env,
                          capture_output=True, text=True, timeout=300)
    output = proc.stdout + proc.stderr
    assert proc.returncode == 1, output
    assert "- hook id: inplace-lint\n- exit code: 1\n" in output
    assert [line for line in output.splitlines() if ": IPV" in line] == [AT_CALL]


# ---- related locations name their file: an origin made in one module, written in another (the shape of
# transformers' generation/utils.py -> models/dia/generation_dia.py)

UTILS = '''\
class GenerationMixin:
    def _sample(self, model, ids, t):
        out = model(ids)
        logits = out.logits
        return self._prepare(logits, t)
'''
DIA = '''\
from gen.utils import GenerationMixin


class DiaGenerationMixin(GenerationMixin):
    def _prepare(self, logits, t):
        return self._scale(logits.squeeze(0), t)

    def _scale(self, x, t):
        x.div_(t)
        return x
'''


@pytest.fixture()
def cross_module(tmp_path, monkeypatch):
    work = tmp_path / "proj"
    (work / "gen").mkdir(parents=True)
    (work / "pyproject.toml").write_text('[project]\nname = "proj"\n')
    (work / "gen" / "__init__.py").write_text("")
    (work / "gen" / "utils.py").write_text(UTILS)
    (work / "gen" / "dia.py").write_text(DIA)
    monkeypatch.chdir(work)
    workspace._PROJECTS.clear()
    yield work
    workspace._PROJECTS.clear()


def test_related_locations_name_their_file_in_full(cross_module, capsys):
    _, out = _check(capsys, "--no-cache", "--format", "full", "gen/dia.py")
    assert out.splitlines() == [
        "gen/dia.py:9:9: IPV001 `div_` writes in place to `x`, a view of model output `out.logits`, passed by "
        "the call at line 6 [fix: unsafe]",  # `logits.squeeze(0)` views `_prepare`'s parameter: its callers see it
        "  gen/dia.py:6:16: note: call site passing model output `out.logits`",
        "  gen/utils.py:4:1: note: model output `out.logits`",  # not dia.py:4, a line of another file
        "  gen/dia.py:6:34: note: view `.squeeze(0)`",  # (the column of the quoted text in this file's line)
    ]


def test_related_locations_name_their_file_in_json_and_sarif(cross_module, capsys):
    _, out = _check(capsys, "--no-cache", "--format", "json", "gen/dia.py")
    [item] = json.loads(out)
    utils, dia = str(cross_module / "gen" / "utils.py"), str(cross_module / "gen" / "dia.py")
    assert [(r["filename"], r["location"]["row"], r["message"]) for r in item["related"]] == [
        (dia, 6, "call site passing model output `out.logits`"),
        (utils, 4, "model output `out.logits`"),
        (dia, 6, "view `.squeeze(0)`"),
    ]
    _, out = _check(capsys, "--no-cache", "--format", "sarif", "gen/dia.py")
    [result] = json.loads(out)["runs"][0]["results"]
    assert [(r["physicalLocation"]["artifactLocation"]["uri"], r["physicalLocation"]["region"]["startLine"])
            for r in result["relatedLocations"]] == [("gen/dia.py", 6), ("gen/utils.py", 4), ("gen/dia.py", 6)]


def test_a_helpers_view_step_names_the_helpers_file_at_the_call(two_files, capsys):
    """The call's finding carries the helper's own view steps: they are lines of the helper's file."""
    (two_files / "pkg" / "helpers.py").write_text(
        "def scale_by_temperature_(logits, temperature):\n    last = logits[:, -1]\n    last.div_(temperature)\n")
    _, out = _check(capsys, "--no-cache", "--format", "full", "pkg/actor.py")
    assert out.splitlines()[1:] == [
        "  pkg/helpers.py:3:5: note: the write in `scale_by_temperature_()`",
        "  pkg/actor.py:6:20: note: model output `output.logits`",
        "  pkg/actor.py:6:33: note: view `.squeeze(0)`",
        "  pkg/helpers.py:2:1: note: view `[:, -1]`",
    ]


# ---- the language server, with only the caller's buffer open

pytest.importorskip("pygls")
pytest_lsp = pytest.importorskip("pytest_lsp")
from lsprotocol import types  # noqa: E402
from pytest_lsp import ClientServerConfig, LanguageClient  # noqa: E402


@pytest_lsp.fixture(config=ClientServerConfig(
    server_command=[sys.executable, "-m", "inplace_lint", "server"],
    server_env={**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])},
))
async def client(lsp_client: LanguageClient):
    await lsp_client.initialize_session(types.InitializeParams(capabilities=types.ClientCapabilities()))
    yield
    await lsp_client.shutdown_session()


@pytest.mark.asyncio
async def test_the_language_server_reports_the_call_in_the_open_buffer(client: LanguageClient, tmp_path):
    work = tmp_path / "proj"
    (work / "pkg").mkdir(parents=True)
    (work / "pyproject.toml").write_text('[project]\nname = "proj"\n')
    (work / "pkg" / "__init__.py").write_text("")
    (work / "pkg" / "helpers.py").write_text(HELPERS)
    actor = work / "pkg" / "actor.py"
    actor.write_text(ACTOR)
    uri = actor.as_uri()
    client.text_document_did_open(types.DidOpenTextDocumentParams(
        text_document=types.TextDocumentItem(uri=uri, language_id="python", version=1, text=ACTOR)))
    await client.wait_for_notification(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
    [d] = client.diagnostics[uri]
    assert (d.code, d.range.start.line, d.range.start.character) == ("IPV001", 6, 4)
    assert d.message == AT_CALL.split(": IPV001 ", 1)[1]
    # the first related location is the helper's write, in the helper's file
    write = d.related_information[0]
    assert (write.location.uri, write.location.range.start.line, write.location.range.start.character,
            write.message) == ((work / "pkg" / "helpers.py").as_uri(), 5, 4, "the write in `scale_by_temperature_()`")
    assert [(r.location.uri, r.location.range.start.line) for r in d.related_information[1:]] == [(uri, 5), (uri, 5)]


@pytest.mark.asyncio
async def test_the_language_server_names_the_file_of_each_related_location(client: LanguageClient, tmp_path):
    work = tmp_path / "proj"
    (work / "gen").mkdir(parents=True)
    (work / "pyproject.toml").write_text('[project]\nname = "proj"\n')
    (work / "gen" / "__init__.py").write_text("")
    (work / "gen" / "utils.py").write_text(UTILS)
    dia = work / "gen" / "dia.py"
    dia.write_text(DIA)
    uri = dia.as_uri()
    client.text_document_did_open(types.DidOpenTextDocumentParams(
        text_document=types.TextDocumentItem(uri=uri, language_id="python", version=1, text=DIA)))
    await client.wait_for_notification(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
    [d] = client.diagnostics[uri]
    assert (d.code, d.range.start.line) == ("IPV001", 8)
    assert [(r.location.uri, r.location.range.start.line, r.message) for r in d.related_information] == [
        (uri, 5, "call site passing model output `out.logits`"),
        ((work / "gen" / "utils.py").as_uri(), 3, "model output `out.logits`"),
        (uri, 5, "view `.squeeze(0)`"),
    ]


def test_a_chain_through_the_helpers_module_is_reported_at_the_call_that_made_the_origin(two_files, capsys):
    """actor.py -> helpers.prepare -> helpers.scale_by_temperature_ (which keeps what it wrote): the
    write is reported in helpers.py, and the call in actor.py that passes the model output shows it too."""
    (two_files / "pkg" / "helpers.py").write_text(HELPERS + "\n\ndef prepare(logits, t):\n"
                                                  "    return scale_by_temperature_(logits, t)\n")
    (two_files / "pkg" / "actor.py").write_text(ACTOR.replace("scale_by_temperature_", "prepare"))
    assert _check(capsys, "--no-cache", "pkg/actor.py") == (1, (
        "pkg/actor.py:7:5: IPV001 `div_` in `scale_by_temperature_()` (pkg/helpers.py:6) writes in place to "
        "`logits_rmpad`, a view of model output `output.logits`; at this call: clone `logits_rmpad` before the "
        "call (`logits_rmpad = logits_rmpad.clone()`)\n"))
    assert _check(capsys, "--no-cache", "pkg/helpers.py") == (1, (
        "pkg/helpers.py:6:5: IPV001 `div_` writes in place to `logits`, a view of model output `output.logits`, "
        "passed by the call at line 11 [fix: unsafe]\n"))
