"""The project cache holds data, never code (issue 19, item 1), and is shared by content across
projects (issue 21, item 5): a planted, corrupt, truncated, foreign or hostile cache file runs nothing,
changes no finding and is rebuilt; a file identical in several copies of a project is walked once."""
from __future__ import annotations

import dataclasses
import enum
import json
import os
import pathlib
import pickle
import shutil
import subprocess
import sys

import pytest

from inplace_lint import workspace
from inplace_lint.adapters.cli import main
from inplace_lint.analysis import cache, codec
from inplace_lint.analysis.resolve import find_root
from inplace_lint.config import DEFAULT_SETTINGS

FIXTURES = pathlib.Path(__file__).resolve().parent.parent / "fixtures" / "project"


@pytest.fixture(autouse=True)
def fresh_process_state(own_cache):
    """Each test with its own user folder (its own signing key) and no project kept from another test."""
    yield


def _copy(name: str, where: pathlib.Path) -> pathlib.Path:
    shutil.copytree(FIXTURES / name, where)
    return where


def _check(args, capsys):
    """``check`` in this process: (exit code, findings as (path relative to the checked folder, line, col,
    code, message), stderr)."""
    workspace._PROJECTS.clear()  # what a new process would have: only the disk (main() resets the cache's memory)
    code = main(["check", "-j", "1", *args])
    out, err = capsys.readouterr()
    root = pathlib.Path(args[-1]).resolve()
    found = []
    for line in out.splitlines():
        path, lineno, col, rest = line.split(":", 3)
        found.append((str(pathlib.Path(path).resolve().relative_to(root)), int(lineno), int(col), rest.strip()))
    return code, sorted(found), err


class _Payload:
    """Unpickling this runs ``os.system`` (what a planted pickle cache did on main)."""

    def __init__(self, marker: pathlib.Path) -> None:
        self.marker = marker

    def __reduce__(self):
        return os.system, (f"touch {self.marker}",)


def _documents(cache_dir: pathlib.Path):
    return sorted(cache_dir.glob("manifests/*.json")) + sorted(cache_dir.glob("objects/*/*.json"))


def test_a_planted_pickle_runs_nothing_and_changes_no_finding(tmp_path, capsys):
    project = _copy("rlpkg", tmp_path / "rlpkg")
    marker = tmp_path / "marker"
    payload = pickle.dumps(_Payload(marker))
    pickle.loads(payload)  # the payload is real: unpickling it creates the marker
    assert marker.exists()
    marker.unlink()
    expected = _check(["-q", "--no-cache", str(project)], capsys)[:2]
    assert expected[0] == 1 and len(expected[1]) == 4  # rlpkg: three writes and one call site
    # a cache written, then every document of it (and main's old pickle name) replaced by the payload
    _check(["-q", str(project)], capsys)
    cache_dir = project / ".inplace_lint_cache"
    planted = _documents(cache_dir) + [cache_dir / "project-0123456789abcdef.pickle"]
    assert len(planted) == 7  # a manifest, five objects (one per file), and main's old name
    for path in planted:
        path.write_bytes(payload)
    code, found, err = _check(["-q", "-v", str(project)], capsys)
    assert not marker.exists()
    assert (code, found) == expected
    notes = [line for line in err.splitlines() if line.startswith("inplace-lint: ignored")]
    assert len(notes) == 6  # the manifest, then each file's object (looked up by its text)
    assert all(n.startswith("inplace-lint: ignored the cache file ") and n.endswith(
        ": not an inplace-lint cache file; rebuilt") for n in notes)
    # rebuilt: the next run reads what this one wrote, and notes nothing
    code, found, err = _check(["-q", "-v", str(project)], capsys)
    assert (code, found, err) == (*expected, "")
    assert not marker.exists()


def _plant_and_check(project, capsys, change, expected):
    """Write a cache, ``change(path, text)`` -> new bytes for each document, check with ``-v``:
    the findings and exit code of a check without cache, and one note per document ignored."""
    _check(["-q", str(project)], capsys)
    documents = _documents(project / ".inplace_lint_cache")
    for path in documents:
        path.write_bytes(change(path, path.read_bytes()))
    code, found, err = _check(["-q", "-v", str(project)], capsys)
    assert (code, found) == expected
    return [line for line in err.splitlines() if line.startswith("inplace-lint: ignored")]


def _resign(body: bytes) -> bytes:
    """A document signed with this user's key (only the type checks stand between it and the analysis)."""
    key = cache.user_key()
    return f"inplace-lint-cache {cache.FORMAT} {cache._sign(key, body)}\n".encode() + body


def test_hostile_json_is_ignored_and_rebuilt(tmp_path, capsys):
    project = _copy("rlpkg", tmp_path / "rlpkg")
    marker = tmp_path / "marker"
    expected = _check(["-q", "--no-cache", str(project)], capsys)[:2]

    def unsigned_lie(path, data):
        """Well-formed and of the right shape, but with no findings anywhere (what a fork could ship to
        hide its hazards): not signed with this user's key."""
        head, _, body = data.partition(b"\n")
        doc = json.loads(body)
        for item in doc.get("variants", ()):
            item[1][6] = []  # the file's local findings
            for summary in item[1][4]:
                summary[3] = []  # what its functions write
        return head + b"\n" + json.dumps(doc).encode()

    notes = _plant_and_check(project, capsys, unsigned_lie, expected)
    assert len(notes) == 6 and all("not signed with this user's key" in n for n in notes)  # the manifest, 5 objects

    def wrong_types(path, data):
        """Signed, but each value of the wrong type (a text where a number goes, an object for a list)."""
        doc = json.loads(data.partition(b"\n")[2])
        if doc["kind"] == "manifest":
            doc["files"] = {f: [str(e[0])] + e[1:] for f, e in doc["files"].items()}
        else:
            for item in doc["variants"]:
                item[1][0] = [{"__class__": "os.system", "args": [f"touch {marker}"]}]
        return _resign(json.dumps(doc).encode())

    notes = _plant_and_check(project, capsys, wrong_types, expected)
    assert len(notes) == 6 and "bad entry for" in notes[0]
    assert all(n.endswith(": a list of 10 was expected; walked again") for n in notes[1:])  # an origin: 10 fields

    def objects_only(path, data):
        """The manifest left alone, every object's origin table and findings of the wrong shape."""
        if "manifests" in path.parts:
            return data
        return wrong_types(path, data)

    notes = _plant_and_check(project, capsys, objects_only, expected)
    assert len(notes) == 5 and all("ignored a cached result of" in n for n in notes)

    def reasons(notes):
        return [n.rpartition(".json: ")[2] for n in notes]

    notes = _plant_and_check(project, capsys, lambda path, data: data[:len(data) // 2], expected)  # truncated
    assert reasons(notes) == ["not signed with this user's key (written elsewhere, or changed since); rebuilt"] * 6
    notes = _plant_and_check(project, capsys, lambda path, data: _resign(b'{"kind": "manifest", "code": 7}'),
                             expected)
    assert reasons(notes) == ["not a cache manifest of this version; rebuilt"] + [
        "not a cache object of this version; rebuilt"] * 5
    notes = _plant_and_check(project, capsys, lambda path, data: _resign(b"[" * 100000), expected)
    assert len(notes) == 6 and all(r.startswith("not JSON") for r in reasons(notes))
    older = cache.FORMAT - 1
    notes = _plant_and_check(project, capsys, lambda path, data: data.replace(
        f"cache {cache.FORMAT} ".encode(), f"cache {older} ".encode(), 1), expected)
    assert reasons(notes) == [f"format {older}, not {cache.FORMAT}; rebuilt"] * 6
    assert not marker.exists()


def test_another_users_cache_is_foreign(tmp_path, capsys, monkeypatch):
    """The same documents under another key (another user, another machine) are not trusted."""
    project = _copy("rlpkg", tmp_path / "rlpkg")
    _check(["-q", str(project)], capsys)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "other-user"))
    code, found, err = _check(["-v", str(project)], capsys)
    assert "not signed with this user's key" in err
    assert err.splitlines()[-1] == "inplace-lint: cache: 5 files seen, 5 unique contents, 0 reused"
    # a CI matrix shares one key through the environment
    monkeypatch.setenv(cache.ENV_KEY, "a secret of this matrix")
    _check(["-q", str(project)], capsys)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "third-user"))
    code, found, err = _check(["-v", str(project)], capsys)
    assert err.splitlines()[-1] == "inplace-lint: cache: 5 files seen, 5 unique contents, 5 reused"


def _normal(value):
    """A value compared field by field, fields left out of ``==`` included, sets in a fixed order."""
    if dataclasses.is_dataclass(value):
        # the dataclass itself (a result read from the cache is a FileResult subclass: codec.CachedResult)
        kind = next(c for c in type(value).__mro__ if "__dataclass_fields__" in vars(c))
        return (kind.__name__,) + tuple(_normal(getattr(value, f.name)) for f in dataclasses.fields(value))
    if isinstance(value, (set, frozenset)):
        return ("set",) + tuple(sorted(repr(_normal(v)) for v in value))
    if isinstance(value, dict):
        return ("dict",) + tuple((k, _normal(v)) for k, v in value.items())
    if isinstance(value, (list, tuple)):
        return tuple(_normal(v) for v in value)
    if isinstance(value, enum.Enum):
        return value.value
    return value


@pytest.mark.parametrize("name", ["rlpkg", "chainpkg", "enginepkg", "flagpkg"])
def test_every_result_decodes_to_what_was_encoded(tmp_path, name):
    """Every field of every value type survives the JSON (a field added to one without the codec fails here),
    and a copy of the project at another place decodes to its own paths."""
    root = _copy(name, tmp_path / "a")
    project = workspace.load_project(str(next(root.rglob("*.py"))), DEFAULT_SETTINGS, workspace.ProjectMode(True, False))
    assert project.results
    kinds = set()
    for path, result in project.results.items():
        encoded = json.loads(json.dumps(codec.encode_result(result, str(find_root(path)))))
        decoded = codec.decode_result(encoded, path, str(find_root(path)))
        assert _normal(decoded) == _normal(result), path
        assert [f.digest() for f in decoded.functions.values()] == [f.digest() for f in result.functions.values()]
        moved = codec.decode_result(encoded, path.replace(str(tmp_path / "a"), "/elsewhere"), "/elsewhere")
        assert str(tmp_path) not in repr(moved)
        kinds.update(type(v).__name__ for r in [decoded] for v in [*r.functions.values(), *r.calls, *r.findings])
        kinds.update(type(w).__name__ for s in decoded.functions.values() for w in s.writes)
    if name == "rlpkg":
        assert kinds >= {"FunctionSummary", "CallSite", "LocalFinding", "ParamWrite"}


def test_three_copies_walk_each_text_once(tmp_path, capsys):
    """--cache-dir shared by three copies of a project: the same findings in each (and as without a cache),
    each text walked once, the counts exact; a copy with one file changed walks what depends on it."""
    forks = tmp_path / "forks"
    for i in range(3):
        _copy("rlpkg", forks / f"fork{i}")
    alone = _check(["-q", "--no-cache", str(forks / "fork0")], capsys)[1]
    shared = tmp_path / "shared-cache"
    walks = []
    from inplace_lint.analysis.project import Project

    original = Project.walk

    def counting(self, path):
        walks.append(path)
        return original(self, path)

    Project.walk = counting
    try:
        code, found, err = _check(["--cache-dir", str(shared), str(forks)], capsys)
    finally:
        Project.walk = original
    assert code == 1
    per_fork = {i: sorted((f[0].split("/", 1)[1],) + f[1:] for f in found if f[0].startswith(f"fork{i}/"))
                for i in range(3)}
    assert per_fork[0] == per_fork[1] == per_fork[2] == alone
    # 5 files a copy, 5 texts
    assert err.splitlines()[-1] == "inplace-lint: cache: 15 files seen, 5 unique contents, 10 reused"
    assert sorted(pathlib.Path(p).relative_to(forks).parts[0] for p in walks) == ["fork0"] * 5
    # again: everything from the cache
    code, found2, err = _check(["--cache-dir", str(shared), str(forks)], capsys)
    assert found2 == found
    assert err.splitlines()[-1] == "inplace-lint: cache: 15 files seen, 5 unique contents, 15 reused"
    # fork2's helper stops writing its argument: its caller's walk (the same text) must not be reused
    ops = forks / "fork2" / "rl" / "ops.py"
    ops.write_text(ops.read_text().replace("    logits.div_(t)  # a mutating helper", "    logits = logits / t  #"))
    expected2 = _check(["-q", "--no-cache", str(forks / "fork2")], capsys)[1]
    assert expected2 != alone
    code, found3, err = _check(["--cache-dir", str(shared), str(forks)], capsys)
    assert sorted((f[0].split("/", 1)[1],) + f[1:] for f in found3 if f[0].startswith("fork2/")) == expected2
    assert [f for f in found3 if not f[0].startswith("fork2/")] == [f for f in found if not f[0].startswith("fork2/")]
    # fork2: ops.py is new text; engine.py read its summary, walked again (a new variant); 13 reused
    assert err.splitlines()[-1] == "inplace-lint: cache: 15 files seen, 6 unique contents, 13 reused"


def test_parallel_check_and_a_quiet_run(tmp_path, capsys):
    forks = tmp_path / "forks"
    for i in range(3):
        _copy("chainpkg", forks / f"fork{i}")
    shared = tmp_path / "shared-cache"
    serial = _check(["--cache-dir", str(shared), str(forks)], capsys)
    workspace._PROJECTS.clear()
    code = main(["check", "-j", "2", "--cache-dir", str(shared), str(forks)])
    out, err = capsys.readouterr()
    assert code == serial[0]
    assert sorted(out.splitlines()) == sorted(
        f"{(forks / f[0])}:{f[1]}:{f[2]}: {f[3]}" for f in serial[1])
    assert err.splitlines()[-1].startswith("inplace-lint: cache: ")
    assert "reused" not in _check(["-q", "--cache-dir", str(shared), str(forks)], capsys)[2]


def test_a_tree_of_someone_else_is_cached_per_user(tmp_path, monkeypatch):
    root = tmp_path / "theirs"
    root.mkdir()
    assert cache.default_dir(root) == root / ".inplace_lint_cache"
    monkeypatch.setattr(os, "getuid", lambda: os.stat(root).st_uid + 1)
    elsewhere = cache.default_dir(root)
    assert elsewhere.parent == tmp_path / "user-cache" / "inplace-lint" / "projects"
    assert cache.default_dir(tmp_path / "other") != elsewhere  # keyed by the root


def test_writes_are_atomic(tmp_path, monkeypatch):
    key = cache.user_key()
    path = tmp_path / "c" / "doc.json"
    assert cache.write_document(path, key, {"kind": "object", "code": cache.code_key(), "n": 1}) is None
    before = path.read_bytes()

    def fail(src, dst):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", fail)
    assert "No space left" in cache.write_document(path, key, {"kind": "object", "code": cache.code_key(), "n": 2})
    assert path.read_bytes() == before
    assert sorted(p.name for p in path.parent.iterdir()) == ["doc.json"]  # no temporary file left
    assert cache.read_document(path, key, "object")["n"] == 1


def test_key_file_is_private_and_kept(tmp_path):
    key = cache.user_key()
    path = tmp_path / "user-cache" / "inplace-lint" / "cache-key"
    assert path.read_bytes()[:32] == key and len(key) == 32
    assert path.stat().st_mode & 0o077 == 0


def test_flake8_reads_a_shared_cache_dir(tmp_path, capsys):
    project = _copy("rlpkg", tmp_path / "rlpkg")
    shared = tmp_path / "shared"

    def flake8(*extra):
        proc = subprocess.run([sys.executable, "-m", "flake8", "--isolated", "--select=IPV", *extra, "rl/engine.py"],
                              cwd=project, capture_output=True, text=True, env=dict(os.environ))
        return sorted(line.split(" ")[0] for line in proc.stdout.splitlines())

    _check(["-q", "--cache-dir", str(shared), str(project)], capsys)
    assert flake8() == []  # alone: ops.scale_ is not seen
    assert flake8(f"--ipv-cache-dir={shared}") == ["rl/engine.py:10:9:", "rl/engine.py:11:16:", "rl/engine.py:9:9:"]  # and the call site


def test_a_new_mix_of_known_texts_picks_the_variant_that_holds(tmp_path, capsys):
    """engine.py reads ops.py's summary: two forks with two texts of ops.py leave two results of engine.py's
    one text; a third fork mixing known texts takes the one whose dependencies hold there, walking nothing."""
    from inplace_lint.analysis.project import Project

    forks = tmp_path / "forks"
    a, b, c = (_copy("rlpkg", forks / name) for name in ("a", "b", "c"))
    for fork, ops_changed, extra in ((a, False, 1), (b, True, 2), (c, False, 2)):
        (fork / "rl" / "extra.py").write_text(f"X = {extra}\n")
        if ops_changed:
            ops = fork / "rl" / "ops.py"
            ops.write_text(ops.read_text().replace("    logits.div_(t)  # a mutating helper", "    logits = logits / t  #"))
    expected = {f.name: _check(["-q", "--no-cache", str(f)], capsys)[1] for f in (a, b, c)}
    assert expected["a"] == expected["c"] != expected["b"]
    shared = tmp_path / "shared"
    _check(["--cache-dir", str(shared), str(a)], capsys)
    _check(["--cache-dir", str(shared), str(b)], capsys)
    walks = []
    original = Project.walk

    def counting(self, path):
        walks.append(path)
        return original(self, path)

    Project.walk = counting
    try:
        code, found, err = _check(["--cache-dir", str(shared), str(c)], capsys)
    finally:
        Project.walk = original
    assert found == expected["c"] and walks == []
    assert err.splitlines()[-1] == "inplace-lint: cache: 6 files seen, 6 unique contents, 6 reused"


def test_a_copy_takes_the_project_pass_of_its_twin(tmp_path):
    """adopt_final: the project pass of another copy, with this copy's call sites: the same findings,
    related locations included, as the pass computed here; refused when a file differs."""
    from inplace_lint.analysis.project import Project

    def load(root):
        project = Project(DEFAULT_SETTINGS, root)
        for path in sorted(root.rglob("*.py")):
            project.add_file(str(path))
        project.build()
        return project

    a, b = load(_copy("rlpkg", tmp_path / "a")), load(_copy("rlpkg", tmp_path / "b"))
    assert b.adopt_final(a)
    adopted = {p[len(str(tmp_path / "b")):]: b.findings(p) for p in b.results}
    b._final = None
    computed = {p[len(str(tmp_path / "b")):]: b.findings(p) for p in b.results}
    assert sum(map(len, computed.values())) == 4  # three writes and one call site
    assert {k: [(f, f.fix, f.related) for f in v] for k, v in adopted.items()} == \
        {k: [(f, f.fix, f.related) for f in v] for k, v in computed.items()}
    assert any(r.path and r.path.startswith(str(tmp_path / "b")) for v in adopted.values() for f in v
               for r in f.related)
    c = _copy("rlpkg", tmp_path / "c")
    ops = c / "rl" / "ops.py"
    ops.write_text(ops.read_text().replace("    logits.div_(t)  # a mutating helper", "    logits = logits / t  #"))
    assert not load(c).adopt_final(a)


def test_a_deleted_file_walks_what_read_it_again(tmp_path, capsys):
    project = _copy("rlpkg", tmp_path / "rlpkg")
    _check(["-q", str(project)], capsys)
    (project / "rl" / "ops.py").unlink()
    expected = _check(["-q", "--no-cache", str(project)], capsys)[1]
    assert _check(["-q", str(project)], capsys)[1] == expected


def test_a_fifo_or_a_link_where_the_cache_goes(tmp_path, capsys):
    """A FIFO planted as a cache file does not hang the check; a cache folder that is a link is not used."""
    project = _copy("rlpkg", tmp_path / "rlpkg")
    expected = _check(["-q", "--no-cache", str(project)], capsys)[:2]
    _check(["-q", str(project)], capsys)
    [manifest] = _documents(project / ".inplace_lint_cache")[:1]
    manifest.unlink()
    os.mkfifo(manifest)
    code, found, err = _check(["-q", "-v", str(project)], capsys)
    assert (code, found) == expected
    assert f"inplace-lint: ignored the cache file {manifest}: not a regular file; rebuilt" in err.splitlines()
    shutil.rmtree(project / ".inplace_lint_cache")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (project / ".inplace_lint_cache").symlink_to(elsewhere)
    assert _check(["-q", str(project)], capsys)[:2] == expected
    assert list(elsewhere.iterdir()) == []
    assert list((tmp_path / "user-cache" / "inplace-lint" / "projects").glob("*/manifests/*.json"))


def test_the_codec_knows_every_field_of_the_value_types():
    """A field added to a stored value type (on another branch) turns the cache off until the codec
    (encode_result, decode_result, rebase) stores it; this test says so first."""
    assert codec.CODEC_MATCHES, {t.__name__: [f.name for f in dataclasses.fields(t)] for t in codec._SHAPES}


def test_parts_read_late_are_type_checked_then_and_pickle_plain(tmp_path):
    """The index, findings and deps of a cached result stay JSON text until read (a one-file check reads
    none but its own findings); read, they are checked as the rest: a wrong type raises BadCache, never
    reaches the analysis. A pickled or copied result is a plain FileResult with every part decoded."""
    import copy
    import pickle

    from inplace_lint.analysis.summaries import FileResult, ModuleIndex

    root = _copy("rlpkg", tmp_path / "a")
    project = workspace.load_project(str(next(root.rglob("*.py"))), DEFAULT_SETTINGS, workspace.ProjectMode(True, False))
    path, result = next((p, r) for p, r in project.results.items() if r.findings)
    encoded = json.loads(json.dumps(codec.encode_result(result, str(root))))
    decoded = codec.decode_result(encoded, path, str(root))
    assert set(decoded.__dict__["_pending"]) == {"findings", "deps"} and "_pending" in decoded.index.__dict__
    for plain in (pickle.loads(pickle.dumps(decoded)), copy.deepcopy(decoded)):
        assert type(plain) is FileResult and type(plain.index) is ModuleIndex
        assert _normal(plain) == _normal(result)
    for part, bad in ((3, '{"module": 1}'), (6, '[["not a finding"]]'), (8, '{"a": 1}')):
        wrong = list(encoded)
        wrong[part] = bad
        late = codec.decode_result(wrong, path, str(root))  # the parts read late are not read yet
        with pytest.raises(codec.BadCache):
            (late.index.module, late.findings, late.deps)


def test_a_one_file_check_of_an_unchanged_project_reads_its_kept_findings(tmp_path, capsys, monkeypatch):
    """A whole-project check keeps each file's findings for exactly that project (its files' results by
    signature); a later one-file check of the unchanged project reads them, decoding no other file's results
    (the benchmark's one file, warm). A change anywhere in the project (a helper that stops writing) makes
    a different signature: the one-file check then runs the project pass again, and says what it says now."""
    from inplace_lint.analysis import cache as disk

    root = _copy("rlpkg", tmp_path / "p")
    engine = root / "rl" / "engine.py"
    _, whole, _ = _check([str(root)], capsys)
    at_engine = {f for f in whole if f[0] == "rl/engine.py"}
    assert at_engine
    decoded = []
    real_result = disk.Store.result

    def counting(self, *args, **kwargs):
        decoded.append(args[0])
        return real_result(self, *args, **kwargs)

    monkeypatch.setattr(disk.Store, "result", counting)
    workspace._PROJECTS.clear()
    workspace.forget_disk_state()
    code, found, _ = _check([str(engine)], capsys)
    assert {(("rl/engine.py",) + f[1:]) for f in found} == at_engine and decoded == []
    ops = root / "rl" / "ops.py"
    ops.write_text(ops.read_text().replace("    logits.div_(t)  # a mutating helper", "    logits = logits / t  #"))
    workspace._PROJECTS.clear()
    workspace.forget_disk_state()
    _, after, _ = _check([str(engine)], capsys)
    assert decoded  # the project was loaded and its pass run again
    # the two calls of the helper that no longer writes are not reported; the call of `temper` still is
    assert [f[1] for f in after] == [11] and [f[1] for f in sorted(at_engine)] == [9, 10, 11]
