"""On-disk cache of per-file project results (summaries, call sites, findings): data, never code.

A cache directory (default: ``<project root>/.inplace_lint_cache`` when the user owns the root, else a
per-user folder keyed by the root, :func:`default_dir`; ``--cache-dir`` names one shared by many
projects) holds two kinds of JSON documents:

- ``objects/ab/<key>.json``, **content-addressed**: the key is a hash of the file's text, its module
  name, the settings and the analysis code; the object holds up to :data:`MAX_VARIANTS` results of
  walking that text, each with the digests of the summaries its walk read (``FileResult.deps``).
  A file identical in many projects (forks) is walked once: another project reuses a variant whose
  dependencies' digests match its own summaries (:meth:`.project.Project.stale`), else walks it.
- ``manifests/<key>.json``, one per project root and settings: each file's (mtime, size, content
  hash, object, variant), so a warm run neither reads nor hashes an unchanged file.

Loading cannot execute anything: the text is read with :func:`json.loads` and decoded into the
analysis' value types by hand, field by field, with type checks (:func:`decode_result`). Each
document starts with a line ``inplace-lint-cache <FORMAT> <hmac>``: an HMAC-SHA256 of the JSON text
under a per-user key (:func:`user_key`; ``INPLACE_LINT_CACHE_KEY`` in the environment replaces it, so
the jobs of a CI matrix can share a cache). A document that is truncated, corrupt, of another
format, not signed with this user's key (planted in a checked tree, or written by someone else) or
that fails a type check is ignored (and rebuilt), with a one-line note (:data:`NOTES`, printed under
``-v``). Paths inside a result are stored relative to the file itself or to the project root, so
a result is the same in every copy of a project.

The cache is only an accelerator: deleting it changes no finding. Every write is atomic (a temporary
file in the same folder, then :func:`os.replace`), so concurrent runs never read a torn file; the last
writer wins.
"""
from __future__ import annotations

import dataclasses
import hashlib
import hmac
import json
import os
import pathlib
import secrets
import stat
import tempfile
from typing import Any, Dict, List, Optional, Set, Tuple

from .. import __version__
from ..findings import (Applicability, Edit, Finding, Fix, FixKind, Origin, Recipe, Related, RewriteForm, RootKind,
                        Scaling, Step, StepKind, WriteKind)
from .summaries import CallSite, FileResult, FunctionSummary, LocalFinding, ModuleIndex, ParamWrite

CACHE_DIR_NAME = ".inplace_lint_cache"
#: bump when the shape of a document changes
FORMAT = 6
_MAGIC = "inplace-lint-cache"
#: results of one text kept per object (projects whose other files differ may each need their own)
MAX_VARIANTS = 4
#: a cache document larger than this is not read (a result of a 5 MB file with 42k findings is ~60 MB)
MAX_BYTES = 1 << 30
#: the per-user key: its text in this variable (hex or any string), else a key file (:func:`user_key`)
ENV_KEY = "INPLACE_LINT_CACHE_KEY"

#: one line per cache document that was ignored (why), for ``-v``
NOTES: List[str] = []


class BadCache(ValueError):
    """A cache document that is not what this version writes."""


def note(message: str) -> None:
    if message not in NOTES:
        NOTES.append(message)


# --------------------------------------------------------------------------- keys and locations


def settings_key(settings) -> str:
    """A text that is equal for equal settings in every process (frozensets sorted: string hashes vary)."""
    parts = []
    for f in dataclasses.fields(settings):
        value = getattr(settings, f.name)
        parts.append(f"{f.name}={sorted(value) if isinstance(value, frozenset) else value!r}")
    return ";".join(parts)


def _code_key() -> str:
    """The analysis code itself (an edited checkout must not reuse results of the code before): the
    text of the engine's modules, its rules and the value types it stores."""
    here = pathlib.Path(__file__).resolve().parent
    files = [here.parent / "findings.py", here.parent / "config.py"]
    for folder in (here, here.parent / "rules", here.parent / "torch_facts"):  # with subpackages (fixplan/)
        files += sorted(folder.rglob("*.py"))
    digest = hashlib.sha1()
    for file in files:
        digest.update(file.name.encode() + b"\0" + file.read_bytes() + b"\0")
    return digest.hexdigest()


_CODE_KEY: Optional[str] = None


def code_key() -> str:
    global _CODE_KEY
    if _CODE_KEY is None:
        _CODE_KEY = hashlib.sha1(f"{FORMAT}|{__version__}|{_code_key()}".encode()).hexdigest()
    return _CODE_KEY


def user_dir() -> pathlib.Path:
    """``$XDG_CACHE_HOME/inplace-lint`` (default ``~/.cache/inplace-lint``)."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return pathlib.Path(base) / "inplace-lint"


def default_dir(root: pathlib.Path) -> pathlib.Path:
    """``<root>/.inplace_lint_cache`` when the user owns ``root`` and may write in it (and it is not a
    symbolic link); else (a tree of someone else, a read-only checkout) ``<user_dir>/projects/<hash of
    root>``: nothing is written into a tree the user does not own."""
    try:
        st = os.stat(root)
        owned = not hasattr(os, "getuid") or st.st_uid == os.getuid()
        # a cache folder that is a link (planted in the tree) would send the cache's writes elsewhere
        if owned and os.access(root, os.W_OK) and not os.path.islink(root / CACHE_DIR_NAME):
            return root / CACHE_DIR_NAME
    except OSError:
        pass
    return user_dir() / "projects" / hashlib.sha1(str(root).encode("utf-8", "surrogatepass")).hexdigest()[:16]


_KEYS: Dict[pathlib.Path, bytes] = {}


def user_key() -> Optional[bytes]:
    """The key every cache document is signed with: ``$INPLACE_LINT_CACHE_KEY``, else 32 random bytes
    kept in ``<user_dir>/cache-key`` (mode 0600, made on first use). None when neither is possible
    (then no cache is read or written, and a note says why)."""
    env = os.environ.get(ENV_KEY)
    if env:
        return hashlib.sha256(env.encode("utf-8", "surrogatepass")).digest()
    path = user_dir() / "cache-key"
    key = _KEYS.get(path)
    if key is not None:
        return key
    try:
        try:
            data = path.read_bytes()
        except FileNotFoundError:
            path.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-key-")  # mode 0600
            try:
                with os.fdopen(fd, "wb") as fh:
                    fh.write(secrets.token_bytes(32))
                try:
                    os.link(tmp, path)  # never replaces a key another process made meanwhile
                except FileExistsError:
                    pass
            finally:
                os.unlink(tmp)
            data = path.read_bytes()
        if len(data) < 32:
            raise OSError(f"{path} holds fewer than 32 bytes")
    except OSError as exc:
        note(f"cache off: no key to sign it with ({exc}); set {ENV_KEY}")
        return None
    key = _KEYS[path] = data[:32]
    return key


def content_key(settings_text: str, module: str, is_package: bool, digest: str) -> str:
    """The object of a file's text: what its walk depends on besides the summaries it reads."""
    text = f"{code_key()}|{settings_text}|{module}|{int(is_package)}|{digest}"
    return hashlib.sha1(text.encode("utf-8", "surrogatepass")).hexdigest()


# --------------------------------------------------------------------------- signed documents


def _sign(key: bytes, body: bytes) -> str:
    return hmac.new(key, body, hashlib.sha256).hexdigest()


def read_document(path, key: bytes, kind: str) -> Optional[dict]:
    """The JSON object in ``path``, when it is one this user wrote; None when there is none; raises
    :class:`BadCache` when there is a file that is not one."""
    try:
        # not blocking: a FIFO planted where a cache file goes must not hang the check
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0))
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise BadCache(f"cannot read: {exc.strerror or exc}") from exc
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise BadCache("not a regular file")
        if st.st_size > MAX_BYTES:
            raise BadCache(f"larger than {MAX_BYTES >> 20} MiB")
        with os.fdopen(fd, "rb") as fh:
            fd = -1
            data = fh.read()
    except OSError as exc:
        raise BadCache(f"cannot read: {exc.strerror or exc}") from exc
    finally:
        if fd >= 0:
            os.close(fd)
    head, newline, body = data.partition(b"\n")
    parts = head.split(b" ")
    if not newline or len(parts) != 3 or parts[0] != _MAGIC.encode():
        raise BadCache("not an inplace-lint cache file")
    if parts[1] != str(FORMAT).encode():
        raise BadCache(f"format {parts[1][:10].decode('ascii', 'replace')}, not {FORMAT}")
    if not hmac.compare_digest(parts[2], _sign(key, body).encode()):
        raise BadCache("not signed with this user's key (written elsewhere, or changed since)")
    try:
        doc = json.loads(body)
    except (ValueError, RecursionError) as exc:
        raise BadCache(f"not JSON: {exc}") from exc
    if not isinstance(doc, dict) or doc.get("kind") != kind or doc.get("code") != code_key():
        raise BadCache(f"not a cache {kind} of this version")
    return doc


_MADE: Set[str] = set()


def write_document(path, key: bytes, doc: dict) -> Optional[str]:
    """Write atomically (``path``: a str or a Path); returns why not (a read-only tree is not an error)."""
    body = json.dumps(doc, separators=(",", ":"), ensure_ascii=False).encode("utf-8", "surrogatepass")
    try:
        folder = os.path.dirname(path)
        if folder not in _MADE:
            os.makedirs(folder, exist_ok=True)
            _MADE.add(folder)
        try:
            fd, tmp = tempfile.mkstemp(dir=folder, prefix=".tmp-", suffix=".json")
        except FileNotFoundError:  # removed since it was made
            os.makedirs(folder, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=folder, prefix=".tmp-", suffix=".json")
        try:
            with os.fdopen(fd, "wb") as fh:
                fh.write(f"{_MAGIC} {FORMAT} {_sign(key, body)}\n".encode())
                fh.write(body)
            os.replace(tmp, path)
        except BaseException:
            try:
                os.unlink(tmp)
            except OSError:
                pass
            raise
    except OSError as exc:
        return str(exc)
    return None


# --------------------------------------------------------------------------- the store


@dataclasses.dataclass
class Stats:
    """What the cache did in this process (the summary line of ``check``/``fix``)."""

    #: project files whose result was needed (a file in two projects counts twice)
    seen: int = 0
    #: of those, files whose result came from the cache (not walked in this run)
    reused: int = 0
    #: distinct contents (object keys) among the files seen
    contents: Set[str] = dataclasses.field(default_factory=set)

    def line(self) -> str:
        return (f"cache: {self.seen} file{'s' if self.seen != 1 else ''} seen, {len(self.contents)} unique "
                f"content{'s' if len(self.contents) != 1 else ''}, {self.reused} reused")


STATS = Stats()


def reset() -> None:
    """Start afresh, as a new process would (one command's summary line and notes; what was read from
    the disk is read again)."""
    global STATS
    STATS = Stats()
    NOTES.clear()
    Store._memory.clear()
    Store._decoded.clear()
    Store._valid.clear()


class Store:
    """One cache directory: manifests per project, results per content (shared by every project)."""

    #: variants read or written in this process, per object key, shared by every Store of the same
    #: directory: a second copy of a project reuses the first copy's walks without reading them again
    _memory: Dict[Tuple[str, str], Dict[str, Any]] = {}

    #: (folder, object key, variant) -> (the result decoded for one path, its project root): the same
    #: text in another project is :func:`rebase`\ d from it instead of decoded again
    _decoded: Dict[Tuple[str, str, str], Tuple[FileResult, Optional[str]]] = {}
    #: (folder, signature) of projects whose results were checked to hold together (:meth:`validated`)
    _valid: Set[Tuple[str, str]] = set()

    def __init__(self, directory: pathlib.Path, key: bytes) -> None:
        self.directory = directory
        self.key = key
        self._dir_text = str(directory)
        self._dirty: Set[str] = set()
        #: no object folder yet (a cold cache): nothing to look up
        self._no_objects = not os.path.isdir(os.path.join(self._dir_text, "objects"))

    def result(self, okey: str, variant: str, path: str, root: Optional[str], encoded: Any = None) -> FileResult:
        """The result ``variant`` of object ``okey`` for ``path``; raises :class:`BadCache`, KeyError
        when there is no such variant."""
        memo = self._decoded.get((self._dir_text, okey, variant))
        if memo is not None:
            return rebase(memo[0], path, root, memo[1])
        if encoded is None:
            encoded = self.variants(okey)[variant]
            if encoded is None:
                raise KeyError(variant)
        result = decode_result(encoded, path, root)
        self._decoded[(self._dir_text, okey, variant)] = (result, root)
        return result

    def remember(self, okey: str, variant: str, result: FileResult, root: Optional[str]) -> None:
        """A result just walked, as the template of its variant (no decoding when another copy needs it)."""
        self._decoded.setdefault((self._dir_text, okey, variant), (result, root))

    # ---- sets of results known to hold together

    def _valid_path(self, signature: str) -> pathlib.Path:
        return self.directory / "valid" / signature[:2] / f"{signature}.json"

    def validated(self, signature: str) -> bool:
        """Whether a project made of exactly these results (module, object, variant of every file:
        :func:`signature`) was built to its fixpoint before: then none of them need be checked again."""
        if (self._dir_text, signature) in self._valid:
            return True
        try:
            doc = read_document(self._valid_path(signature), self.key, "validation")
        except BadCache as exc:
            note(f"ignored the cache file {self._valid_path(signature)}: {exc}")
            return False
        if doc is not None and doc.get("signature") == signature:
            self._valid.add((self._dir_text, signature))
            return True
        return False

    def validate(self, signature: str) -> None:
        if not self.validated(signature):
            self._valid.add((self._dir_text, signature))
            write_document(self._valid_path(signature), self.key,
                           {"kind": "validation", "code": code_key(), "signature": signature})

    @classmethod
    def open(cls, directory: pathlib.Path) -> Optional["Store"]:
        if not CODEC_MATCHES:
            note("cache off: the analysis' value types have fields this cache format does not store "
                 "(inplace_lint/analysis/cache.py must learn them)")
            return None
        key = user_key()
        return cls(directory, key) if key is not None else None

    def _object_path(self, okey: str) -> str:
        return os.path.join(self._dir_text, "objects", okey[:2], okey + ".json")

    def manifest_path(self, root: pathlib.Path, settings_text: str) -> pathlib.Path:
        name = hashlib.sha1(f"{code_key()}|{root}|{settings_text}".encode("utf-8", "surrogatepass")).hexdigest()
        return self.directory / "manifests" / f"{name[:20]}.json"

    # ---- manifests

    def load_manifest(self, path: pathlib.Path) -> Dict[str, tuple]:
        """path -> (mtime_ns, size, digest, object key, variant); {} when absent or not valid (noted)."""
        try:
            doc = read_document(path, self.key, "manifest")
            if doc is None:
                return {}
            files = doc.get("files")
            if not isinstance(files, dict):
                raise BadCache("no files")
            out = {}
            for file, entry in files.items():
                if not (isinstance(entry, list) and len(entry) == 5 and type(entry[0]) is int
                        and type(entry[1]) is int and all(isinstance(x, str) for x in entry[2:])):
                    raise BadCache(f"bad entry for {file!r}")
                out[file] = tuple(entry)
            return out
        except BadCache as exc:
            note(f"ignored the cache file {path}: {exc}; rebuilt")
            return {}

    def save_manifest(self, path: pathlib.Path, root: pathlib.Path, files: Dict[str, tuple]) -> Optional[str]:
        self._gitignore()
        return write_document(path, self.key, {"kind": "manifest", "code": code_key(), "root": str(root),
                                               "files": {f: list(e) for f, e in files.items()}})

    def _gitignore(self) -> None:
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
            ignore = self.directory / ".gitignore"
            if not ignore.exists():
                ignore.write_text("# created by inplace-lint\n*\n")
        except OSError:
            pass

    # ---- objects

    def variants(self, okey: str) -> Dict[str, Any]:
        """variant id -> encoded result, newest first ({} when none, or the object is not valid)."""
        memo = self._memory.get((self._dir_text, okey))
        if memo is not None:
            return memo
        out: Dict[str, Any] = {}
        if self._no_objects:
            return out  # (not remembered: put() fills the memory)
        path = self._object_path(okey)
        try:
            doc = read_document(path, self.key, "object")
            if doc is not None:
                variants = doc.get("variants")
                if doc.get("key") != okey or not isinstance(variants, list):
                    raise BadCache("not the object its name says")
                for item in variants[:MAX_VARIANTS]:
                    if not (isinstance(item, list) and len(item) == 2 and isinstance(item[0], str)):
                        raise BadCache("bad variant")
                    out[item[0]] = item[1]
        except BadCache as exc:
            note(f"ignored the cache file {path}: {exc}; rebuilt")
            out = {}
        self._memory[(self._dir_text, okey)] = out
        return out

    def put(self, okey: str, variant: str, encoded: Any) -> None:
        """Add a variant (newest first); written by :meth:`flush`."""
        old = self.variants(okey)
        if variant in old:
            return
        new = {variant: encoded}
        for k, v in old.items():
            if len(new) < MAX_VARIANTS and v is not None:  # (one let go by compact() is not rewritten)
                new[k] = v
        self._memory[(self._dir_text, okey)] = new
        self._dirty.add(okey)

    def compact(self) -> None:
        """Let go of the JSON form of every result that has a decoded one (a long-lived process, the
        language server, would otherwise keep both)."""
        for (folder, okey), variants in self._memory.items():
            if folder == self._dir_text:
                for variant in variants:
                    if (folder, okey, variant) in self._decoded:
                        variants[variant] = None

    def flush(self) -> Optional[str]:
        """Write the objects changed since the last flush; returns why one could not be written."""
        self._gitignore()
        why = None
        for okey in sorted(self._dirty):
            variants = self._memory.get((self._dir_text, okey), {})
            doc = {"kind": "object", "code": code_key(), "key": okey, "variants": [[k, v] for k, v in variants.items()]}
            why = write_document(self._object_path(okey), self.key, doc) or why
            if why is not None:
                break  # a read-only folder: the others would fail alike
        self._dirty.clear()
        return why


def signature(entries) -> str:
    """``entries``: (module, object key, variant) of every file of a project, in any order."""
    return hashlib.sha1("\n".join(sorted("\0".join(e) for e in entries)).encode("utf-8", "surrogatepass")).hexdigest()


def variant_id(encoded: Any) -> str:
    """Names a variant by the dependencies its walk read (the same for the same text, settings and code)."""
    deps = encoded[8]
    return hashlib.sha1(json.dumps(deps, sort_keys=True, ensure_ascii=False).encode("utf-8", "surrogatepass")).hexdigest()[:16]


# --------------------------------------------------------------------------- encoding
#
# A result is a JSON array; each value type a fixed-length array of its fields. Origins are kept once
# per result in a table and named by their position. A path is 0 (the file itself), "./rel" (under the
# project root) or absolute.

#: the fields the codec below stores, per value type: a type that gains a field (another branch) turns
#: the cache off (a result without it would be wrong) until the codec learns it
_SHAPES = {
    Step: ("kind", "text", "line", "no_grad", "path"),
    Origin: ("root", "root_text", "root_line", "steps", "root_no_grad", "certain_tensor", "path", "condition",
             "guess_param", "guessed"),
    Edit: ("line", "col", "end_line", "end_col", "content"),
    Scaling: ("temperature", "eps", "trailing"),
    Recipe: ("kind", "form", "method", "scaling"),
    Fix: ("applicability", "recipe", "message", "reason", "edits"),
    Related: ("message", "line", "col", "path", "role"),
    Finding: ("code", "line", "col", "end_line", "end_col", "message", "op", "write_kind", "target", "origin",
              "fix", "related", "no_fix"),
    ParamWrite: ("func", "index", "path", "line", "col", "end_line", "end_col", "op", "kind", "steps", "target",
                 "no_grad", "kept", "via", "op_name", "point_index", "guard", "condition", "fix", "fix_if_callers"),
    CallSite: ("caller", "callee", "path", "line", "col", "args", "no_grad", "callback", "unread", "bound",
               "constants"),
    FunctionSummary: ("qual", "params", "returns", "writes", "declared_no_grad", "observed", "static", "kept",
                      "decorated", "returns_when"),
    LocalFinding: ("finding", "func", "grad_rule", "observed", "fix_if_callers", "grad_cond", "guess_param",
                   "param_rooted"),
    ModuleIndex: ("module", "path", "is_package", "imports", "functions", "classes", "attributes", "value_refs",
                  "properties"),
    FileResult: ("path", "module", "digest", "index", "functions", "calls", "findings", "deps", "error"),
}
CODEC_MATCHES = all(tuple(f.name for f in dataclasses.fields(t)) == names for t, names in _SHAPES.items())

_ROOT_KINDS = {k.value: k for k in RootKind}
_STEP_KINDS = {k.value: k for k in StepKind}
_WRITE_KINDS = {k.value: k for k in WriteKind}
_APPLIES = {k.value: k for k in Applicability}
_FIX_KINDS = {k.value: k for k in FixKind}
_FORMS = {k.value: k for k in RewriteForm}
_new = object.__new__
_set = object.__setattr__


def _make(cls, **fields):
    """A dataclass instance from checked field values (no ``__init__``: the values are complete)."""
    obj = _new(cls)
    _set(obj, "__dict__", fields)
    return obj


class _Encoder:
    def __init__(self, path: str, root: str) -> None:
        self.path = path
        self.prefix = root.rstrip(os.sep) + os.sep if root else None
        self.origins: Dict[Origin, int] = {}
        self.table: List[list] = []

    def p(self, path: Optional[str]):
        if path is None:
            return None
        if path == self.path:
            return 0
        if self.prefix and path.startswith(self.prefix):
            return "./" + path[len(self.prefix):]
        return path

    def o(self, origin: Origin) -> int:
        i = self.origins.get(origin)
        if i is None:
            i = self.origins[origin] = len(self.table)
            self.table.append([origin.root.value, origin.root_text, origin.root_line, self.steps(origin.steps),
                               origin.root_no_grad, origin.certain_tensor, self.p(origin.path), origin.condition,
                               origin.guess_param, origin.guessed])
        return i

    def steps(self, steps) -> list:
        return [[s.kind.value, s.text, s.line, s.no_grad, self.p(s.path)] for s in steps]

    @staticmethod
    def scaling(sc) -> Optional[list]:
        if sc is None:
            return None
        return [[list(t) for t in sc.temperature], sc.eps if isinstance(sc.eps, str) else list(sc.eps), sc.trailing]

    def fix(self, fix: Optional[Fix]):
        if fix is None:
            return None
        return [fix.applicability.value, fix.kind.value, fix.message, fix.reason,
                [[e.line, e.col, e.end_line, e.end_col, e.content] for e in fix.edits], self.scaling(fix.scaling),
                fix.recipe.form.value, fix.recipe.method]

    def write(self, w: ParamWrite) -> list:
        via = None if w.via is None else [w.via[0], self.p(w.via[1]), w.via[2], w.via[3]]
        return [w.func, w.index, self.p(w.path), w.line, w.col, w.end_line, w.end_col, w.op, w.kind.value,
                self.steps(w.steps), w.target, w.no_grad, w.kept, via,
                w.op_name, w.point_index, list(w.guard), self.fix(w.fix), self.fix(w.fix_if_callers), w.condition]

    def summary(self, s: FunctionSummary) -> list:
        return [s.qual, list(s.params), [self.o(o) for o in s.returns], [self.write(w) for w in s.writes],
                s.declared_no_grad, sorted(s.observed), s.static, s.digest(), s.kept, s.decorated,
                [[self.o(o), [[list(c) for c in conds] for conds in paths]] for o, paths in s.returns_when]]

    def call(self, c: CallSite) -> list:
        return [c.caller, c.callee, self.p(c.path), c.line, c.col,
                [[i, [self.o(o) for o in origins]] for i, origins in c.args], c.no_grad, c.callback,
                sorted(c.unread), None if c.bound is None else sorted(c.bound), [list(k) for k in c.constants]]

    def finding(self, lf: LocalFinding) -> list:
        f = lf.finding
        return [[f.code, f.line, f.col, f.end_line, f.end_col, f.message, f.op, f.write_kind.value, f.target,
                 self.o(f.origin), self.fix(f.fix),
                 [[r.message, r.line, r.col, self.p(r.path), r.role] for r in f.related], f.no_fix],
                lf.func, lf.grad_rule, sorted(lf.observed), self.fix(lf.fix_if_callers), lf.param_rooted,
                None if lf.grad_cond is None else list(lf.grad_cond), lf.guess_param]

    def index(self, x: ModuleIndex) -> list:
        return [x.module, self.p(x.path), x.is_package, x.imports, {k: list(v) for k, v in x.functions.items()},
                {name: [list(bases), {m: [list(params), static] for m, (params, static) in methods.items()}]
                 for name, (bases, methods) in x.classes.items()},
                x.attributes, x.value_refs, {k: sorted(v) for k, v in x.properties.items()}]


def encode_result(result: FileResult, root: Optional[str]) -> list:
    """``result`` as JSON-ready lists (:func:`decode_result` reads it back, for any path and root)."""
    enc = _Encoder(result.path, root or "")
    body = [result.module, result.digest, enc.index(result.index),
            [enc.summary(s) for s in result.functions.values()],
            [enc.call(c) for c in result.calls], [enc.finding(f) for f in result.findings]]
    return [enc.table] + body + [result.error, result.deps]


def _str(x) -> str:
    if type(x) is not str:
        raise BadCache("a text was expected")
    return x


def _ostr(x) -> Optional[str]:
    return None if x is None else _str(x)


def _int(x) -> int:
    if type(x) is not int:
        raise BadCache("a number was expected")
    return x


def _oint(x) -> Optional[int]:
    return None if x is None else _int(x)


def _bool(x) -> bool:
    if type(x) is not bool:
        raise BadCache("true or false was expected")
    return x


def _list(x, n: Optional[int] = None) -> list:
    if type(x) is not list or (n is not None and len(x) != n):
        raise BadCache("a list was expected" if n is None else f"a list of {n} was expected")
    return x


def _dict(x) -> dict:
    if type(x) is not dict:
        raise BadCache("an object was expected")
    return x


def _strs(x) -> Tuple[str, ...]:
    return tuple(_str(s) for s in _list(x))


def _ints(x) -> Tuple[int, ...]:
    return tuple(_int(i) for i in _list(x))


def _str_map(x) -> Dict[str, str]:
    out = _dict(x)
    for v in out.values():
        _str(v)
    return out


class _Decoder:
    def __init__(self, path: str, root: str, table) -> None:
        self.path = path
        self.root = root
        self.steps_memo: Dict[str, Tuple[Step, ...]] = {}
        self.origins = [self.origin(o) for o in _list(table)]

    def p(self, x) -> Optional[str]:
        if x is None:
            return None
        if x == 0 and type(x) is int:
            return self.path
        x = _str(x)
        if x.startswith("./"):
            if not self.root:
                raise BadCache("a path relative to a project root, without one")
            return os.path.join(self.root, x[2:])
        return x

    def steps(self, x) -> Tuple[Step, ...]:
        out = []
        for s in _list(x):
            kind, text, line, no_grad, path = _list(s, 5)
            out.append(_make(Step, kind=_STEP_KINDS[kind], text=_str(text), line=_int(line), no_grad=_bool(no_grad),
                             path=self.p(path)))
        return tuple(out)

    def origin(self, x) -> Origin:
        root, text, line, steps, no_grad, certain, path, condition, guess_param, guessed = _list(x, 10)
        return _make(Origin, root=_ROOT_KINDS[root], root_text=_str(text), root_line=_int(line),
                     steps=self.steps(steps), root_no_grad=_bool(no_grad), certain_tensor=_bool(certain),
                     path=self.p(path), condition=_str(condition), guess_param=_int(guess_param),
                     guessed=_bool(guessed))

    @staticmethod
    def scaling(x) -> Optional[Scaling]:
        if x is None:
            return None
        temperature, eps, trailing = _list(x, 3)
        spans = tuple(_ints(_list(t, 4)) for t in _list(temperature))
        eps = _str(eps) if type(eps) is str else _ints(_list(eps, 4))
        return _make(Scaling, temperature=spans, eps=eps, trailing=_bool(trailing))

    @staticmethod
    def cond(x) -> tuple:
        index, truth, default = _list(x, 3)
        return _int(index), _bool(truth), None if default is None else _bool(default)

    def o(self, i) -> Origin:
        return self.origins[_int(i)]

    def fix(self, x) -> Optional[Fix]:
        if x is None:
            return None
        applicability, kind, message, reason, edits, scaling, form, method = _list(x, 8)
        out = []
        for e in _list(edits):
            line, col, end_line, end_col, content = _list(e, 5)
            out.append(_make(Edit, line=_int(line), col=_int(col), end_line=_int(end_line), end_col=_int(end_col),
                             content=_str(content)))
        recipe = _make(Recipe, kind=_FIX_KINDS[kind], form=_FORMS[form], method=_str(method),
                       scaling=self.scaling(scaling))
        return _make(Fix, applicability=_APPLIES[applicability], recipe=recipe, message=_str(message),
                     reason=_str(reason), edits=tuple(out))

    def write(self, x) -> ParamWrite:
        (func, index, path, line, col, end_line, end_col, op, kind, steps, target, no_grad, kept, via, op_name,
         point_index, guard, fix, fix_if_callers, condition) = _list(x, 20)
        if via is not None:
            name, via_path, via_line, via_col = _list(via, 4)
            via = (_str(name), self.p(via_path), _int(via_line), _int(via_col))
        return _make(ParamWrite, func=_str(func), index=_int(index), path=self.p(path), line=_int(line),
                     col=_int(col), end_line=_int(end_line), end_col=_int(end_col), op=_str(op),
                     kind=_WRITE_KINDS[kind], steps=self.steps(steps), target=_str(target), no_grad=_bool(no_grad),
                     kept=_bool(kept), via=via, op_name=_ostr(op_name), point_index=_bool(point_index),
                     guard=_ints(guard), fix=self.fix(fix), fix_if_callers=self.fix(fix_if_callers),
                     condition=_ostr(condition))

    def summary(self, x) -> FunctionSummary:
        qual, params, returns, writes, declared, observed, static, digest, kept, decorated, when = _list(x, 11)
        return _make(FunctionSummary, qual=_str(qual), params=_strs(params),
                     returns=frozenset(self.o(i) for i in _list(returns)),
                     writes=tuple(self.write(w) for w in _list(writes)), declared_no_grad=_bool(declared),
                     observed=frozenset(_ints(observed)), static=_bool(static), kept=_str(kept),
                     decorated=_str(decorated),
                     returns_when=tuple((self.o(_list(w, 2)[0]),
                                         tuple(tuple(self.cond(c) for c in _list(conds)) for conds in _list(w[1])))
                                        for w in _list(when)),
                     _digest=_str(digest))

    def call(self, x) -> CallSite:
        caller, callee, path, line, col, args, no_grad, callback, unread, bound, constants = _list(x, 11)
        decoded_args = []
        for a in _list(args):
            i, origins = _list(a, 2)
            decoded_args.append((_int(i), frozenset(self.o(k) for k in _list(origins))))
        return _make(CallSite, caller=_str(caller), callee=_str(callee), path=self.p(path), line=_int(line),
                     col=_int(col), args=tuple(decoded_args), no_grad=_bool(no_grad), callback=_bool(callback),
                     unread=frozenset(_ints(unread)), bound=None if bound is None else frozenset(_ints(bound)),
                     constants=tuple((_int(_list(k, 2)[0]), _bool(k[1])) for k in _list(constants)))

    def finding(self, x) -> LocalFinding:
        f, func, grad_rule, observed, fix_if_callers, param_rooted, grad_cond, guess_param = _list(x, 8)
        code, line, col, end_line, end_col, message, op, kind, target, origin, fix, related, no_fix = _list(f, 13)
        rel = []
        for r in _list(related):
            r_message, r_line, r_col, r_path, r_role = _list(r, 5)
            rel.append(_make(Related, message=_str(r_message), line=_int(r_line), col=_int(r_col), path=self.p(r_path),
                             role=_ostr(r_role)))
        finding = _make(Finding, code=_str(code), line=_int(line), col=_int(col), end_line=_int(end_line),
                        end_col=_int(end_col), message=_str(message), op=_str(op), write_kind=_WRITE_KINDS[kind],
                        target=_str(target), origin=self.o(origin), fix=self.fix(fix), related=tuple(rel),
                        no_fix=_ostr(no_fix))
        return LocalFinding(finding, _str(func), _bool(grad_rule), frozenset(_ints(observed)),
                            self.fix(fix_if_callers), param_rooted=_oint(param_rooted),
                            grad_cond=None if grad_cond is None else self.cond(grad_cond), guess_param=_oint(guess_param))

    def index(self, x) -> ModuleIndex:
        module, path, is_package, imports, functions, classes, attributes, value_refs, properties = _list(x, 9)
        classes_out = {}
        for name, info in _dict(classes).items():
            bases, methods = _list(info, 2)
            methods_out = {}
            for m, mi in _dict(methods).items():
                params, static = _list(mi, 2)
                methods_out[m] = (_strs(params), _bool(static))
            classes_out[name] = (_strs(bases), methods_out)
        attributes_out = {}
        for name, attrs in _dict(attributes).items():
            attributes_out[name] = _str_map(attrs)
        return ModuleIndex(_str(module), self.p(path), _bool(is_package), _str_map(imports),
                           {k: _strs(v) for k, v in _dict(functions).items()}, classes_out, attributes_out,
                           _ostr(value_refs), {k: frozenset(_strs(v)) for k, v in _dict(properties).items()})


def rebase(result: FileResult, path: str, root: Optional[str], old_root: Optional[str]) -> FileResult:
    """``result`` (decoded for another copy of the same text) for ``path`` in the project at ``root``:
    what :func:`decode_result` would give. Paths live in many values (related locations, call sites,
    writes, and the root and view steps of every origin), so the result goes through the codec, whose
    paths are relative to the file and the project root, rather than being copied field by field."""
    return decode_result(json.loads(json.dumps(encode_result(result, old_root))), path, root)


def decode_result(encoded: Any, path: str, root: Optional[str]) -> FileResult:
    """The :class:`FileResult` of ``path`` from :func:`encode_result`'s lists; raises :class:`BadCache`
    when anything is not of the type it must be."""
    try:
        table, module, digest, index, functions, calls, findings, error, deps = _list(encoded, 9)
        dec = _Decoder(path, root or "", table)
        summaries = [dec.summary(s) for s in _list(functions)]
        deps = _str_map(deps)
        return FileResult(path, _str(module), _str(digest), dec.index(index), {s.qual: s for s in summaries},
                          [dec.call(c) for c in _list(calls)], [dec.finding(f) for f in _list(findings)], deps,
                          _ostr(error))
    except BadCache:
        raise
    except (KeyError, IndexError, TypeError, ValueError, RecursionError) as exc:
        raise BadCache(f"a result of the wrong shape ({type(exc).__name__})") from exc
