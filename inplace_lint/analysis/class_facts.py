"""Facts a module's classes state about every tensor or model output in the project, read when it is indexed.

A fix rebinds the written name to an out-of-place result (``x = x.clone().div_(t)``). Two things a class
elsewhere in the project can do make that rewrite change what the program computes, although nothing in the
function with the write shows it:

- :func:`torch_function_classes`: a tensor subclass with its own ``__torch_function__`` decides what type an
  op on one of its instances returns. With ``__torch_function__ = torch._C._disabled_torch_function_impl``
  ``clone()`` returns a plain ``Tensor``, while an in-place op keeps the object and so its class; a method of
  the subclass called on the rewritten name then raises ``AttributeError`` (docs/fixes.md, "Tensor subclasses";
  https://pytorch.org/docs/stable/notes/extending.html#extending-torch-with-a-tensor-wrapper-type).
- :func:`shared_output_fields`: a model's ``forward`` that returns one tensor under two names
  (``Out(logits=h, scores=h)``) makes those fields one storage: writing ``out.logits`` in place changes
  ``out.scores`` too, and a rewrite of the write would not (a model output is a record of distinct fields
  only where its ``forward`` says so; issue 20, "a model output is an object with fields").
"""
from __future__ import annotations

import ast
import re
from typing import Dict, FrozenSet, List, Optional, Set, Tuple

from ..findings import RootKind
from ..torch_facts import ops
from .astutil import dotted_name, is_true, kw, walk_ast
from .init_builds import init_attributes
from .model_outputs import RETURN_INPUT_LAYERS

#: a marker of :func:`torch_function_classes`: the module makes tensor-subclass instances where the index cannot
#: name the class (``x.as_subclass(C)``, ``torch.Tensor._make_subclass(C, x)``, a subclass defined in a function
#: or with ``type(...)``)
SUBCLASSING = "<as_subclass>"
#: a class defined inside a function or class body with a tensor base (its line starts indented; its bases may
#: wrap onto the next lines, up to the colon), or a class made by ``type(name, (bases...), {...})``
_NESTED_TENSOR_CLASS = re.compile(r"\n[ \t\f]+class\s[^:]*(?:Tensor|Parameter)")
_TYPE_CALL = re.compile(r"\btype\(\s*[\w\"'.]+\s*,\s*\(")


def _may_subclass(source: str) -> bool:
    """The text may make tensor-subclass instances the index cannot name (substring tests first: a regular
    expression over every file's text costs a few percent of a cold check, ``\\btype\\(`` most of it)."""
    return "subclass(" in source \
        or ("Tensor" in source or "Parameter" in source) and _NESTED_TENSOR_CLASS.search(source) is not None \
        or "type(" in source and _TYPE_CALL.search(source) is not None


def torch_function_classes(tree: ast.Module, source: Optional[str] = None) -> FrozenSet[str]:
    """The top-level classes whose body defines or assigns ``__torch_function__`` (anywhere in it, an ``if``
    included); and :data:`SUBCLASSING` when the module makes instances of a tensor subclass the index cannot
    name. Whether a named class is a tensor subclass at all is for the project to say
    (:meth:`.resolve.Resolver.tensor_class`: a ``TorchFunctionMode`` is not); every top-level class that surely
    is one counts too (:meth:`.resolve.Resolver.class_facts`): ``clone()`` of an instance drops what was set on
    it, or its class when it disables ``__torch_function__`` as ``nn.Parameter`` does."""
    out = set()
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and any(_defines_torch_function(item) for item in _statements(node.body)):
            out.add(node.name)
    if source is None or _may_subclass(source):
        if any(_makes_subclass(n) for n in walk_ast(tree)):
            out.add(SUBCLASSING)
    return frozenset(out)


def _makes_subclass(node: ast.AST) -> bool:
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
            and node.func.attr in ("as_subclass", "_make_subclass"):
        return True
    bases = node.bases if isinstance(node, ast.ClassDef) else (
        node.args[1].elts if isinstance(node, ast.Call) and _name(node.func) == "type" and len(node.args) == 3
        and isinstance(node.args[1], ast.Tuple) else ())
    # a nested class (a top-level one is named by the index) or `type("C", (torch.Tensor,), {...})`
    return any((_name(b) or "").rpartition(".")[2] in ("Tensor", "Parameter") for b in bases) and not (
        isinstance(node, ast.ClassDef) and node.col_offset == 0)


def _defines_torch_function(item: ast.stmt) -> bool:
    if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return item.name == "__torch_function__"
    targets = item.targets if isinstance(item, ast.Assign) else [item.target] if isinstance(
        item, ast.AnnAssign) else []
    return any(isinstance(t, ast.Name) and t.id == "__torch_function__" for t in targets)


#: the group that joins every field: two positional arguments of a record from one tensor (``Out(h, h)``), whose
#: field names the index cannot see
ANY_FIELD = "*"
#: methods whose result is the receiver itself or shares its storage (views, expansions, the outputs of a split,
#: ``as_subclass``); an in-place method (``h.mul_(1)``) returns its receiver too
_SAME_STORAGE = ops.VIEW_METHODS | ops.MAY_ALIAS_METHODS | ops.EXPAND_METHODS | ops.MULTI_VIEW_METHODS \
    | ops.SLICED_VIEW_METHODS | frozenset({"as_subclass", "as_tensor", "asarray"})
#: methods that put a value into a container field (``o.scores.append(h)``)
_FILLING_METHODS = frozenset({"append", "extend", "insert", "add", "update", "setdefault"})


def shared_output_fields(tree: ast.Module, attributes: Optional[Dict[str, Dict[str, str]]] = None
                         ) -> Tuple[Tuple[str, ...], ...]:
    """Groups of field names (sorted) that a function of the module that makes a model's output
    (:func:`_makes_outputs`: top-level, or a method of a top-level class) returns one tensor under: ``return
    Out(logits=h, scores=h)``, ``return {"logits": h, "probs": h.squeeze(0)}``, ``o = Out(logits=h, scores=s);
    o.extra = o.logits; return o``. A field's value is followed through renames (tuple unpacking and ``:=`` too),
    subscripts, views, expansions, the outputs of a split, in-place methods and ``inplace=True`` calls (which return
    their input), ``as_subclass``/``as_tensor``, a module ``__init__`` built as ``nn.Identity``, containers and both
    arms of ``a if c else b``, to the names it may be; fields that may be one name are one group; ``Out(h, h)``
    gives :data:`ANY_FIELD`. The helpers of a model class (``self._pack(h)``) and the classmethods of any class
    (``Out.from_hidden(h)``) are read the same way; a class's ``__init__``/``__post_init__`` filling one field from
    another (``self.scores = self.logits``) and a property returning another field join them too. Not followed: a
    model class defined inside a function, a record built by a function of another class (docs/fixes.md).
    ``attributes``: the module index's (:func:`.init_builds.init_attributes` of each class), when at hand."""
    groups = set()
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and _makes_outputs(node.name):
            groups.update(_function_groups(node, frozenset()))  # a forward patched onto a model class
        elif isinstance(node, ast.ClassDef):
            methods = [i for i in node.body if isinstance(i, (ast.FunctionDef, ast.AsyncFunctionDef))]
            model = any(_makes_outputs(m.name) for m in methods)
            record_class = _record_class(node)
            identity = frozenset()
            if model:
                built = attributes.get(node.name, {}) if attributes is not None else init_attributes(node)
                identity = frozenset(a for a, builder in built.items()
                                     if builder.rpartition(".")[2] in RETURN_INPUT_LAYERS)
            for item in methods:
                decorators = {(_name(d) or "").rpartition(".")[2] for d in item.decorator_list}
                if model or decorators & {"classmethod", "staticmethod"}:
                    # a forward, and the helpers that may build its output (`self._pack(h)`, `Out.from_hidden(h)`)
                    groups.update(_function_groups(item, identity, own_class=record_class))
                elif record_class and item.name in ("__init__", "__post_init__") and item.args.args:
                    # a record class that fills one field from another (`self.scores = self.logits`)
                    groups.update(_function_groups(item, identity, record=item.args.args[0].arg))
                elif record_class and decorators & {"property", "cached_property"} and item.args.args:
                    # `@property def scores(self): return self.logits`
                    me = item.args.args[0].arg
                    follow = _Sources({}, identity)
                    for stmt in _statements(item.body):
                        if isinstance(stmt, ast.Return):
                            groups.update(tuple(sorted({item.name, source[len(me) + 1:]}))
                                          for source in follow(stmt.value)
                                          if source.startswith(f"{me}.") and source.count(".") == 1)
    return tuple(sorted(g for g in groups if len(g) > 1 or g == (ANY_FIELD,)))


def _record_class(cls: ast.ClassDef) -> bool:
    """A class whose instances are records of fields: a ``@dataclass``, or a subclass of ``ModelOutput`` (or any
    ``...Output``), ``NamedTuple``, ``dict`` or ``SimpleNamespace``."""
    if any((_name(d.func if isinstance(d, ast.Call) else d) or "").rpartition(".")[2] == "dataclass"
           for d in cls.decorator_list):
        return True
    return any(base.endswith("Output") or base in ("NamedTuple", "dict", "OrderedDict", "SimpleNamespace", "Namespace")
               for base in ((_name(b) or "").rpartition(".")[2] for b in cls.bases))


def _makes_outputs(name: str) -> bool:
    """A function whose result may be a model's output: ``forward``, ``__call__``, ``_forward``,
    ``forward_features``, a ``forward`` patched onto a class (``qwen2_forward``)."""
    return name == "__call__" or "forward" in name


def _statements(body):
    """The statements of a body and of the blocks in it, not of nested functions or classes (cheap: no
    expression is visited)."""
    for stmt in body:
        yield stmt
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            continue
        for name in ("body", "orelse", "finalbody"):
            inner = getattr(stmt, name, None)
            if inner:
                yield from _statements(inner)
        for handler in getattr(stmt, "handlers", ()):
            yield from _statements(handler.body)
        for case in getattr(stmt, "cases", ()):
            yield from _statements(case.body)


def _is_record(node: ast.expr, fields: int = 2, own_class: bool = False) -> bool:
    """``Out(...)``, ``dict(...)``, ``{...}`` with ``fields`` fields or more: a class (a CapWords name) or ``dict``
    called with that many arguments, or a dict display of that many keys; ``cls(...)`` in a record class's own
    classmethod (``own_class``). A function's call (``torch.cat(a, a)``)
    is no record."""
    if isinstance(node, ast.Dict):
        return len(node.keys) >= fields
    if not isinstance(node, ast.Call) or len(node.args) + len(node.keywords) < fields:
        return False
    name = (_name(node.func) or "").rpartition(".")[2]
    return name == "dict" or (name == "cls" and own_class) or name.lstrip("_")[:1].isupper()


def _function_groups(func: ast.AST, identity: FrozenSet[str], record: Optional[str] = None,
                     own_class: bool = False) -> List[Tuple[str, ...]]:
    """The groups of one function's returned records; ``record``: the name (``self``) of the record the function
    fills instead (an ``__init__``); ``own_class``: ``cls(...)`` builds a record (a record class's classmethod)."""
    statements = list(_statements(func.body))
    if record is not None:
        returns: List[ast.expr] = [ast.Name(id=record)]
    else:
        returns = [s.value for s in statements if isinstance(s, ast.Return) and s.value is not None]
        # (a name bound to a record may get its fields later: `o = Out(logits=h); o.scores = h; return o`)
        records = {t.id for s in statements if isinstance(s, (ast.Assign, ast.AnnAssign)) and s.value is not None
                   and _is_record(s.value, 0, own_class)
                   for t in (s.targets if isinstance(s, ast.Assign) else [s.target]) if isinstance(t, ast.Name)}
        returns = [v for v in returns if _is_record(v, 2, own_class) or (isinstance(v, ast.Name) and v.id in records)]
    if not returns:
        return []  # (most functions: nothing below is computed for them)
    renames: Dict[str, Set[str]] = {}
    built: Dict[str, ast.expr] = {record: ast.Dict(keys=[], values=[])} if record is not None else {}
    stores: Dict[str, List[Tuple[str, ast.expr]]] = {}  # `o.extra = v`, `o["extra"] = v`, `setattr(o, "extra", v)`
    follow = _Sources(renames, identity)
    for stmt in statements:
        if isinstance(stmt, (ast.Assign, ast.AnnAssign)) and stmt.value is not None:
            for target in (stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]):
                _bind(target, stmt.value, follow, renames, built, stores)
            if isinstance(stmt.value, (ast.Call, ast.Dict, ast.NamedExpr)):
                follow.walrus(stmt.value)
        elif isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call):
            call, func = stmt.value, stmt.value.func
            if _name(func) == "setattr" and len(call.args) == 3 and isinstance(call.args[0], ast.Name) \
                    and isinstance(call.args[1], ast.Constant) and isinstance(call.args[1].value, str):
                stores.setdefault(call.args[0].id, []).append((call.args[1].value, call.args[2]))
            elif isinstance(func, ast.Attribute) and func.attr in _FILLING_METHODS and call.args \
                    and isinstance(func.value, ast.Attribute) and isinstance(func.value.value, ast.Name):
                # `o.scores.append(h)`: a field that is a list (`field(default_factory=list)`) now holds `h`
                stores.setdefault(func.value.value.id, []).append((func.value.attr, call.args[-1]))
        elif isinstance(stmt, ast.Return) and stmt.value is not None and stmt.value in returns:
            follow.walrus(stmt.value)
    out = []
    for value in returns:
        name = value.id if isinstance(value, ast.Name) else None
        record = built.get(name, value) if name is not None else value
        fields = _fields(record, follow)
        if fields is None:
            out.append((ANY_FIELD,))
            continue
        for field, item in stores.get(name, ()) if name is not None else ():
            # `o.extra = o.logits`: the stored value may be another field of the same record
            sources = follow(item)
            for other, other_sources in list(fields.items()):
                if f"{name}.{other}" in sources or f"{name}[{other!r}]" in sources:
                    sources |= other_sources
            for source in sources:
                if source.startswith(f"{name}.") and source.count(".") == 1:
                    # (`self.scores = self.logits` in `__post_init__`: `logits` is a field the call filled)
                    fields.setdefault(source[len(name) + 1:], set()).add(source)
            fields[field] = fields.get(field, set()) | sources
        by_source: Dict[str, Set[str]] = {}
        for field, sources in fields.items():
            for source in sources:
                by_source.setdefault(source, set()).add(field)
        joined: List[Set[str]] = []
        for names in by_source.values():
            if len(names) > 1:
                hit = [g for g in joined if g & names]
                merged = set(names).union(*hit)
                joined = [g for g in joined if not g & names] + [merged]
        out.extend(tuple(sorted(g)) for g in joined)
    return out


def _bind(target, value, follow, renames, built, stores) -> None:
    if isinstance(target, (ast.Tuple, ast.List)):
        values = value.elts if isinstance(value, (ast.Tuple, ast.List)) and len(value.elts) == len(target.elts) \
            else [value] * len(target.elts)
        for t, v in zip(target.elts, values):
            _bind(t.value if isinstance(t, ast.Starred) else t, v, follow, renames, built, stores)
        return
    if isinstance(target, ast.Subscript) and isinstance(target.value, ast.Attribute) \
            and isinstance(target.value.value, ast.Name):
        stores.setdefault(target.value.value.id, []).append((target.value.attr, value))  # `o.extra["s"] = h`
    if isinstance(target, (ast.Attribute, ast.Subscript)) and isinstance(target.value, ast.Name):
        field = target.attr if isinstance(target, ast.Attribute) else (
            target.slice.value if isinstance(target.slice, ast.Constant) and isinstance(target.slice.value, str)
            else None)
        if field is not None:
            stores.setdefault(target.value.id, []).append((field, value))
    name = _name(target)
    if name is None:
        return
    if isinstance(value, (ast.Call, ast.Dict)) and isinstance(target, ast.Name):
        built[name] = value
    renames.setdefault(name, set()).update(follow(value, False) - {name})


class _Sources:
    """The names (``h``, ``self.last``) a value may be, or share its storage with."""

    def __init__(self, renames: Dict[str, Set[str]], identity: FrozenSet[str]) -> None:
        self.renames = renames
        self.identity = identity

    def walrus(self, node: ast.expr) -> None:
        for sub in walk_ast(node):
            if isinstance(sub, ast.NamedExpr) and isinstance(sub.target, ast.Name):
                self.renames.setdefault(sub.target.id, set()).update(self(sub.value, False) - {sub.target.id})

    def __call__(self, node: Optional[ast.expr], expand: bool = True) -> Set[str]:
        """``expand``: follow the renames too (a rename is recorded unexpanded: a chain of them is followed once,
        where it is read, not again at every link)."""
        out: Set[str] = set()
        todo = [node]
        while todo:
            node = todo.pop()
            if node is None:
                continue
            if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
                todo.extend(node.elts)
            elif isinstance(node, ast.Dict):
                todo.extend(node.values)
            elif isinstance(node, ast.IfExp):
                todo.extend((node.body, node.orelse))
            elif isinstance(node, ast.BoolOp):
                todo.extend(node.values)
            elif isinstance(node, (ast.NamedExpr, ast.Starred)):
                todo.append(node.value)
            elif isinstance(node, ast.Subscript):
                key = node.slice.value if isinstance(node.slice, ast.Constant) else None
                name = _name(node.value) if isinstance(key, str) else None
                if name is not None:
                    out.add(f"{name}[{key!r}]")  # `d["lo"]`, `d["hi"]`: two items of a dict, not one tensor
                else:
                    todo.append(node.value)
            elif isinstance(node, ast.Attribute) and node.attr in ops.VIEW_ATTRIBUTES:
                todo.append(node.value)
            elif isinstance(node, ast.Call):
                todo.extend(self._returned_input(node))
            else:
                name = _name(node)
                if name is not None:
                    out.add(name)
        if not expand:
            return out
        # renames, to a fixed point (`s = h; t = s`)
        todo = list(out)
        while todo:
            for source in self.renames.get(todo.pop(), ()):
                if source not in out:
                    out.add(source)
                    todo.append(source)
        return out

    def _returned_input(self, node: ast.Call) -> List[ast.expr]:
        """What a call may return itself (or a view of): its receiver or first argument."""
        func = node.func
        first = node.args[0] if node.args else None
        if any(k.arg == "inplace" and not (isinstance(k.value, ast.Constant) and k.value.value is False)
               for k in node.keywords):
            return [first] if first is not None else []  # `F.relu(h, inplace=True)` returns `h`
        if not isinstance(func, ast.Attribute):
            return []
        head = _name(func.value)
        if head in ("torch", "th", "np", "numpy") or (head or "").startswith("torch."):
            return [first] if first is not None and func.attr in _SAME_STORAGE else []
        called = _name(func)
        if called is not None and called.startswith("self.") and called[5:] in self.identity:
            return [first] if first is not None else []  # `self.act(h)` with `self.act = nn.Identity()`
        if func.attr in _SAME_STORAGE or (func.attr.endswith("_") and not func.attr.endswith("__")):
            return [func.value]  # a view, or an in-place method's receiver
        return []


def _fields(record: ast.expr, follow: _Sources) -> Optional[Dict[str, Set[str]]]:
    """Field name -> the names its value may be, of a returned ``Out(a=..., b=...)``, ``dict(a=...)`` or ``{"a":
    ...}``; None when two positional arguments may be one tensor (their field names are not in the call)."""
    if isinstance(record, ast.Call):
        positional = [follow(a) for a in record.args]
        keywords = {k.arg: follow(k.value) for k in record.keywords if k.arg is not None}
        seen: Set[str] = set()
        for sources in positional:
            if sources & seen or any(sources & v for v in keywords.values()):
                return None
            seen |= sources
        return keywords
    if isinstance(record, ast.Dict):
        return {k.value: follow(v) for k, v in zip(record.keys, record.values)
                if isinstance(k, ast.Constant) and isinstance(k.value, str)}
    return {}


def _name(node: ast.expr) -> Optional[str]:
    return dotted_name(node) if isinstance(node, (ast.Name, ast.Attribute)) else None


#: what registers a forward hook: it receives each output of the module it is put on (every module's, for the
#: global one) and may keep it
_FORWARD_HOOKS = ("register_forward_hook", "register_module_forward_hook")
#: the text of anything else that sees a module's or an op's output: a hook's registration made otherwise
#: (``getattr(m, "register_forward_hook")``, an alias of the global one, a store into ``m._forward_hooks``), a
#: mode that sees every op (``TorchDispatchMode``, ``TorchFunctionMode``), a torch layer's ``forward`` replaced
_OUTPUT_WATCHERS = re.compile(r"register_forward_hook|register_module_forward_hook|_forward_hooks|TorchDispatchMode"
                              r"|TorchFunctionMode|\bnn\.\w+\.forward\s*=")


_WATCHER_TEXTS = ("_forward_hook", "TorchDispatchMode", "TorchFunctionMode", ".forward")


def output_hooks(tree: ast.Module, source: Optional[str] = None) -> Tuple[int, ...]:
    """The lines of what may keep a module's output it sees: each forward-hook registration whose hook may keep
    its output (one the module does not define, one that reads its ``output`` parameter at all: a hook that stores
    it keeps it after the call, and the rewrite of a later in-place write would leave the kept tensor unchanged),
    and every other line of :data:`_OUTPUT_WATCHERS` (a review's routes, each executed)."""
    if source is not None and not (any(text in source for text in _WATCHER_TEXTS)
                                   and _OUTPUT_WATCHERS.search(source)):
        return ()  # (substrings first: a regular expression over every file's text costs about 1% of a cold check)
    nodes = list(walk_ast(tree))
    defs: Dict[str, List[ast.AST]] = {}
    for node in nodes:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            defs.setdefault(node.name, []).append(node)
    out, harmless = set(), set()
    for node in nodes:
        if isinstance(node, ast.Call) and (dotted_name(node.func) or "").rpartition(".")[2] in _FORWARD_HOOKS:
            hook = node.args[0] if node.args else kw(node, "hook")
            if hook is None or _may_keep_output(hook, defs, 3 if is_true(kw(node, "with_kwargs")) else 2):
                out.add(node.lineno)
            else:
                harmless.update(range(node.lineno, (node.end_lineno or node.lineno) + 1))
    if source is not None:
        out.update(line for line in (source.count("\n", 0, m.start()) + 1 for m in _OUTPUT_WATCHERS.finditer(source))
                   if line not in harmless)
    return tuple(sorted(out))


def _may_keep_output(hook: ast.expr, defs: Dict[str, List[ast.AST]], index: int) -> bool:
    candidates = [hook] if isinstance(hook, ast.Lambda) else defs.get((dotted_name(hook) or "").rpartition(".")[2])
    if not candidates:
        return True
    for fn in candidates:
        params = [a.arg for a in fn.args.posonlyargs + fn.args.args]
        if params[:1] in (["self"], ["cls"]) and not isinstance(fn, ast.Lambda):
            params = params[1:]
        if len(params) <= index:
            if fn.args.vararg is not None:
                return True
            continue
        if any(isinstance(n, ast.Name) and n.id == params[index] for n in walk_ast(fn)):
            return True
    return False


#: what compiles code as TorchScript (``torch.jit.script`` called, imported or aliased, as a decorator too)
_SCRIPTS = re.compile(r"jit\.script\b|torch\.jit\s+import\b|import\s+torch\.jit\b")
#: :func:`scripted_names`' answer for a module that compiles TorchScript
ANY_SCRIPTED = "*"


def scripted_names(tree: ast.Module, source: Optional[str] = None) -> FrozenSet[str]:
    """``{ANY_SCRIPTED}`` when the module compiles TorchScript (``torch.jit.script(Net())``, ``from torch.jit import
    script``, ``compile_ts = torch.jit.script``, ``@torch.jit.script``): what it compiles may be any class or
    function of the project (a variable, a factory's result, every submodule of a scripted module, every function a
    scripted function calls), and TorchScript compiles neither the DTensor guard nor the runtime call, so no code of
    the project gets a fix (a review's 8 ways to script a class of another file, each executed)."""
    if source is not None:
        return frozenset({ANY_SCRIPTED}) if "jit" in source and _SCRIPTS.search(source) else frozenset()
    return frozenset({ANY_SCRIPTED}) if any(
        isinstance(n, ast.Attribute) and n.attr == "script" and (dotted_name(n.value) or "").endswith("jit")
        or isinstance(n, ast.ImportFrom) and (n.module or "").startswith("torch.jit")
        or isinstance(n, ast.Import) and any(a.name.startswith("torch.jit") for a in n.names)
        for n in walk_ast(tree)) else frozenset()


#: :meth:`.resolve.Resolver.class_facts` where there is no project (one file alone)
NO_PROJECT_FACTS: Tuple[tuple, tuple, tuple, tuple] = ((), (), (), ())


def scripted_elsewhere(facts: tuple) -> bool:
    """Some module of the project compiles TorchScript (:func:`scripted_names`)."""
    return ANY_SCRIPTED in facts[3]


def unseen_in_project(facts: tuple, origins) -> Optional[str]:
    """Why something elsewhere in the project would not see what a rebinding rewrite leaves behind, or None: a
    forward hook that may keep a module's output (on any module: every tensor a factory did not make), or a
    tensor subclass (the copy a rewrite makes may not be one)."""
    subclasses, _, hooks, _ = facts
    if hooks and any(o.root is not RootKind.FRESH for o in origins):
        return (f"a forward hook the project registers ({hooks[0]}) may keep a module's output, which would no "
                "longer see the change")
    if subclasses:
        return (f"the project makes tensor-subclass instances ({subclasses[0]}): the copy a rewrite makes may not be "
                "one (`clone()` drops what was set on the instance, and returns a plain `Tensor` where the subclass "
                "disables `__torch_function__`)")
    return None
