"""The cache's JSON codec: the analysis' value types as JSON lists and back, field by field, type-checked.

A result is a JSON array; each value type a fixed-length array of its fields (:data:`_SHAPES` names them:
a type that gains a field turns the cache off, :data:`CODEC_MATCHES`, until this codec learns it). Origins
are kept once per result in a table and named by their position. A path is 0 (the file itself), "./rel"
(under the project root) or absolute. Decoding builds nothing but these value types: a value of the wrong
type raises :class:`BadCache`.
"""
from __future__ import annotations

import dataclasses
import json
import os
from typing import Any, Dict, List, Optional, Tuple

from ..findings import (Applicability, Edit, Finding, Fix, FixKind, Origin, Recipe, Related, RewriteForm, RootKind,
                        Scaling, Step, StepKind, WriteKind)
from . import conditions
from .summaries import CallSite, FileResult, FunctionSummary, LocalFinding, ModuleIndex, ParamWrite


class BadCache(ValueError):
    """A cache document that is not what this version writes."""


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
                 "no_grad", "kept", "via", "op_name", "point_index", "guard", "condition", "when", "fix",
                 "fix_if_callers", "on_tensor", "layer", "past_out", "keyed", "number"),
    CallSite: ("caller", "callee", "path", "line", "col", "args", "no_grad", "callback", "unread", "bound",
               "constants", "passed", "grad_off_args", "guards", "built"),
    FunctionSummary: ("qual", "params", "returns", "writes", "declared_no_grad", "observed", "static", "kept",
                      "decorated", "returns_when", "saves", "gradless", "flows_out", "computed", "no_grad_result"),
    LocalFinding: ("finding", "func", "grad_rule", "observed", "fix_if_callers", "grad_cond", "guess_params",
                   "param_rooted", "guards"),
    ModuleIndex: ("module", "path", "is_package", "imports", "functions", "classes", "attributes", "value_refs",
                  "properties", "wrappers", "grad_off_wrappers", "torch_function_classes", "shared_fields",
                  "output_hooks", "scripted", "tables", "string_functions"),
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
#: the one empty set of a call site that passes no grad-off flag (most of them)
_NO_ARGS: frozenset = frozenset()
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
                w.op_name, w.point_index, list(w.guard), self.fix(w.fix), self.fix(w.fix_if_callers), w.condition,
                [conditions.encode(c) for c in w.when], w.on_tensor, w.layer, list(w.past_out), w.keyed, w.number]

    def summary(self, s: FunctionSummary) -> list:
        return [s.qual, list(s.params), [self.o(o) for o in s.returns], [self.write(w) for w in s.writes],
                s.declared_no_grad, sorted(s.observed), s.static, s.digest(), s.kept, s.decorated,
                [[self.o(o), [[conditions.encode(c) for c in conds] for conds in paths]] for o, paths in s.returns_when],
                [list(e) for e in s.saves], sorted(s.gradless), sorted(s.flows_out), sorted(s.computed),
                s.no_grad_result]

    def call(self, c: CallSite) -> list:
        return [c.caller, c.callee, self.p(c.path), c.line, c.col,
                [[i, [self.o(o) for o in origins]] for i, origins in c.args], c.no_grad, c.callback,
                sorted(c.unread), None if c.bound is None else sorted(c.bound),
                [[i, conditions.encode_value(v)] for i, v in c.constants],
                [[i, j, [conditions.encode_value(v) for v in d]] for i, j, d in c.passed],
                sorted(c.grad_off_args), self.guards(c.guards),
                None if c.built is None else [[[k, [conditions.encode_value(v) for v in d]] for k, d in b]
                                              for b in c.built]]

    def finding(self, lf: LocalFinding) -> list:
        f = lf.finding
        return [[f.code, f.line, f.col, f.end_line, f.end_col, f.message, f.op, f.write_kind.value, f.target,
                 self.o(f.origin), self.fix(f.fix),
                 [[r.message, r.line, r.col, self.p(r.path), r.role] for r in f.related], f.no_fix],
                lf.func, lf.grad_rule, sorted(lf.observed), self.fix(lf.fix_if_callers), lf.param_rooted,
                None if lf.grad_cond is None else list(lf.grad_cond),
                None if lf.guess_params is None else list(lf.guess_params), self.guards(lf.guards)]

    @staticmethod
    def guards(guards) -> list:
        return [[i, [conditions.encode_value(v) for v in d]] for i, d in guards]

    def index(self, x: ModuleIndex) -> list:
        return [x.module, self.p(x.path), x.is_package, x.imports, {k: list(v) for k, v in x.functions.items()},
                {name: [list(bases), {m: [list(params), static] for m, (params, static) in methods.items()}]
                 for name, (bases, methods) in x.classes.items()},
                x.attributes, x.value_refs, {k: sorted(v) for k, v in x.properties.items()}, sorted(x.wrappers),
                sorted(x.grad_off_wrappers), sorted(x.torch_function_classes), [list(g) for g in x.shared_fields],
                list(x.output_hooks), sorted(x.scripted), {k: list(v) for k, v in x.tables.items()}, sorted(x.string_functions)]


def _text(part) -> str:
    return json.dumps(part, separators=(",", ":"), ensure_ascii=False)


def encode_result(result: FileResult, root: Optional[str]) -> list:
    """``result`` as JSON-ready lists (:func:`decode_result` reads it back, for any path and root). The parts
    in :data:`LAZY_PARTS` are JSON text inside the document (read only when a run needs them)."""
    enc = _Encoder(result.path, root or "")
    body = [result.module, result.digest, _text(enc.index(result.index)),
            [enc.summary(s) for s in result.functions.values()],
            [enc.call(c) for c in result.calls], _text([enc.finding(f) for f in result.findings])]
    return [enc.table] + body + [result.error, _text(result.deps)]


def encoded_deps(encoded: Any) -> Dict[str, str]:
    """The ``deps`` of an encoded result (what names its variant)."""
    return json.loads(encoded[8])


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
        try:
            return conditions.decode(x)
        except ValueError as exc:
            raise BadCache(f"a condition was expected ({exc})") from None

    @staticmethod
    def literal(x) -> Any:
        try:
            return conditions.decode_value(x)
        except ValueError as exc:
            raise BadCache(f"a literal was expected ({exc})") from None

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
         point_index, guard, fix, fix_if_callers, condition, when, on_tensor, layer, past_out, keyed, number) = _list(x, 26)
        if via is not None:
            name, via_path, via_line, via_col = _list(via, 4)
            via = (_str(name), self.p(via_path), _int(via_line), _int(via_col))
        return _make(ParamWrite, func=_str(func), index=_int(index), path=self.p(path), line=_int(line),
                     col=_int(col), end_line=_int(end_line), end_col=_int(end_col), op=_str(op),
                     kind=_WRITE_KINDS[kind], steps=self.steps(steps), target=_str(target), no_grad=_bool(no_grad),
                     kept=_bool(kept), via=via, op_name=_ostr(op_name), point_index=_bool(point_index),
                     guard=_ints(guard), fix=self.fix(fix), fix_if_callers=self.fix(fix_if_callers),
                     condition=_ostr(condition), when=tuple(self.cond(c) for c in _list(when)),
                     on_tensor=_bool(on_tensor), layer=_ostr(layer), past_out=_ints(past_out),
                     keyed=_bool(keyed), number=_bool(number))

    def summary(self, x) -> FunctionSummary:
        qual, params, returns, writes, declared, observed, static, digest, kept, decorated, when, saves, gradless, \
            flows_out, computed, no_grad_result = _list(x, 16)
        return _make(FunctionSummary, qual=_str(qual), params=_strs(params),
                     returns=frozenset(self.o(i) for i in _list(returns)),
                     writes=tuple(self.write(w) for w in _list(writes)), declared_no_grad=_bool(declared),
                     observed=frozenset(_ints(observed)), static=_bool(static), kept=_str(kept),
                     decorated=_str(decorated),
                     returns_when=tuple((self.o(_list(w, 2)[0]),
                                         tuple(tuple(self.cond(c) for c in _list(conds)) for conds in _list(w[1])))
                                        for w in _list(when)),
                     saves=tuple((int(e[0]), _str(e[1]), int(e[2])) for e in (_list(e, 3) for e in _list(saves))),
                     gradless=frozenset(_ints(gradless)), flows_out=frozenset(_ints(flows_out)),
                     computed=frozenset(_ints(computed)), no_grad_result=_bool(no_grad_result),
                     _digest=_str(digest))

    def call(self, x) -> CallSite:
        caller, callee, path, line, col, args, no_grad, callback, unread, bound, constants, passed, off_args, \
            guards, built = _list(x, 15)
        decoded_args = []
        for a in _list(args):
            i, origins = _list(a, 2)
            decoded_args.append((_int(i), frozenset(self.o(k) for k in _list(origins))))
        return _make(CallSite, caller=_str(caller), callee=_str(callee), path=self.p(path), line=_int(line),
                     col=_int(col), args=tuple(decoded_args), no_grad=_bool(no_grad), callback=_bool(callback),
                     unread=frozenset(_ints(unread)), bound=None if bound is None else frozenset(_ints(bound)),
                     constants=tuple((_int(_list(k, 2)[0]), self.literal(k[1])) for k in _list(constants)),
                     passed=tuple((_int(_list(k, 3)[0]), _int(k[1]), tuple(self.literal(v) for v in _list(k[2])))
                                  for k in _list(passed)),
                     grad_off_args=frozenset(_ints(off_args)) or _NO_ARGS, guards=self.guards(guards),
                     built=None if built is None else tuple(
                         tuple((_str(_list(k, 2)[0]), tuple(self.literal(v) for v in _list(k[1]))) for k in _list(b))
                         for b in _list(built)))

    def finding(self, x) -> LocalFinding:
        f, func, grad_rule, observed, fix_if_callers, param_rooted, grad_cond, guess_params, guards = _list(x, 9)
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
                            grad_cond=None if grad_cond is None else self.cond(grad_cond),
                            guess_params=None if guess_params is None else tuple(_int(g) for g in _list(guess_params)),
                            guards=self.guards(guards))

    def guards(self, x) -> tuple:
        return tuple((_int(_list(k, 2)[0]), tuple(self.literal(v) for v in _list(k[1]))) for k in _list(x))

    def index(self, x) -> ModuleIndex:
        module, path, is_package, imports, functions, classes, attributes, value_refs, properties, wrappers, grad_off, \
            torch_function, shared, hooks, scripted, tables, strings = _list(x, 17)
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
                           _ostr(value_refs), {k: frozenset(_strs(v)) for k, v in _dict(properties).items()},
                           frozenset(_strs(wrappers)), frozenset(_strs(grad_off)), frozenset(_strs(torch_function)),
                           tuple(_strs(g) for g in _list(shared)), _ints(hooks), frozenset(_strs(scripted)),
                           {k: _strs(v) for k, v in _dict(tables).items()}, frozenset(_strs(strings)))


def rebase(result: FileResult, path: str, root: Optional[str], old_root: Optional[str]) -> FileResult:
    """``result`` (decoded for another copy of the same text) for ``path`` in the project at ``root``:
    what :func:`decode_result` would give. Paths live in many values (related locations, call sites,
    writes, and the root and view steps of every origin), so the result goes through the codec, whose
    paths are relative to the file and the project root, rather than being copied field by field."""
    return decode_result(json.loads(json.dumps(encode_result(result, old_root))), path, root)


#: the parts of a result that a warm run reads for few files or none (a one-file check reads no file's
#: index or deps and only its own findings; they are half the bytes of a document): kept as JSON text
#: until first read (:class:`CachedResult`, :class:`CachedIndex`)
LAZY_PARTS = ("index", "findings", "deps")


def _decode_part(decode, text: str):
    try:
        return decode(json.loads(text))
    except BadCache:
        raise
    except (KeyError, IndexError, TypeError, ValueError, RecursionError) as exc:
        raise BadCache(f"a result of the wrong shape ({type(exc).__name__})") from exc


class CachedResult(FileResult):
    """A :class:`FileResult` decoded from the cache whose ``findings`` and ``deps`` are decoded on first read,
    with the same type checks (a part of the wrong type raises :class:`BadCache` then). Pickles and copies
    as a plain :class:`FileResult`."""

    def __getattr__(self, name: str):  # only for an attribute not set yet: a part still JSON text
        pending = self.__dict__.get("_pending")
        if not pending or name not in pending:
            raise AttributeError(name)
        value = self.__dict__[name] = _decode_part(*pending[name])
        del pending[name]
        return value

    def __reduce__(self):
        for name in LAZY_PARTS:
            getattr(self, name)
        return _plain, (FileResult,), {k: v for k, v in self.__dict__.items() if k != "_pending"}


class CachedIndex(ModuleIndex):
    """A :class:`ModuleIndex` decoded from the cache on the first read of any field (a warm run that walks
    nothing reads none), with the same type checks (raising :class:`BadCache` then). Pickles and copies as
    a plain :class:`ModuleIndex`."""

    def __getattr__(self, name: str):  # only while the fields are not set: the index still JSON text
        pending = self.__dict__.pop("_pending", None)
        if pending is None:
            raise AttributeError(name)
        self.__dict__.update(_decode_part(*pending).__dict__)
        return getattr(self, name)

    def __reduce__(self):
        getattr(self, "module")
        return _plain, (ModuleIndex,), dict(self.__dict__)


class _DecodedField:
    """A field of :class:`ModuleIndex` with a class default (``wrappers``, ``shared_fields``): read on a
    :class:`CachedIndex` not decoded yet, it decodes the index first (``__getattr__`` is not asked for a name the
    class has), then gives the instance's value."""

    def __init__(self, name: str) -> None:
        self.name = name

    def __get__(self, obj, owner):
        if obj is None:
            return getattr(ModuleIndex, self.name)
        if "_pending" in obj.__dict__:
            obj.__getattr__(self.name)
        return obj.__dict__.get(self.name, getattr(ModuleIndex, self.name))


for _field in dataclasses.fields(ModuleIndex):
    if _field.name in ModuleIndex.__dict__:  # (a class attribute: the field's default)
        setattr(CachedIndex, _field.name, _DecodedField(_field.name))


def _plain(cls):
    return _new(cls)


def decode_result(encoded: Any, path: str, root: Optional[str]) -> FileResult:
    """The :class:`FileResult` of ``path`` from :func:`encode_result`'s lists (a :class:`CachedResult`);
    raises :class:`BadCache` when anything is not of the type it must be (a part in :data:`LAZY_PARTS`:
    when it is first read)."""
    try:
        table, module, digest, index, functions, calls, findings, error, deps = _list(encoded, 9)
        dec = _Decoder(path, root or "", table)
        summaries = [dec.summary(s) for s in _list(functions)]
        return _make(CachedResult, path=path, module=_str(module), digest=_str(digest),
                     index=_make(CachedIndex, _pending=(dec.index, _str(index))),
                     functions={s.qual: s for s in summaries}, calls=[dec.call(c) for c in _list(calls)],
                     error=_ostr(error),
                     _pending={"findings": (lambda x: [dec.finding(f) for f in _list(x)], _str(findings)),
                               "deps": (_str_map, _str(deps))})
    except BadCache:
        raise
    except (KeyError, IndexError, TypeError, ValueError, RecursionError) as exc:
        raise BadCache(f"a result of the wrong shape ({type(exc).__name__})") from exc
