"""Which binding of a name reaches a write, and what storage a bound value may share (for :mod:`.safety`).

A rewrite rebinds the written name; whether the caller's tensor, or another local's, can be what the name holds at
the write is a question about the bindings that reach it: the views and aliases a value is taken through
(:func:`shared_base`), the names a binding may be itself (:func:`bound_sources`), and a binding that every path to
the write runs (:func:`rebound_before`).
"""
from __future__ import annotations

import ast
from typing import Dict, List, Optional, Sequence, Tuple

from ...findings import Origin, RootKind, StepKind
from ...torch_facts import ops
from ..astutil import dotted_name as dotted, inplace_flag_arg, walk_ast
from .facts import _call_role, root_base_name


def rebound_before(facts, name: str, write: ast.AST, params: Sequence[str],
                   origins: Sequence[Origin]) -> Optional[Tuple[int, int]]:
    """Where (line, column just past it) the statement stands that makes ``name`` hold, at ``write``, a tensor the
    function made itself, not what the caller passed: ``x = torch.sigmoid(self.norm(x)); x.mul_(2)`` with ``x`` a
    parameter. None unless all of these hold:

    - a plain assignment to ``name`` (``x = ...``, ``x, y = ...``, ``x: T = ...``) stands earlier in a statement
      list that holds the write or one of its enclosing statements, so every path to the write runs it; the last
      such one counts;
    - nothing else binds ``name`` between it and the write, nor in a loop around the write that does not hold it
      too (the loop's next pass would reach the write with that binding), nor from a nested function;
    - it binds ``name`` alone (``x = self.cache = ...`` keeps the new tensor elsewhere too), to a call that makes a new
      tensor (:func:`_new_tensor`: not ``F.relu(x, inplace=True)``, nor a project helper that may return its
      argument), whose value shares no storage with ``name`` or a parameter (:func:`shared_base`);
    - every origin of the written tensor is the result of a call on those lines that makes a new tensor (an op
      whose output autograd saves, a factory), reached through no alias step: ``x = self.block(x)`` may hand the
      caller's tensor back (``nn.Identity``).

    Loads of ``name`` before that statement read an older object, never the written one."""
    if not origins or any(o.root not in (RootKind.SAVED_OUTPUT, RootKind.FRESH) or root_base_name(o) is not None
                          or any(step.kind is StepKind.ALIAS for step in o.steps) for o in origins):
        return None
    path = facts.path_to(write)
    binding = None
    for parent, child in zip(path, path[1:]):
        for field in ("body", "orelse", "finalbody"):
            block = getattr(parent, field, None)
            if not isinstance(block, list) or not any(stmt is child for stmt in block):
                continue
            for stmt in block:
                if stmt is child:
                    break
                if _binds(stmt, name):
                    binding = stmt
    if binding is None or any(not binding.lineno <= o.root_line <= (binding.end_lineno or binding.lineno)
                              for o in origins):
        return None
    targets = binding.targets if isinstance(binding, ast.Assign) else [binding.target]
    if len(targets) != 1 or not isinstance(targets[0], ast.Name) or not _new_tensor(binding.value, facts):
        return None
    if any(base in params or base == name for base in value_bases(binding.value)):
        return None
    after = (binding.end_lineno or binding.lineno, binding.end_col_offset or 0)
    before = (write.lineno, write.col_offset)
    loops = [p for p in path if isinstance(p, (ast.For, ast.AsyncFor, ast.While))
             and not any(n is binding for n in walk_ast(p))]
    spans = [(loop.lineno, loop.end_lineno or loop.lineno) for loop in loops]
    for node in walk_ast(facts.func):
        if isinstance(node, ast.Nonlocal) and name in node.names:
            return None
        if isinstance(node, ast.Name) and node.id == name and isinstance(node.ctx, (ast.Store, ast.Del)):
            pos = (node.lineno, node.col_offset)
            if after <= pos < before or any(lo <= node.lineno <= hi for lo, hi in spans):
                return None
    return after


def stored_elsewhere(facts, name: str, callers_checked: bool) -> Optional[ast.expr]:
    """Where a binding of ``name`` also puts the tensor it binds, which a rebinding of ``name`` leaves behind, or None:
    another target of the statement that is not a plain name (``y = self.cache = torch.exp(h)``, ``y, = self.c =
    (...)``), a name bound inside the value (``y = keep.append(e := torch.exp(z)) or e``), or an attribute or item of
    a name from outside the function that the value may be (:func:`_outside_base`). Plain, annotated and ``:=``
    bindings alike."""
    for stmt, value in values_bound_to(facts, name):
        if isinstance(stmt, ast.Assign):
            holding = [t for t in stmt.targets if any(isinstance(n, ast.Name) and n.id == name for n in walk_ast(t))]
            other = next((t for t in stmt.targets if not any(t is h for h in holding) and not isinstance(t, ast.Name)),
                         None)
            if other is not None:
                return other
        elif isinstance(stmt, ast.NamedExpr):
            parent = facts.parent(stmt)
            if not isinstance(parent, (ast.Expr, ast.If, ast.While, ast.Compare, ast.IfExp, ast.BoolOp)) \
                    and not (isinstance(parent, ast.Assign) and all(isinstance(t, ast.Name) for t in parent.targets)):
                # `keep.append(y := torch.exp(h))`, `self.cache = (y := ...)`, `{"a": (y := ...)}`: kept where bound
                return stmt
        walrus = next((n.target for n in walk_ast(value) if isinstance(n, ast.NamedExpr)), None)
        if walrus is not None:
            return walrus
        outside = _outside_base(value, facts, callers_checked)
        if outside is not None:
            return outside
    return None


def holding_locals(facts, name: str) -> Dict[str, str]:
    """The locals whose item or attribute a binding of ``name`` is (``attn = out["attn"]``, ``h = feats[-1]``,
    ``c = state.cache``), each with the expression: they hold the tensor too, so a read of them after the write, or
    an escape, sees what a rebinding of ``name`` leaves behind."""
    out: Dict[str, str] = {}
    for stmt, value in values_bound_to(facts, name):
        if isinstance(stmt, ast.NamedExpr):
            continue
        for part in _arms(value):
            base = shared_base(part)
            if isinstance(base, ast.Name) and base is not part:
                base = part  # `out["attn"]`: shared_base went down to the holder itself
            if not isinstance(base, (ast.Attribute, ast.Subscript)):
                continue
            root = _chain_root(base)
            if isinstance(root, ast.Name) and root.id != name and facts.is_local(root.id):
                out.setdefault(root.id, ast.unparse(base))
    return out


def from_outside(facts, name: str, callers_checked: bool) -> Optional[ast.expr]:
    """A binding of the local ``name`` that makes it (or a view of it) an object from outside the function, or None:
    an attribute or item of a parameter or a global (:func:`_outside_base`: ``cache = caches[i]``), a parameter
    itself, or what a method of one returns (``layer = cache.setdefault("layer0", {})``, ``d = self.state.get(k)``),
    which that object may hold."""
    for stmt, value in values_bound_to(facts, name):
        if isinstance(stmt, ast.NamedExpr):
            continue
        outside = _outside_base(value, facts, callers_checked)
        if outside is not None:
            return outside
        for part in _arms(value, displays=False):
            # (a tuple or list display is a new container of this function's: its items are not the holder)
            base = shared_base(part)
            if isinstance(base, ast.Call) and isinstance(base.func, ast.Attribute):
                base = base.func.value  # a method's result: what its receiver may hold
            root = _chain_root(base)
            if isinstance(root, ast.Name) and not facts.is_local(root.id) and root.id not in _TORCH_HEADS \
                    and (not facts.is_param(root.id) or not callers_checked):
                return part
    return None


def values_bound_to(facts, name: str):
    """The values the function binds ``name`` to (``=``, with the name anywhere in a target; ``x: T = v``;
    ``:=``), each with its statement."""
    for stmt in facts.assigns:
        if isinstance(stmt, ast.Assign):
            targets = stmt.targets
        elif isinstance(stmt, (ast.AnnAssign, ast.NamedExpr)) and stmt.value is not None:
            targets = [stmt.target]
        else:
            continue
        if any(isinstance(n, ast.Name) and n.id == name for t in targets for n in walk_ast(t)):
            yield stmt, stmt.value


def _chain_root(node: ast.expr) -> ast.expr:
    """``self`` of ``self.cache["k"].v``: below every attribute and item."""
    while isinstance(node, (ast.Attribute, ast.Subscript)):
        node = node.value
    return node


def _arms(value: ast.expr, displays: bool = True) -> List[ast.expr]:
    """Both arms of ``a if c else b``, the operands of ``or``/``and``, and (``displays``) the elements of a tuple or
    list display; a display itself otherwise."""
    out, todo = [], [value]
    while todo:
        part = todo.pop()
        if isinstance(part, ast.IfExp):
            todo += [part.body, part.orelse]
        elif isinstance(part, ast.BoolOp):
            todo += part.values
        elif isinstance(part, (ast.Tuple, ast.List)) and not displays:
            continue
        elif isinstance(part, (ast.Tuple, ast.List)):
            todo += [e.value if isinstance(e, ast.Starred) else e for e in part.elts]
        else:
            out.append(part)
    return out


def _outside_base(value: ast.expr, facts, callers_checked: bool = False, depth: int = 0) -> Optional[ast.expr]:
    """What ``value`` may be, or share storage with, when that is an attribute or an item of a name from outside the
    function (a parameter, a global, a closure's name: ``self.h`` of ``F.relu(self.h, inplace=True)``, ``attn =
    self.attn``, ``getattr(self, name)``, ``batch["x"].view(-1)``, ``CFG.buf``), or None: a rebound name leaves it
    behind. Both arms of ``a if c else b``, the operands of ``or``/``and`` and the elements of a tuple or list count,
    and a local that is itself bound to such a thing (``m = self.sub; F.relu(m.h, inplace=True)``, ``me = self``)."""
    for part in _arms(value):
        base = shared_base(part)
        if isinstance(base, ast.Call) and isinstance(base.func, ast.Name) and base.func.id == "getattr" \
                and len(base.args) >= 2:
            base = ast.Attribute(value=base.args[0], attr="?", ctx=ast.Load(), lineno=base.lineno,
                                 col_offset=base.col_offset)  # `getattr(self, name)`: an attribute of `self`
        if isinstance(base, ast.Name) and base is not part and not facts.is_local(base.id) \
                and not facts.is_param(base.id) and base.id not in ("torch", "F", "th", "np", "numpy"):
            return base  # `F.relu(_ACT["h"], inplace=True)`, `G.view(-1)`: a global's tensor or an item of one
        root = _chain_root(base)
        if not isinstance(root, ast.Name):
            continue
        if facts.is_local(root.id):
            if depth < 3 and (root is not base or base is not part):
                # (a local bound to an outside object, whose item, attribute or view this is: `m = self.sub`)
                for _, inner in values_bound_to(facts, root.id):
                    if isinstance(inner, ast.Name) and inner.id == root.id:
                        continue
                    if _outside_base(inner, facts, callers_checked, depth + 1) is not None:
                        return base
                    if isinstance(inner, ast.Name) and not facts.is_local(inner.id) and (
                            facts.is_param(inner.id) and not callers_checked or inner.id in facts.declared):
                        return base  # `me = self; F.relu(me.h, inplace=True)`
            continue
        if not isinstance(base, (ast.Attribute, ast.Subscript)):
            continue
        if callers_checked and facts.is_param(root.id):
            continue  # (a parameter whose every caller was checked is as private as a local)
        return base
    return None


def _new_tensor(value: ast.expr, facts) -> bool:
    """``value`` is a call that makes a new tensor, never its input: a torch op of :data:`.facts._FRESH_RESULTS`
    (``torch.sigmoid(h)``, ``F.softmax(h, -1)``), a tensor method whose output autograd saves (``x.sigmoid()``,
    :data:`ops.SAVES_OUTPUT`), not an in-place form (``torch.sigmoid_``,
    ``F.relu(h, inplace=True)``, ``inplace=self.inplace``), nor a project's function or module, which may return its
    argument (``act(x)``, ``self.sigmoid(x)``, ``nn.Identity``) (:func:`.facts._call_role`)."""
    if not isinstance(value, ast.Call) or shared_base(value) is not value \
            or any(k.arg in (None, "out") for k in value.keywords) or any(isinstance(a, ast.Starred) for a in value.args):
        return False
    if isinstance(value.func, ast.Attribute) and not _torch_namespace(value.func) \
            and value.func.attr in ops.SAVES_OUTPUT:
        # `x.sigmoid()`, `self.norm(x).softmax(-1)`: a tensor method whose output autograd saves; not a module's or
        # an object's method that takes the tensor as an argument (`self.relu(x)` may be `nn.ReLU(inplace=True)`,
        # `nn.Identity`): the receiver is no attribute of `self`, and no argument names anything
        root = _chain_root(value.func.value)
        return not (isinstance(root, ast.Name) and root.id in ("self", "cls")) and not any(
            isinstance(n, ast.Name) for a in list(value.args) + [k.value for k in value.keywords] for n in walk_ast(a))
    current = value.args[0] if value.args else value.func.value if isinstance(value.func, ast.Attribute) else None
    return current is not None and _call_role(value, current, facts) == "fresh"


def _binds(stmt: ast.stmt, name: str) -> bool:
    if isinstance(stmt, ast.Assign):
        targets = [n for t in stmt.targets for n in ([t] + (list(t.elts) if isinstance(t, (ast.Tuple, ast.List))
                                                            else []))]
    elif isinstance(stmt, ast.AnnAssign) and stmt.value is not None:
        targets = [stmt.target]
    else:
        return False
    return any(isinstance(t, ast.Name) and t.id == name for t in targets)


def value_bases(value: ast.expr):
    """The plain names ``value`` may be itself or share storage with: both arms of ``a if c else b``, the operands
    of ``or``/``and``, through :func:`shared_base`."""
    for node in _arms(value, displays=False):
        base = shared_base(node)
        if isinstance(base, ast.Name):
            yield base.id


def bound_sources(facts, name: str):
    """(name, line) of each plain name a binding of ``name`` in the function may hold itself (through both arms of
    ``a if c else b``, the operands of ``or``/``and``, views and methods that may return their receiver)."""
    for stmt, value in values_bound_to(facts, name):
        if isinstance(stmt, ast.Assign) and not any(isinstance(t, ast.Name) and t.id == name for t in stmt.targets):
            continue  # (bound inside an unpacking: the value is not what the name holds)
        for base in value_bases(value):
            yield base, stmt.lineno


def shared_base(node: ast.expr) -> ast.expr:
    """The expression whose storage ``node`` may share: through basic views (``x[0]``, ``x.T``), view and
    may-alias methods (``x.view(-1)``, ``x.float()``) and in-place methods (``x.mul_(2)`` returns ``x``), and their
    function forms, whose input is the first argument (``torch.flatten(x)``, ``torch.sigmoid_(x)``,
    ``F.relu(x, inplace=True)``, ``F.relu(x, **kw)``: :func:`torch_function_input`)."""
    while True:
        if isinstance(node, ast.Subscript) and isinstance(node.value, (ast.List, ast.Tuple)) \
                and isinstance(node.slice, ast.Constant) and isinstance(node.slice.value, int) \
                and -len(node.value.elts) <= node.slice.value < len(node.value.elts) \
                and not any(isinstance(e, ast.Starred) for e in node.value.elts):
            node = node.value.elts[node.slice.value]  # `[self.attn][0]` is `self.attn`
        elif isinstance(node, ast.Subscript):
            node = node.value
        elif isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.UAdd):
            node = node.operand  # `+x` is `x` itself (`Tensor.__pos__`)
        elif isinstance(node, ast.Attribute) and node.attr in ops.VIEW_ATTRIBUTES:
            node = node.value
        elif isinstance(node, ast.Call) and _torch_namespace(node.func):
            given = torch_function_input(node)
            if given is None:
                return node
            node = given
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and (
                node.func.attr in ops.VIEW_METHODS or node.func.attr in ops.MAY_ALIAS_METHODS
                or node.func.attr in ops.EXPAND_METHODS or node.func.attr in ops.TENSOR_INPLACE_METHODS
                or node.func.attr in ops.MULTI_VIEW_METHODS or node.func.attr in ops.SLICED_VIEW_METHODS):
            node = node.func.value  # (`self.states.unbind(0)[0]`, `x.chunk(2)`: views of the receiver)
        else:
            return node


#: how torch's modules are written where a function of theirs is called (``torch.flatten``, ``F.relu``)
_TORCH_HEADS = ("torch", "F", "th", "nn.functional")


def _torch_namespace(func: ast.expr) -> bool:
    """``torch.flatten``, ``F.relu``, ``torch.nn.functional.relu``, ``torch.nested.narrow``: a function of a torch
    module, not a method of a tensor."""
    if not isinstance(func, ast.Attribute):
        return False
    head = dotted(func.value) or ""
    return head in _TORCH_HEADS or head.startswith("torch.")


def torch_function_input(call: ast.Call) -> Optional[ast.expr]:
    """The input a torch function's result may be, or share storage with (its first argument, or ``input=``):
    a view or alias function (``torch.reshape(x, s)``), an in-place one (``torch.relu_(x)``, ``F.relu_(x)``), or
    one whose ``inplace`` flag is true or unknown, or whose arguments are unpacked (``F.relu(x, **kw)``,
    ``F.relu(*args)``) (:func:`.facts._call_role`); None for a new tensor (``torch.sigmoid(x)``)."""
    out = next((k.value for k in call.keywords if k.arg == "out"), None)
    if out is not None:
        return out  # `torch.exp(w, out=buf)` returns `buf`
    given = call.args[0] if call.args else next((k.value for k in call.keywords if k.arg == "input"), None)
    if given is None or isinstance(given, ast.Starred):
        return given.value if isinstance(given, ast.Starred) else None
    name = call.func.attr if isinstance(call.func, ast.Attribute) else ""
    flag = inplace_flag_arg(call, name)
    if name in ops.VIEW_METHODS or name in ops.MAY_ALIAS_METHODS or name in ops.EXPAND_METHODS \
            or name in ops.MULTI_VIEW_METHODS or name in ops.SLICED_VIEW_METHODS or name.endswith("_") \
            or flag is not None and not (isinstance(flag, ast.Constant) and flag.value is False) \
            or any(k.arg is None for k in call.keywords) or any(isinstance(a, ast.Starred) for a in call.args):
        return given
    return None  # (`torch.ones(self.n)`, `torch.sigmoid(x)`: a new tensor)
