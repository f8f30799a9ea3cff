"""Hostile path names through ``check`` and ``fix`` (issue 19): symlink loops (named first or second, met
while walking a folder, given as ``--stdin-filename``, or as a config file), dangling links, FIFOs (never
read: reading one blocks), devices, unreadable files and folders, names that are not UTF-8. Each gives an
``IPV000`` line or a usage error with its exit code, never a traceback and never a hang.

The CLI runs in a subprocess (a regression that blocks on a FIFO then fails on the timeout instead of
hanging the suite). Unreadable paths are real: as root, whose reads never fail for want of permission,
the run drops ``CAP_DAC_OVERRIDE`` and ``CAP_DAC_READ_SEARCH`` with ``setpriv`` (util-linux).
"""
from __future__ import annotations

import errno
import functools
import os
import shutil
import subprocess
import sys

import pytest

BAD = b"import torch\n\ndef f(model, ids, t):\n    logits = model(ids).logits\n    logits.div_(t)\n    return logits\n"
FIXED = (b"import torch\ntry:\n    from torch.distributed.tensor import DTensor\nexcept ImportError:  # torch < 2.5\n"
         b"    from torch.distributed._tensor import DTensor\n\ndef f(model, ids, t):\n"
         b"    logits = model(ids).logits\n"
         b"    if isinstance(logits, DTensor) and not isinstance(t, DTensor) and getattr(t, \"ndim\", 0) > 0:\n"
         b"        logits = logits.full_tensor()\n    logits = logits.clone().div_(t)\n    return logits\n")  # the default style, inline
LOOP = os.strerror(errno.ELOOP)
MISSING = os.strerror(errno.ENOENT)
DENIED = os.strerror(errno.EACCES)
DROP_CAPS = ["setpriv", "--bounding-set", "-dac_override,-dac_read_search"]

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="symlinks, FIFOs and modes are POSIX")


def run(cwd, *args, stdin=b"", unprivileged=False):
    """``inplace-lint ARGS`` in ``cwd`` (no cache); (exit code, stdout bytes, stderr text)."""
    cmd = [sys.executable, "-m", "inplace_lint", *args]
    if unprivileged and os.geteuid() == 0:
        cmd = DROP_CAPS + cmd
    proc = subprocess.run(cmd, cwd=cwd, input=stdin, capture_output=True, timeout=120,
                          env={**os.environ, "INPLACE_LINT_NO_CACHE": "1"})
    err = proc.stderr.decode("utf-8", "backslashreplace")
    assert "Traceback" not in err, err
    return proc.returncode, proc.stdout, err


@functools.lru_cache(maxsize=None)
def _can_drop_root_reads() -> bool:
    if os.geteuid() != 0:
        return True
    if shutil.which("setpriv") is None:
        return False
    import tempfile

    with tempfile.NamedTemporaryFile() as fh:
        os.chmod(fh.name, 0)
        probe = subprocess.run(DROP_CAPS + [sys.executable, "-c", f"open({fh.name!r})"], capture_output=True)
    return probe.returncode != 0 and b"PermissionError" in probe.stderr


def unreadable(path):
    """``path`` made unreadable for the run (skips when running as root with no way to drop root's reads)."""
    if not _can_drop_root_reads():
        pytest.skip("running as root without a working setpriv: root reads every file, so no path is unreadable")
    os.chmod(path, 0)


@pytest.fixture
def tree(tmp_path):
    """``ok.py`` (clean) and ``bad.py`` (one fixable IPV001) in a folder of their own."""
    (tmp_path / "ok.py").write_bytes(b"x = 1\n")
    (tmp_path / "bad.py").write_bytes(BAD)
    yield tmp_path
    for p in tmp_path.rglob("*"):  # let pytest clean up what a test made unreadable
        if not p.is_symlink():
            os.chmod(p, 0o755)


def loop(folder, name="a.py"):
    """``name`` -> ``b.py`` -> ``name``: a symlink loop."""
    os.symlink("b.py", folder / name)
    os.symlink(name, folder / "b.py")


def expect_unreadable(cwd, name, why, *paths):
    """check: the IPV000 line for ``name`` and exit 1; fix: the file skipped with the same words, exit 1."""
    rc, out, err = run(cwd, "check", *paths)
    assert rc == 1
    assert f"{name}:1:1: IPV000 cannot read: {why}" in out.decode().splitlines()
    rc, out, err = run(cwd, "fix", *paths)
    assert rc == 1
    assert f"{name}: cannot read: {why}; skipped" in err.splitlines()


def test_symlink_loop_named_first(tree):
    loop(tree)
    rc, out, err = run(tree, "check", "a.py")
    assert (rc, out) == (1, f"a.py:1:1: IPV000 cannot read: {LOOP}\n".encode())
    assert err.splitlines()[-1] == "Scanned 1 file: no findings; 1 file could not be read or parsed."
    rc, out, err = run(tree, "fix", "a.py")
    assert (rc, out) == (1, b"")
    assert err.splitlines() == [f"a.py: cannot read: {LOOP}; skipped",
                                "0 fixes applied in 0 files; 0 findings remain; 1 file skipped. Scanned 1 file."]


def test_symlink_loop_named_second(tree):
    loop(tree)
    rc, out, _ = run(tree, "check", "bad.py", "a.py")
    assert rc == 1
    assert out.decode().splitlines() == [  # sorted by path
        f"a.py:1:1: IPV000 cannot read: {LOOP}",
        "bad.py:5:5: IPV001 `div_` writes in place to `logits`, model output `model(ids).logits` [fix: safe]"]
    rc, out, err = run(tree, "fix", "bad.py", "a.py")
    assert rc == 1
    assert err.splitlines() == [f"a.py: cannot read: {LOOP}; skipped",
                                "1 fix applied in 1 file; 0 findings remain; 1 file skipped. Scanned 2 files."]
    assert (tree / "bad.py").read_bytes() == FIXED


def test_symlink_loop_met_in_a_folder_and_a_dangling_link(tree):
    loop(tree)
    os.symlink("nowhere.py", tree / "dangling.py")
    rc, out, _ = run(tree, "check", ".")
    assert rc == 1
    assert sorted(out.decode().splitlines()) == [
        f"./a.py:1:1: IPV000 cannot read: {LOOP}",
        f"./b.py:1:1: IPV000 cannot read: {LOOP}",
        "./bad.py:5:5: IPV001 `div_` writes in place to `logits`, model output `model(ids).logits` [fix: safe]",
        f"./dangling.py:1:1: IPV000 cannot read: {MISSING}"]
    rc, out, err = run(tree, "fix", ".")
    assert rc == 1
    assert sorted(err.splitlines()) == [
        f"./a.py: cannot read: {LOOP}; skipped", f"./b.py: cannot read: {LOOP}; skipped",
        f"./dangling.py: cannot read: {MISSING}; skipped",
        "1 fix applied in 1 file; 0 findings remain; 3 files skipped. Scanned 5 files."]
    assert (tree / "bad.py").read_bytes() == FIXED


def test_dangling_link_named(tree):
    os.symlink("nowhere.py", tree / "dangling.py")
    expect_unreadable(tree, "dangling.py", MISSING, "dangling.py")


def test_symlink_loop_as_stdin_filename(tree):
    """The name only places the text (config search, per-file-ignores, output): nothing is read from it."""
    loop(tree)
    rc, out, err = run(tree, "check", "--stdin-filename", "a.py", "-", stdin=BAD)
    assert (rc, out.decode().splitlines()) == (1, [
        "a.py:5:5: IPV001 `div_` writes in place to `logits`, model output `model(ids).logits` [fix: safe]"])
    rc, out, err = run(tree, "fix", "--stdin-filename", "a.py", "-", stdin=BAD)
    assert (rc, out) == (0, FIXED)


def test_fifo_as_stdin_filename_is_not_opened(tree):
    os.mkfifo(tree / "pipe.py")
    rc, out, _ = run(tree, "fix", "--stdin-filename", "pipe.py", "-", stdin=BAD)
    assert (rc, out) == (0, FIXED)


def test_symlink_loop_and_fifo_as_config_files_are_no_config(tree):
    """A config file name that is a loop or a FIFO is not a config file (as a missing one): the defaults."""
    loop(tree, "setup.cfg")
    os.mkfifo(tree / "pyproject.toml")
    rc, out, _ = run(tree, "check", "bad.py")
    assert rc == 1 and out.decode().startswith("bad.py:5:5: IPV001 ")
    rc, _, err = run(tree, "fix", "bad.py")
    assert rc == 0 and err.splitlines()[-1].startswith("1 fix applied in 1 file")


@pytest.mark.parametrize("where", ["named", "in a folder"])
def test_fifo_is_never_read(tree, where):
    os.mkfifo(tree / "pipe.py")
    name = "pipe.py" if where == "named" else "./pipe.py"
    expect_unreadable(tree, name, "not a regular file (a FIFO)", "pipe.py" if where == "named" else ".")


@pytest.mark.parametrize("device", ["/dev/null", "/dev/zero"])
def test_device_is_never_read(tree, device):
    if not os.path.exists(device):
        pytest.skip(f"no {device}")
    expect_unreadable(tree, device, "not a regular file (a character device)", device)


def test_device_link_met_in_a_folder(tree):
    os.symlink("/dev/zero", tree / "zero.py")  # read, it would never end
    expect_unreadable(tree, "./zero.py", "not a regular file (a character device)", ".")


def test_unreadable_file(tree):
    (tree / "secret.py").write_bytes(BAD)
    unreadable(tree / "secret.py")
    for paths, name in ((["secret.py"], "secret.py"), (["."], "./secret.py")):
        rc, out, _ = run(tree, "check", *paths, unprivileged=True)
        assert rc == 1
        assert f"{name}:1:1: IPV000 cannot read: {DENIED}" in out.decode().splitlines()
        rc, _, err = run(tree, "fix", *paths, unprivileged=True)
        assert rc == 1
        assert f"{name}: cannot read: {DENIED}; skipped" in err.splitlines()


@pytest.mark.parametrize("git", [False, True], ids=["walk", "git"])
def test_unreadable_folder(tree, git):
    """A folder that cannot be listed is reported, not silently left out (named, or met in a walk: os.walk's
    error, or git's warning)."""
    if git:
        if shutil.which("git") is None:
            pytest.skip("git is not installed")
        subprocess.run(["git", "init", "-q", str(tree)], check=True)
    (tree / "sub").mkdir()
    (tree / "sub" / "m.py").write_bytes(BAD)
    unreadable(tree / "sub")
    for paths, name in ((["sub"], "sub"), (["."], "./sub")):
        rc, out, _ = run(tree, "check", *paths, unprivileged=True)
        assert rc == 1
        assert f"{name}:1:1: IPV000 cannot read: {DENIED}" in out.decode().splitlines()
        rc, _, err = run(tree, "fix", *paths, unprivileged=True)
        assert rc == 1
        assert f"{name}: cannot read: {DENIED}; skipped" in err.splitlines()
    rc, out, _ = run(tree, "check", "sub/m.py", unprivileged=True)  # in it: the config search goes on above it
    assert (rc, out) == (1, f"sub/m.py:1:1: IPV000 cannot read: {DENIED}\n".encode())


@pytest.mark.parametrize("name", ["pyproject.toml", "setup.cfg"])
def test_unreadable_config_file_is_a_usage_error(tree, name):
    (tree / name).write_text("[tool.inplace-lint]\nselect = ['IPV001']\n" if name == "pyproject.toml"
                             else "[inplace_lint]\nselect = IPV001\n")
    unreadable(tree / name)
    for cmd in ("check", "fix"):
        rc, out, err = run(tree, cmd, "bad.py", unprivileged=True)
        assert (rc, out) == (2, b"")
        assert err == f"inplace-lint: error: {tree / name}: cannot read: {DENIED}\n"


def test_name_that_is_not_utf8(tree):
    """Printed as its own bytes (as ls does), quoted byte for byte in SARIF, and fixed in place."""
    name = b"bad\xff.py"
    with open(os.path.join(os.fsencode(tree), name), "wb") as fh:
        fh.write(BAD)
    proc = subprocess.run([sys.executable, "-m", "inplace_lint", "check", os.fsdecode(name)], cwd=tree,
                          capture_output=True, timeout=120,
                          env={**os.environ, "INPLACE_LINT_NO_CACHE": "1", "PYTHONIOENCODING": "utf-8"})
    assert proc.returncode == 1, proc.stderr
    assert proc.stdout == name + b":5:5: IPV001 `div_` writes in place to `logits`, model output " \
                                 b"`model(ids).logits` [fix: safe]\n"
    rc, out, _ = run(tree, "check", "--format", "sarif", os.fsdecode(name))
    assert rc == 1 and b'"uri": "bad%FF.py"' in out
    if shutil.which("git") is not None:  # met while listing a folder with git (ls-files -z: raw bytes)
        subprocess.run(["git", "init", "-q", str(tree)], check=True)
        rc, out, _ = run(tree, "check", ".")
        assert rc == 1 and any(line.startswith(b"./" + name + b":5:5: IPV001 ") for line in out.splitlines())
    rc, out, err = run(tree, "fix", os.fsdecode(name))
    assert rc == 0, err
    with open(os.path.join(os.fsencode(tree), name), "rb") as fh:
        assert fh.read() == FIXED


def test_flake8_with_the_plugin(tree):
    """flake8 reads the files itself (E902 for what it cannot read; a FIFO blocks flake8's own read, which
    the plugin cannot prevent); the plugin's project lookup does not crash on a loop or a dangling link."""
    loop(tree)
    os.symlink("nowhere.py", tree / "dangling.py")
    proc = subprocess.run([sys.executable, "-m", "flake8", "--select", "IPV,E902", "a.py", "dangling.py", "bad.py"],
                          cwd=tree, capture_output=True, text=True, timeout=120)
    assert "Traceback" not in proc.stderr, proc.stderr
    assert proc.returncode == 1
    assert proc.stdout.splitlines() == [
        f"a.py:0:1: E902 OSError: [Errno {errno.ELOOP}] {LOOP}: 'a.py'",
        "bad.py:5:5: IPV001 `div_` writes in place to `logits`, model output `model(ids).logits`",
        f"dangling.py:0:1: E902 FileNotFoundError: [Errno {errno.ENOENT}] {MISSING}: 'dangling.py'"]


def test_fifo_elsewhere_in_the_project_does_not_block_its_build(tree):
    """Checking one file of a project reads every other file for its summaries: a FIFO among them hung
    ``check bad.py`` (and the language server) before the file named was even read."""
    (tree / "pyproject.toml").write_text("")
    os.mkfifo(tree / "pipe.py")
    rc, out, _ = run(tree, "check", "bad.py")
    assert (rc, out.decode()) == (1, "bad.py:5:5: IPV001 `div_` writes in place to `logits`, model output "
                                     "`model(ids).logits` [fix: safe]\n")
    rc, _, err = run(tree, "fix", "bad.py")
    assert rc == 0 and err.splitlines()[-1].startswith("1 fix applied in 1 file")
    assert (tree / "bad.py").read_bytes() == FIXED
