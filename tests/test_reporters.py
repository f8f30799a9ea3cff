"""CI outputs of ``inplace-lint check``: SARIF 2.1.0 (validated against the official schema), GitHub
workflow annotations with GitHub's escaping, ``--statistics`` and the closing summary."""
from __future__ import annotations

import json
import pathlib

import jsonschema
import pytest

from inplace_lint.source.problems import FileResult
from inplace_lint.adapters.cli import main
from inplace_lint.adapters.reporters import escape_data, escape_property, github_annotation, level
from inplace_lint.rules import RULES

SCHEMA = pathlib.Path(__file__).resolve().parent / "data" / "sarif-schema-2.1.0.json"
# line 3: IPV001 (warning); line 5: IPV004 (error) after a two-byte character, so byte and character
# columns differ (ast: byte 12, SARIF/GitHub: character 11)
SOURCE = (
    "def f(model, h, t):\n"
    "    x = model(h).logits.squeeze(0)\n"
    "    x.div_(t)\n"
    "    y = output.logits.expand(3)\n"
    "    \u00e9 = 1; y.mul_(t)\n"
)


@pytest.fixture
def bad(tmp_path, monkeypatch):
    (tmp_path / "src dir").mkdir()
    path = tmp_path / "src dir" / "bad.py"
    path.write_text(SOURCE, encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    return path


def test_levels_decided_in_one_table():
    assert {code: level(code) for code in RULES if level(code) == "error"} == {"IPV002": "error", "IPV004": "error"}
    assert [level(code) for code in RULES] == ["warning", "error", "warning", "error", "warning", "warning", "warning"]


def test_sarif_validates_against_official_schema(bad, capsys):
    assert main(["check", "-q", "--format", "sarif", "src dir"]) == 1
    log = json.loads(capsys.readouterr().out)
    schema = json.loads(SCHEMA.read_text(encoding="utf-8"))
    jsonschema.validate(log, schema, cls=jsonschema.Draft4Validator)
    [run] = log["runs"]
    driver = run["tool"]["driver"]
    assert (driver["name"], driver["version"]) == ("inplace-lint", "0.1.0")
    assert "informationUri" not in driver  # the package metadata names no address: none is made up
    assert [r["id"] for r in driver["rules"]] == list(RULES)
    rule1 = driver["rules"][0]
    assert rule1["name"] == "inplace-on-model-output"
    assert rule1["shortDescription"]["text"] == RULES["IPV001"].summary
    assert rule1["fullDescription"]["text"] == RULES["IPV001"].what
    assert "helpUri" not in rule1
    assert [(r["ruleId"], r["ruleIndex"], r["level"]) for r in run["results"]] == [
        ("IPV001", 0, "warning"), ("IPV004", 3, "error")]
    assert run["results"][0]["message"]["text"] == "`div_` writes in place to `x`, a view of model output `model(h).logits`"
    locs = [r["locations"][0]["physicalLocation"] for r in run["results"]]
    assert locs[0]["artifactLocation"] == {"uri": "src%20dir/bad.py", "uriBaseId": "%SRCROOT%"}
    assert [loc["region"] for loc in locs] == [
        {"startLine": 3, "startColumn": 5, "endLine": 3, "endColumn": 14},
        {"startLine": 5, "startColumn": 12, "endLine": 5, "endColumn": 21},
    ]
    assert run["columnKind"] == "unicodeCodePoints"
    assert run["originalUriBaseIds"]["%SRCROOT%"]["uri"] == pathlib.Path.cwd().as_uri() + "/"


def test_sarif_clean_run_is_valid_and_empty(bad, capsys):
    (bad.parent / "bad.py").write_text("def f(x, t):\n    return x / t\n")
    assert main(["check", "-q", "--format", "sarif", "src dir"]) == 0
    log = json.loads(capsys.readouterr().out)
    jsonschema.validate(log, json.loads(SCHEMA.read_text(encoding="utf-8")), cls=jsonschema.Draft4Validator)
    assert log["runs"][0]["results"] == []


def test_sarif_path_outside_cwd_is_an_absolute_file_uri(bad, capsys, monkeypatch):
    monkeypatch.chdir(bad.parent / "..")
    (bad.parent.parent / "elsewhere").mkdir()
    monkeypatch.chdir(bad.parent.parent / "elsewhere")
    assert main(["check", "-q", "--format", "sarif", str(bad)]) == 1
    loc = json.loads(capsys.readouterr().out)["runs"][0]["results"][0]["locations"][0]["physicalLocation"]
    assert loc["artifactLocation"] == {"uri": bad.as_uri()}


def test_github_annotations(bad, capsys):
    assert main(["check", "-q", "--format", "github", "src dir"]) == 1
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 2
    assert lines[0].startswith(
        "::warning file=src dir/bad.py,line=3,col=5,endLine=3,endColumn=14,title=IPV001::"
        "`div_` writes in place to `x`, a view of model output `model(h).logits`")
    assert lines[1].startswith(
        "::error file=src dir/bad.py,line=5,col=12,endLine=5,endColumn=21,title=IPV004::`mul_` writes")


def test_github_escaping():
    assert escape_data("50% a\r\nb: c, d") == "50%25 a%0D%0Ab: c, d"
    assert escape_property("a:b,c%\n") == "a%3Ab%2Cc%25%0A"
    from inplace_lint.pipeline import check_source
    from inplace_lint.config import DEFAULT_SETTINGS

    [finding] = check_source(SOURCE.splitlines(keepends=True)[0] + "    output.logits.div_(t)\n", "x",
                             DEFAULT_SETTINGS).findings
    line = github_annotation(FileResult("dir,1/a:b.py", [finding]), finding)
    assert line.startswith("::warning file=dir%2C1/a%3Ab.py,line=2,col=5,endLine=2,endColumn=26,title=IPV001::")


def test_statistics(bad, capsys):
    (bad.parent / "more.py").write_text("def g(outputs, t):\n    outputs[0].mul_(t)\n    outputs[1].add_(t)\n")
    assert main(["check", "--statistics", "src dir"]) == 1
    captured = capsys.readouterr()
    assert captured.out == ("    3  IPV001  inplace-on-model-output\n"
                            "    1  IPV004  inplace-on-expanded-tensor\n")
    assert captured.err == "Scanned 2 files: 4 findings in 2 files (IPV001: 3, IPV004: 1).\n"


def test_statistics_only_with_text_format(bad, capsys):
    assert main(["check", "--statistics", "--format", "json", "src dir"]) == 2
    assert "--statistics prints a text table" in capsys.readouterr().err


def test_summary_on_stderr_unless_quiet(bad, capsys):
    (bad.parent / "ok.py").write_text("x = 1\n")
    (bad.parent / "broken.py").write_text("def f(:\n")
    assert main(["check", "--format", "json", "src dir"]) == 1
    captured = capsys.readouterr()
    # the two findings, and the file that does not parse as IPV000 (issue 11)
    assert [item["code"] for item in json.loads(captured.out)] == ["IPV001", "IPV004", "IPV000"]
    assert captured.err.splitlines()[-1] == (
        "Scanned 3 files: 2 findings in 1 file (IPV001: 1, IPV004: 1); 1 file could not be read or parsed.")
    assert main(["check", "-q", "src dir/ok.py"]) == 0
    assert capsys.readouterr().err == ""
    assert main(["check", "src dir/ok.py"]) == 0
    assert capsys.readouterr().err == "Scanned 1 file: no findings.\n"


def test_one_project_address_from_the_metadata_for_every_link(bad, capsys, monkeypatch):
    """When the package metadata names the project's address (``url``/``project_urls`` in setup.cfg), the
    rule links of JSON and SARIF, SARIF's informationUri and the crash message all use that one address."""
    import inplace_lint
    from inplace_lint import report_hint

    monkeypatch.setattr(inplace_lint, "project_url", lambda: "https://example.org/ipl")
    main(["check", "-q", "--format", "json", "src dir"])
    assert {i["url"] for i in json.loads(capsys.readouterr().out)} == {
        "https://example.org/ipl/blob/main/docs/rules.md#ipv001", "https://example.org/ipl/blob/main/docs/rules.md#ipv004"}
    main(["check", "-q", "--format", "sarif", "src dir"])
    driver = json.loads(capsys.readouterr().out)["runs"][0]["tool"]["driver"]
    assert driver["informationUri"] == "https://example.org/ipl"
    assert driver["rules"][0]["helpUri"] == "https://example.org/ipl/blob/main/docs/rules.md#ipv001"
    assert report_hint() == "please report it at https://example.org/ipl/issues"


def test_project_address_is_read_from_the_installed_metadata():
    """setup.cfg names no address, so none is given anywhere (no address is made up)."""
    import configparser

    import inplace_lint
    from tests.conftest import ROOT

    cfg = configparser.ConfigParser()
    cfg.read(ROOT / "setup.cfg")
    named = cfg["metadata"].get("url") or cfg["metadata"].get("project_urls")
    assert inplace_lint.project_url() == (named.split("=")[-1].strip() if named else None)
