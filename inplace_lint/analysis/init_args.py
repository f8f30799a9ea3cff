"""What a class's ``__init__`` says about its instances, read without walking function bodies: the flags it copies
from its parameters (``self.relu = relu``), the attributes that are None wherever a parameter is None
(``self.act = None; if activation is not None: self.act = ...``) and the constant arguments it builds each
submodule with (``self.conv2 = ConvBlock(c, c, activation=None)``, once or in several arms). A branch of a
method on such a flag is decided by what built the instance (:mod:`.conditions`, issue 20: "callee summaries are
specialised for the constant arguments at each call site")."""
from __future__ import annotations

import ast
from typing import Dict, List, Optional, Sequence, Set, Tuple

from .astutil import defaults, dotted_name, walk_ast
from .conditions import literal
from .model_outputs import _init, _self_attr, assignment_counts


def init_flags(cls: ast.ClassDef, counts: Optional[Dict[str, int]] = None) -> Dict[str, Tuple[str, int, tuple]]:
    """``self.relu = relu`` at the top level of ``__init__``, the only assignment to ``self.relu`` in the class:
    ``{"relu": ("relu", position, default)}`` (the position after ``self``, -1 for a keyword-only parameter; the
    parameter's literal default, ``()`` when none): a branch on ``self.relu`` is decided by what built the
    instance (:mod:`.conditions`)."""
    init = _init(cls)
    if init is None:
        return {}
    args = init.args
    positional = (args.posonlyargs + args.args)[1:]
    given = defaults(args)
    names = [a.arg for a in positional]
    kwonly = {a.arg for a in args.kwonlyargs}
    counts = assignment_counts(cls) if counts is None else counts
    out = {}
    for node in init.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and _self_attr(node.targets[0]) \
                and isinstance(node.value, ast.Name) and (node.value.id in names or node.value.id in kwonly) \
                and counts.get(node.targets[0].attr) == 1:
            param = node.value.id
            out[node.targets[0].attr] = (param, names.index(param) if param in names else -1,
                                         literal(given.get(param)))
    return out


def init_guards(cls: ast.ClassDef, counts: Optional[Dict[str, int]] = None) -> Dict[str, Tuple[str, int, tuple]]:
    """``self.act = None`` at the top level of ``__init__``, then every other assignment to ``self.act`` in the class
    inside one ``if activation is not None:`` (or ``if activation:``, or such a test joined by ``and``) at that top
    level: ``{"act": ("activation", position, default)}``. Where the instance was built with ``activation=None``,
    ``self.act`` is None, so a branch on ``if self.act:`` is not taken (:meth:`.BranchesMixin.param_condition`):
    orbit-torch's ``ConvBlock(..., activation=None)`` runs no activation."""
    init = _init(cls)
    if init is None:
        return {}
    args = init.args
    names = [a.arg for a in (args.posonlyargs + args.args)[1:]]
    kwonly = {a.arg for a in args.kwonlyargs}
    given = defaults(args)
    if not any(isinstance(n, ast.Assign) and isinstance(n.value, ast.Constant) and n.value.value is None
               for n in init.body):
        return {}  # (most classes set no attribute to None first)
    rebound = {t.id for n in walk_ast(init) if isinstance(n, (ast.Assign, ast.AugAssign, ast.AnnAssign))
               for t in (n.targets if isinstance(n, ast.Assign) else [n.target]) if isinstance(t, ast.Name)}
    counts = assignment_counts(cls) if counts is None else counts
    out = {}
    for i, node in enumerate(init.body):
        if not (isinstance(node, ast.Assign) and len(node.targets) == 1 and _self_attr(node.targets[0])
                and isinstance(node.value, ast.Constant) and node.value.value is None):
            continue
        attr = node.targets[0].attr
        for later in init.body[i + 1:]:
            if not isinstance(later, ast.If):
                continue
            param = _not_none_param(later.test)
            if param is None or param in rebound or not (param in names or param in kwonly):
                continue
            inside = sum(1 for n in walk_ast(later) if isinstance(n, ast.Assign)
                         for t in n.targets if _self_attr(t) and t.attr == attr)
            if inside and counts.get(attr) == inside + 1 and not any(
                    _self_attr(t) and t.attr == attr for n in walk_ast(later) if isinstance(n, ast.Assign)
                    for t in n.targets if n in later.orelse):
                out[attr] = (param, names.index(param) if param in names else -1, literal(given.get(param)))
            break
    return out


def _not_none_param(test: ast.expr) -> Optional[str]:
    """The parameter a test needs to be not None: ``p is not None``, ``p``, or one of the operands of ``and``."""
    if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And):
        return next((p for p in map(_not_none_param, test.values) if p is not None), None)
    if isinstance(test, ast.Name):
        return test.id
    if isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], ast.IsNot) \
            and isinstance(test.left, ast.Name) and isinstance(test.comparators[0], ast.Constant) \
            and test.comparators[0].value is None:
        return test.left.id
    return None


def builder_facts(cls: ast.ClassDef, counts: Optional[Dict[str, int]] = None,
                  nodes: Optional[Sequence[ast.AST]] = None
                  ) -> Tuple[Dict[str, Dict[str, tuple]], Dict[str, Tuple[Dict[str, tuple], ...]],
                             Dict[str, Tuple[tuple, ...]]]:
    """The constant arguments ``__init__`` builds each submodule with, from one walk of it:

    - built once: ``self.conv = BasicConv(8, 8, relu=False)``, the only assignment to ``self.conv``, gives
      ``{"conv": {"=relu": (False,), "#0": (8,), "#1": (8,)}}``, each argument's literal (``()`` when not one);
    - built in several arms from the same class and nowhere else (``if variant == 'original': self.conv2 =
      ConvBlock(..., activation=None)`` / ``else: self.conv2 = ConvBlock(..., pre_norm=True)``): each build's
      arguments, in the second dict. A path of the submodule's code is ruled out only where every build rules it
      out (:data:`.conditions.ALTS`).

    A call with ``*args`` or ``**kwargs`` says nothing. Read with :func:`.conditions.value_at`.

    The third dict gives, per submodule built several ways, the arm of ``__init__`` each build sits in (aligned
    with its builds): a tuple of ``(line of an enclosing if, 0 for its body | 1 for its else)``, outermost first,
    any other enclosing block a step of its own. Two submodules whose builds sit in the same arms are built
    together: ``variant == 'original'`` builds both one way (:meth:`.project_calls.ProjectCallsMixin.arm_builds`)."""
    builds, arms = _builds(cls, counts, nodes)
    return ({attr: b[0] for attr, b in builds.items() if len(b) == 1},
            {attr: tuple(b) for attr, b in builds.items() if len(b) > 1},
            {attr: tuple(arms[attr]) for attr, b in builds.items() if len(b) > 1 and attr in arms})


def _arm_paths(stmts: Sequence[ast.stmt], path: tuple, out: Dict[int, tuple]) -> None:
    """``out[id(statement)]``: the arms of ``if`` statements (and other blocks) each statement sits in."""
    for stmt in stmts:
        out[id(stmt)] = path
        if isinstance(stmt, ast.If):
            _arm_paths(stmt.body, path + ((stmt.lineno, 0),), out)
            _arm_paths(stmt.orelse, path + ((stmt.lineno, 1),), out)
            continue
        for i, field in enumerate(("body", "orelse", "finalbody", "handlers")):
            block = getattr(stmt, field, None)
            if isinstance(block, list) and block and isinstance(block[0], ast.stmt):
                _arm_paths(block, path + ((stmt.lineno, 2 + i),), out)
            elif isinstance(block, list):  # (`except` handlers hold their bodies)
                for handler in block:
                    _arm_paths(getattr(handler, "body", []), path + ((getattr(handler, "lineno", 0), 2 + i),), out)


def _builds(cls: ast.ClassDef, counts: Optional[Dict[str, int]], nodes: Optional[Sequence[ast.AST]]
            ) -> Tuple[Dict[str, List[Dict[str, tuple]]], Dict[str, List[tuple]]]:
    init = _init(cls)
    if init is None:
        return {}, {}
    counts = assignment_counts(cls) if counts is None else counts
    out: Dict[str, List[Dict[str, tuple]]] = {}
    arms: Dict[str, List[tuple]] = {}
    paths: Dict[int, tuple] = {}
    _arm_paths(init.body, (), paths)
    callee: Dict[str, Optional[str]] = {}
    unknown: Set[str] = set()
    built_otherwise = False  # (`self.add_module("conv2", ...)`, `setattr(self, ...)`: a submodule built otherwise too)
    for node in walk_ast(init):
        if isinstance(node, ast.Call) and (isinstance(node.func, ast.Attribute) and node.func.attr in (
                "add_module", "register_module") or isinstance(node.func, ast.Name) and node.func.id == "setattr"):
            built_otherwise = True
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and _self_attr(node.targets[0]) \
                and isinstance(node.value, ast.Call):
            attr, call = node.targets[0].attr, node.value
            if any(isinstance(a, ast.Starred) for a in call.args) or any(k.arg is None for k in call.keywords) \
                    or callee.setdefault(attr, dotted_name(call.func)) != dotted_name(call.func):
                unknown.add(attr)
                continue
            given = {f"#{i}": literal(a) for i, a in enumerate(call.args)}
            given.update((f"={k.arg}", literal(k.value)) for k in call.keywords)
            out.setdefault(attr, []).append(given)
            arms.setdefault(attr, []).append(paths.get(id(node), (("nested", node.lineno),)))
    for node in (walk_ast(cls) if nodes is None else nodes):
        # `self.head.sigmoid = True` or `setattr(self.head, "sigmoid", True)` anywhere in the class: the
        # constants `self.head` was built with no longer decide its flags
        target = node.targets[0] if isinstance(node, ast.Assign) and len(node.targets) == 1 else None
        if isinstance(target, ast.Attribute) and _self_attr(target.value):
            unknown.add(target.value.attr)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "setattr" \
                and node.args and _self_attr(node.args[0]):
            unknown.add(node.args[0].attr)
    kept = {attr: builds for attr, builds in out.items()
            if attr not in unknown and counts.get(attr) == len(builds) and callee.get(attr)}
    return kept, {} if built_otherwise else {attr: arms[attr] for attr in kept}
