"""Walk again only the functions whose text changed (the language server, per keystroke).

A file walked again with a :class:`FunctionCache` (one per open buffer, kept by its
:class:`~.project.Project`) looks up each top-level function and each method of a top-level class
by its text (decorators included), its position and everything its walk starts from (the scope the
``def`` opens: names in scope, imports, grad mode, class facts). Every question the walk asked the
project (``ctx.function``, ``ctx.summary``, ``ctx.method``, ... , with their answers) was recorded;
an entry is used only when each question, asked again now, gets the same answer, so a callee whose
summary changed, or a function that appeared or vanished, walks its callers again. A used entry
replays what the walk left: its findings, call sites, summaries (its own and its nested functions')
and, through the questions asked again, the file's dependencies.

Functions inside loops, branches or other functions are not cached (they are walked with the
function or module body that holds them). An edit that shifts lines walks every function below it
again (their positions are part of the key: findings, call sites and origins carry lines).
"""
from __future__ import annotations

import ast
import dataclasses
import itertools
from typing import Any, Dict, List, Sequence, Tuple

from .. import textpos

#: the scope fields a function's walk does not start from (shared containers, the node, the project)
_NOT_STATE = frozenset({"sink", "func", "facts_cache", "ctx", "stmt_stack", "loop_stack", "blocks",
                        "local_cond_cache"})


def _frozen(value: Any) -> Any:
    if isinstance(value, dict):
        return tuple(value.items())
    if isinstance(value, (set, list)):
        return tuple(value) if isinstance(value, list) else frozenset(value)
    return value


def _state(scope) -> tuple:
    """What a function's walk starts from: every field of its scope but the shared ones."""
    return tuple((f.name, _frozen(getattr(scope, f.name))) for f in dataclasses.fields(scope)
                 if f.name not in _NOT_STATE)


def _same(now: Any, before: Any) -> bool:
    if now is before:
        return True
    if now != before:
        return False
    writes = getattr(now, "writes", None)  # a FunctionSummary: its writes' fixes are compare=False
    if writes is not None:
        return all(a.fix == b.fix and a.fix_if_callers == b.fix_if_callers for a, b in zip(writes, before.writes))
    return True


@dataclasses.dataclass
class _Entry:
    state: tuple
    reads: List[Tuple[str, tuple, Any]]
    summary: Any
    calls: list
    findings: list
    functions: list
    params: list


class FunctionCache:
    """The cached function walks of one file (the entries its last walk used or made)."""

    def __init__(self) -> None:
        self.entries: Dict[tuple, _Entry] = {}
        self.hits = 0
        self.misses = 0

    def start(self, tree: ast.Module, source: str, ctx) -> "Walk":
        return Walk(self, tree, source, ctx)


class Walk:
    """One walk of a file with its :class:`FunctionCache`."""

    def __init__(self, cache: FunctionCache, tree: ast.Module, source: str, ctx) -> None:
        self.cache = cache
        self.old = cache.entries
        cache.entries = {}
        self.lines = textpos.split_lines(source)
        self.ctx = ctx
        cacheable = set()
        for node in tree.body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                cacheable.add(id(node))
            elif isinstance(node, ast.ClassDef):
                cacheable.update(id(n) for n in node.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)))
        self.cacheable = cacheable

    def walk(self, child, node, declared: bool, static: bool):
        """Walk ``node``'s body in ``child`` (its new scope), or replay an equal earlier walk; its summary."""
        if id(node) not in self.cacheable:
            child.run_body(node.body)
            return child.summary(declared, static)
        first = min([node.lineno] + [d.lineno for d in node.decorator_list])
        text = "".join(self.lines[first - 1:node.end_lineno])
        key = (child.qual, first, node.col_offset, node.end_lineno, node.end_col_offset, text, declared, static)
        state = _state(child)
        ctx = self.ctx
        entry = self.old.get(key)
        if entry is not None and entry.state == state and self._still_true(entry.reads):
            ctx.calls.extend(entry.calls)
            for k, v in entry.findings:
                child.sink.setdefault(k, v)
            ctx.functions.update(entry.functions)
            ctx.params.update(entry.params)
            self.cache.entries[key] = entry
            self.cache.hits += 1
            return entry.summary
        self.cache.misses += 1
        recorder = _Recorder(ctx)
        child.ctx = recorder
        n_calls, n_found, n_funcs, n_params = len(ctx.calls), len(child.sink), len(ctx.functions), len(ctx.params)
        sink = child.sink
        child.run_body(node.body)
        summary = child.summary(declared, static)
        self.cache.entries[key] = _Entry(
            state, recorder.reads, summary, ctx.calls[n_calls:],
            list(itertools.islice(sink.items(), n_found, None)),
            list(itertools.islice(ctx.functions.items(), n_funcs, None)),
            list(itertools.islice(ctx.params.items(), n_params, None)))
        return summary

    def _still_true(self, reads: Sequence[Tuple[str, tuple, Any]]) -> bool:
        ctx = self.ctx
        for name, args, answer in reads:
            if not _same(getattr(ctx, name)(*args), answer):
                return False
        return True


class _Recorder:
    """The module context as a function's walk sees it: every question and its answer is recorded."""

    def __init__(self, ctx) -> None:
        self._ctx = ctx
        self.reads: List[Tuple[str, tuple, Any]] = []

    def __getattr__(self, name: str):  # module, path, root, calls, params, functions: the real ones
        return getattr(self._ctx, name)

    def _ask(self, name: str, *args):
        answer = getattr(self._ctx, name)(*args)
        self.reads.append((name, args, answer))
        return answer

    def resolve(self, qual):
        return self._ask("resolve", qual)

    def function(self, qual):
        return self._ask("function", qual)

    def method(self, cls_qual, name, skip_self=False):
        return self._ask("method", cls_qual, name, skip_self)

    def attribute_class(self, cls_qual, attr):
        return self._ask("attribute_class", cls_qual, attr)

    def attribute_builder(self, cls_qual, attr, default=True):
        return self._ask("attribute_builder", cls_qual, attr, default)

    def compiles_torchscript(self):
        return self._ask("compiles_torchscript")

    def class_facts(self):
        return self._ask("class_facts")

    def module_class(self, cls_qual):
        return self._ask("module_class", cls_qual)

    def function_class(self, cls_qual):
        return self._ask("function_class", cls_qual)

    def wrapper_function(self, qual):
        return self._ask("wrapper_function", qual)

    def torch_layer_base(self, cls_qual):
        return self._ask("torch_layer_base", cls_qual)

    def plain_class(self, cls_qual):
        return self._ask("plain_class", cls_qual)

    def tensor_class(self, cls_qual):
        return self._ask("tensor_class", cls_qual)

    def framework_runs_without_grad(self, cls_qual, method):
        return self._ask("framework_runs_without_grad", cls_qual, method)

    # commands, not questions: passed on, nothing to record (a function walked from its cache defers nothing)
    def defer(self, qual, walk_body):
        self._ctx.defer(qual, walk_body)

    def finish(self):
        self._ctx.finish()

    def dispatch(self, cls_qual, name):
        return self._ask("dispatch", cls_qual, name)

    def table(self, qual):
        return self._ask("table", qual)

    def returns_string(self, qual):
        return self._ask("returns_string", qual)

    def params_of(self, qual):
        return self._ask("params_of", qual)

    def summary(self, qual):
        return self._ask("summary", qual)

    def index_classes(self):
        return self._ask("index_classes")
