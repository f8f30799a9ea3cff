"""Conditions on a function's parameters, and whether a call's constant arguments make them hold.

A condition is what a branch tests about one parameter of the function it is in, written as a tuple
``(index, truth, default, op, constant)``:

- ``index``: the parameter's position;
- ``truth``: whether the test must be true (False for the ``else`` arm, ``!=``, ``not in``, ``is not``);
- ``default``: ``(value,)`` for a literal default (``strategy='peak'``), ``()`` when there is none;
- ``op`` and ``constant``: ``""`` (the parameter's own truth: ``if flag:``) or one of ``==``, ``in``,
  ``is``, ``<``, ``<=``, ``>``, ``>=`` against a literal (``if strategy == 'rms':``,
  ``if channels > 1:``, ``if mode in ('a', 'b'):``).

A call's value for a parameter is ``(value,)`` when it passes a literal (or leaves the parameter at its
literal default) and ``()`` when unknown. A path whose condition a call's values make false is not
taken by that call: callee summaries are specialised for constant arguments (issue 20, "paths where
they decide"). Everything here is plain data (JSON in the cache): no ``ast`` node is kept.
"""
from __future__ import annotations

import ast
import operator
from typing import Dict, Iterable, Optional, Sequence, Tuple

Cond = Tuple[int, bool, tuple, str, object]
#: the index of a condition on a flag the class's ``__init__`` copied from its parameter
#: (``init:<attr>:<param>:<position>``): a call of a submodule built with constant arguments decides it
INIT = "init:"

_COMPARE = {ast.Eq: ("==", True), ast.NotEq: ("==", False), ast.In: ("in", True), ast.NotIn: ("in", False),
            ast.Is: ("is", True), ast.IsNot: ("is", False), ast.Lt: ("<", True), ast.LtE: ("<=", True),
            ast.Gt: (">", True), ast.GtE: (">=", True)}
#: ``C < p`` is ``p > C``
_FLIPPED = {"<": ">", "<=": ">=", ">": "<", ">=": "<="}
_ORDER = {"<": operator.lt, "<=": operator.le, ">": operator.gt, ">=": operator.ge}
_SCALARS = (str, int, float, bool, type(None))


def literal(node: Optional[ast.expr]) -> tuple:
    """``(value,)`` for a literal argument or default (``'rms'``, ``-1``, ``None``, ``('a', 'b')``), else ``()``."""
    if node is None:
        return ()
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub) and isinstance(node.operand, ast.Constant) \
            and type(node.operand.value) in (int, float):
        return (-node.operand.value,)
    if isinstance(node, ast.Constant) and isinstance(node.value, _SCALARS):
        return (node.value,)
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        values = [literal(e) for e in node.elts]
        if all(values):
            return (tuple(v[0] for v in values),)
    return ()


def comparison(test: ast.expr, attributes: bool = False) -> Optional[Tuple[str, bool, str, object]]:
    """``p == 'rms'`` / ``'rms' != p`` / ``p in (1, 2)`` / ``p is None`` / ``p > 1`` -> (name, truth, op,
    constant), the parameter named on either side of one comparison with a literal; else None. With
    ``attributes``, ``self.mode == 'rms'`` too (name ``"self.mode"``)."""
    if not (isinstance(test, ast.Compare) and len(test.ops) == 1 and len(test.comparators) == 1):
        return None
    op, truth = _COMPARE.get(type(test.ops[0]), (None, True))
    if op is None:
        return None
    left, right = test.left, test.comparators[0]
    named = (ast.Name, ast.Attribute) if attributes else ast.Name
    if isinstance(left, named) and literal(right):
        name, constant = _dotted(left), literal(right)[0]
    elif isinstance(right, named) and literal(left) and op not in ("in", "is"):
        name, constant, op = _dotted(right), literal(left)[0], _FLIPPED.get(op, op)
    else:
        return None
    if name is None or op == "in" and not isinstance(constant, (tuple, str)):
        return None
    return name, truth, op, constant


def _dotted(node: ast.expr) -> Optional[str]:
    """``a`` or ``a.b`` (one attribute of a name), else None."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
        return f"{node.value.id}.{node.attr}"
    return None


def negate(cond: Cond) -> Cond:
    index, truth, default, op, constant = cond
    return index, not truth, default, op, constant


def holds(cond: Cond, value: tuple) -> Optional[bool]:
    """Whether ``cond`` is true when the parameter is ``value`` (``(v,)``); None when unknown."""
    if not value:
        return None
    _, truth, _, op, constant = cond
    v = value[0]
    try:
        if op == "":
            result = bool(v)
        elif op == "==":
            result = v == constant
        elif op == "in":
            result = v in constant
        elif op == "is":
            result = v is constant or (v is None and constant is None)
        else:
            if isinstance(v, (bool, str)) or isinstance(constant, (bool, str)) or v is None:
                return None
            result = _ORDER[op](v, constant)
    except TypeError:
        return None
    return result == truth


def needs_true(conds: Iterable[Cond]) -> Tuple[Tuple[int, tuple], ...]:
    """(index, literal default as ``(value,)`` or ``()``) of each parameter that ``conds`` need true (``if
    flag:``, ``if flag is True:``): a statement walked under them runs only when each is, so with grad off (or
    in eval mode) when one is true only then (:func:`.grad_flags.flag_grad_off`). A parameter they need false
    (``if train_mode: return self.forward_train(x)`` before ``return self.forward_test(x)``) is ``~index``."""
    return tuple(sorted({(c[0] if c[1] else ~c[0], c[2]) for c in conds if isinstance(c[0], int) and c[0] >= 0
                         and (c[3] == "" or c[1] and c[3] in ("==", "is") and c[4] is True)}, key=repr))


def value_at(cond: Cond, values: Dict[int, tuple]) -> tuple:
    """What a call gives the condition's parameter: its literal argument, else the literal default of a
    parameter it leaves out; ``()`` for a non-literal argument."""
    index, _, default, _, _ = cond
    if isinstance(index, str):  # a flag set in `__init__`: what the submodule was built with, when known
        _, _, param, position = index.split(":")
        if "built" not in values:
            return ()
        return values.get(f"={param}", values.get(f"#{position}", default) if position != "-1" else default)
    return values[index] if index in values else default


#: the key of a call's values that holds the argument sets of a submodule built in several ways
#: (:func:`.init_args.builder_facts`): each is what :data:`INIT` conditions read under ``"built"``
ALTS = "alts"


def under_build(values: Dict, build) -> Dict:
    """A call's ``values`` (:func:`contradicted`) as seen by one way a submodule was built (one of ``values[ALTS]``):
    that build's constant arguments decide its ``__init__`` flags."""
    return {**{k: v for k, v in values.items() if k != ALTS}, **dict(build), "built": ()}


def contradicted(conds: Iterable[Cond], values: Dict[int, tuple]) -> bool:
    """Some condition of a path is false for a call whose arguments are ``values`` (parameter index ->
    ``(literal,)`` or ``()`` for a passed non-literal; a parameter left out takes its default). For a submodule
    built in several ways (``values[ALTS]``), the path is ruled out only where it is for each way."""
    alts = values.get(ALTS)
    if alts:
        conds = tuple(conds)
        return all(contradicted(conds, under_build(values, alt)) for alt in alts)
    return any(holds(c, value_at(c, values)) is False for c in conds)


def describe(cond: Cond, params: Sequence[str]) -> str:
    """``copy=False``, ``strategy='rms'``, ``channels>1``: the condition as the message shows it."""
    index, truth, _, op, constant = cond
    if isinstance(index, str):
        name = f"self.{index.split(':')[1]}"
    else:
        name = params[index] if index < len(params) else f"#{index}"
    if op == "":
        return f"{name}={truth}"
    words = {"==": ("==", "!="), "in": (" in ", " not in "), "is": (" is ", " is not ")}
    if op in words:
        return f"{name}{words[op][0 if truth else 1]}{constant!r}"
    return f"{name}{op}{constant!r}" if truth else f"not {name}{op}{constant!r}"


def translate(conds: Iterable[Cond], values: Dict[int, tuple], passed_params: Dict[int, int],
              own_defaults: Dict[int, tuple]) -> Tuple[Cond, ...]:
    """A callee's path conditions seen from a caller: each that the call's constants decide is dropped
    (the caller only keeps paths they do not contradict), each on a parameter the caller passes its own
    parameter ``j`` for becomes a condition on ``j`` (with ``j``'s default), any other is unknown here and
    dropped (the path may be taken)."""
    out = []
    for c in conds:
        index, truth, _, op, constant = c
        if holds(c, value_at(c, values)) is not None:
            continue
        j = passed_params.get(index) if isinstance(index, int) else None
        if j is not None:
            out.append((j, truth, own_defaults.get(j, ()), op, constant))
    return tuple(out)


def sort_key(cond: Cond) -> str:
    return repr(cond)


def encode(cond: Cond) -> list:
    index, truth, default, op, constant = cond
    return [index, truth, [_json(v) for v in default], op, _json(constant)]


def decode(x: object) -> Cond:
    """A condition from the cache (ValueError on anything malformed: the entry is rebuilt)."""
    if not isinstance(x, list) or len(x) != 5:
        raise ValueError("condition")
    index, truth, default, op, constant = x
    if not (type(index) is int or (type(index) is str and index.startswith(INIT) and index.count(":") == 3)) \
            or type(truth) is not bool or not isinstance(default, list) or len(default) > 1 \
            or op not in ("", "==", "in", "is", "<", "<=", ">", ">="):
        raise ValueError("condition")
    return index, truth, tuple(_unjson(v) for v in default), op, _unjson(constant)


def encode_value(v: object) -> object:
    """A call's literal argument (``CallSite.constants``) for the cache."""
    return _json(v)


def decode_value(v: object) -> object:
    return _unjson(v)


def _json(v):
    return [_json(e) for e in v] if isinstance(v, tuple) else v


def _unjson(v):
    if isinstance(v, list):
        return tuple(_unjson(e) for e in v)
    if not isinstance(v, _SCALARS):
        raise ValueError("literal")
    return v


def write_path_condition(w, values: Dict[int, tuple], params, callee: str, starred: bool) -> Optional[str]:
    """The helper's write's own condition, and the conditions on the helper's parameters that lead to it which
    this call's arguments leave open (``save_peak_memory_factor is not None`` in ``chunked_evaluate()``): what
    the message says the write needs."""
    open_ = [] if starred else [c for c in w.when if holds(c, value_at(c, values)) is None]
    path = " and ".join(f"`{describe(c, params)}`" for c in open_)
    if path:
        path = f"{path} in `{callee}()`"
    return " and ".join(p for p in (w.condition, path) if p) or None


def call_values(site) -> Dict[int, tuple]:
    """What a call gives each parameter it binds (:mod:`.conditions`): ``(literal,)`` or ``()``."""
    constants = dict(site.constants)
    values = {i: ((constants[i],) if i in constants else ()) for i in site.bound or ()}
    if site.built is not None and len(site.built) == 1:  # a submodule built with constant arguments: they decide
        values.update(site.built[0], built=())  # its `__init__` flags
    elif site.built is not None:
        values[ALTS] = site.built
    return values


def callers_keep(calls_to, qual: str, cond: tuple, depth: int = 0) -> bool:
    """Every in-project call of ``qual`` makes condition ``cond`` (this module's form) hold, with a literal argument
    or the literal default it leaves; with no in-project call, the default decides (guess: callers outside keep
    it). A call with ``*args``/``**kwargs`` or a non-literal argument for it keeps the finding."""
    index, default = cond[0], cond[2]
    sites = calls_to.get(qual, [])
    if not sites:
        return holds(cond, default) is True
    for site in sites:
        constants = dict(site.constants)
        passed = {i: (j, d) for i, j, d in site.passed}
        if index in constants:
            if holds(cond, (constants[index],)) is not True:
                return False
        elif index in passed and site.bound is not None and depth < 8:
            # `no_grad=no_grad`: the caller's own callers decide, with the caller's default
            j, own_default = passed[index]
            if not callers_keep(calls_to, site.caller, (j, cond[1], own_default, cond[3], cond[4]), depth + 1):
                return False
        elif site.bound is None or index in site.bound or holds(cond, default) is not True:
            return False
    return True
