"""On-disk cache of per-file project results (summaries, call sites, findings): keys, signed files, the store.

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
analysis' value types by hand, field by field, with type checks (:mod:`.codec`). Each
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
from ..findings import Finding
from .codec import CODEC_MATCHES, BadCache, decode_result, encoded_deps, rebase
from .codec import encode_result  # noqa: F401  (what Store.put stores: callers encode with it)
from .summaries import FileResult, LocalFinding, ModuleIndex

CACHE_DIR_NAME = ".inplace_lint_cache"
#: bump when the shape of a document changes
FORMAT = 16
_MAGIC = "inplace-lint-cache"
#: results of one text kept per object (projects whose other files differ may each need their own)
MAX_VARIANTS = 4
#: a cache document larger than this is not read (a result of a 5 MB file with 42k findings is ~60 MB)
MAX_BYTES = 1 << 30
#: the per-user key: its text in this variable (hex or any string), else a key file (:func:`user_key`)
ENV_KEY = "INPLACE_LINT_CACHE_KEY"

#: one line per cache document that was ignored (why), for ``-v``
NOTES: List[str] = []


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
    text of the engine's modules (every subpackage), its rules, its configuration, the op tables it reads and
    the value types it stores."""
    package = pathlib.Path(__file__).resolve().parent.parent
    files = [package / "findings.py"]
    for folder in ("analysis", "rules", "config", "torch_facts"):  # subpackages (fixplan/) included
        files += sorted((package / folder).rglob("*.py"))
    digest = hashlib.sha1()
    for file in files:
        digest.update(file.relative_to(package).as_posix().encode() + b"\0" + file.read_bytes() + b"\0")
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

    # ---- a file's findings in a project whose results hold together

    def _final_path(self, signature: str, path: str) -> pathlib.Path:
        name = hashlib.sha1(f"{code_key()}|{signature}|{path}".encode("utf-8", "surrogatepass")).hexdigest()
        return self.directory / "finals" / name[:2] / f"{name}.json"

    def final(self, signature: str, path: str, root: Optional[str]) -> Optional[List[Finding]]:
        """The findings :meth:`~.project.Project.findings` gave ``path`` in the project made of exactly the
        results named by ``signature`` (:func:`signature`), or None: a one-file check of an unchanged project
        reads this instead of decoding every file's summaries and running the project pass again."""
        where = self._final_path(signature, path)
        try:
            doc = read_document(where, self.key, "final")
            if doc is None or doc.get("signature") != signature or doc.get("path") != path:
                return None
            return [lf.finding for lf in decode_result(doc.get("result"), path, root).findings]
        except (BadCache, KeyError, TypeError, ValueError) as exc:
            note(f"ignored the cache file {where}: {exc}")
            return None

    def put_final(self, signature: str, path: str, root: Optional[str], findings: List[Finding]) -> None:
        where = self._final_path(signature, path)
        if where.exists():
            return
        carrier = FileResult(path, "", "", ModuleIndex("", path), findings=[LocalFinding(f, "", False) for f in findings])
        write_document(where, self.key, {"kind": "final", "code": code_key(), "signature": signature, "path": path,
                                         "result": encode_result(carrier, root)})

    @classmethod
    def open(cls, directory: pathlib.Path) -> Optional["Store"]:
        if not CODEC_MATCHES:
            note("cache off: the analysis' value types have fields this cache format does not store "
                 "(inplace_lint/analysis/codec.py must learn them)")
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
    deps = encoded_deps(encoded)
    return hashlib.sha1(json.dumps(deps, sort_keys=True, ensure_ascii=False).encode("utf-8", "surrogatepass")).hexdigest()[:16]
