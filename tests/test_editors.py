"""The editor snippets of docs/editors.md stay true: the Neovim 0.7 snippet runs in a real headless Neovim
(skipped with a reason when ``nvim`` is not installed) and shows the server's diagnostics."""
from __future__ import annotations

import json
import os
import pathlib
import re
import shutil
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
DOC = ROOT / "docs" / "editors.md"
BAD = "def f(model, h, t):\n    x = model(h).logits.squeeze(0)\n    x.div_(t)\n"

# after the server's first diagnostics arrive (or 30 s), write them as JSON and quit
PROBE = """
local ok = vim.wait(30000, function() return #vim.diagnostic.get(0) > 0 end, 50)
local out = {}
for _, d in ipairs(vim.diagnostic.get(0)) do
  table.insert(out, { lnum = d.lnum, col = d.col, code = d.code, source = d.source })
end
local clients = {}
for _, c in pairs(vim.lsp.get_active_clients()) do table.insert(clients, c.name) end
-- the quick fixes offered on the finding's line (what `vim.lsp.buf.code_action()` would list)
local actions = {}
if ok and vim.lsp.diagnostic.get_line_diagnostics then
  vim.api.nvim_win_set_cursor(0, { out[1].lnum + 1, out[1].col })
  local params = vim.lsp.util.make_range_params()
  params.context = { diagnostics = vim.lsp.diagnostic.get_line_diagnostics() }
  local res = vim.lsp.buf_request_sync(0, "textDocument/codeAction", params, 20000)
  for _, r in pairs(res or {}) do
    for _, a in ipairs(r.result or {}) do table.insert(actions, a.title) end
  end
end
vim.fn.writefile({ vim.fn.json_encode({ ok = ok, diagnostics = out, clients = clients, actions = actions }) },
                 vim.env.PROBE_OUT)
vim.cmd("qa!")
"""


def snippet(marker: str, language: str) -> str:
    text = DOC.read_text(encoding="utf-8")
    match = re.search(re.escape(marker) + r"\s*```" + language + r"\n(.*?)```", text, re.S)
    assert match, f"no {language} block after {marker} in {DOC}"
    return match.group(1)


def test_neovim_snippet_is_in_the_docs():
    lua = snippet("<!-- nvim-0.7-snippet -->", "lua")
    assert "vim.lsp.start_client" in lua and "vim.lsp.start(" not in lua  # 0.7 has no vim.lsp.start
    assert '{ "inplace-lint", "server" }' in lua


@pytest.mark.skipif(shutil.which("nvim") is None,
                    reason="nvim is not installed (Debian/Ubuntu: apt-get install neovim)")
def test_neovim_snippet_shows_diagnostics(tmp_path):
    (tmp_path / "bin").mkdir()
    shim = tmp_path / "bin" / "inplace-lint"  # the `inplace-lint` the snippet runs: this checkout
    shim.write_text(f"#!/bin/sh\nPYTHONPATH={ROOT} exec {sys.executable} -m inplace_lint \"$@\"\n")
    shim.chmod(0o755)
    (tmp_path / "init.lua").write_text(snippet("<!-- nvim-0.7-snippet -->", "lua"))
    (tmp_path / "probe.lua").write_text(PROBE)
    (tmp_path / "m.py").write_text(BAD)
    env = {**os.environ, "PATH": f"{tmp_path / 'bin'}{os.pathsep}{os.environ.get('PATH', '')}",
           "PROBE_OUT": str(tmp_path / "out.json"), "XDG_STATE_HOME": str(tmp_path / "state"),
           "XDG_DATA_HOME": str(tmp_path / "data"), "XDG_CONFIG_HOME": str(tmp_path / "config")}
    proc = subprocess.run(["nvim", "--headless", "-u", "init.lua", "-c", "luafile probe.lua", "m.py"],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=90)
    version = subprocess.run(["nvim", "--version"], capture_output=True, text=True).stdout.splitlines()[0]
    assert (tmp_path / "out.json").exists(), f"{version}: {proc.stdout}{proc.stderr}"
    result = json.loads((tmp_path / "out.json").read_text())
    assert result["ok"], f"{version}: no diagnostics within 30 s ({result})"
    assert result["clients"] == ["inplace-lint"]
    assert result["diagnostics"] == [{"lnum": 2, "col": 4, "code": "IPV001", "source": "inplace-lint"}]
    if result["actions"]:  # Neovim versions that still have vim.lsp.diagnostic.get_line_diagnostics
        assert len(result["actions"]) == 2 and result["actions"][0].startswith("IPV001: "), result["actions"]
        assert result["actions"][1].startswith("Fix all inplace-lint findings in file")
