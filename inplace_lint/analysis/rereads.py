"""Whether code reads again a tensor that an in-place layer wrote (IPV007).

``out = self.block(x)`` looks like a pure call. When ``self.block`` is ``nn.ReLU(inplace=True)``, or an
``nn.Sequential`` whose first layer is one, the call rectifies ``x`` itself (``nn.Sequential.forward`` runs its
first layer on the input it was given: https://pytorch.org/docs/stable/generated/torch.nn.Sequential.html), so a
residual branch that reads ``x`` afterwards (``shortcut = self.skip(x)``, ``out + identity`` with ``identity = x``)
sees the layer's output, not its input. No error is raised; the values differ from the model the code describes.
timm's Xception port builds its block's first activation with ``inplace=False`` for this reason
(``rep[0] = nn.ReLU(inplace=False)``, pytorch-image-models ``timm/models/xception.py``).

:func:`read_again` finds the first load that may read the written tensor on some path after the write: in the same
statement where the load's reference outlives the call (``x + self.block(x)``), in the statements that follow until
the name is bound again on every path, in a loop around the write on its next pass, and through names bound to
the same tensor before the write (``identity = x``), and through containers that hold it (``feats.append(x)``:
:mod:`.holders`). Reads of metadata only (``x.shape``, ``x.size(0)``,
``len(x)``, ``x is None``) do not count: a write in place changes no shape.
"""
from __future__ import annotations

import ast
from typing import Callable, List, Optional, Tuple

from ..torch_facts import ops
from ..torch_facts.ops import NON_NEGATIVE_OPS, POSITIVE_IDENTITY
from .astutil import dotted_name, last_name
from .consumers import SIZE_METHODS
from .fixplan.bindings import shared_base
from .fixplan.facts import LOOPS, NON_ALIAS_ATTRS, FunctionFacts
from .holders import CONTAINER_MUTATORS, assign_binds as _assign_binds, binds as _binds, \
    containers_holding, rebound_between, statement_of, unpacked_apart

#: tensor methods that read only metadata
_METADATA_METHODS = SIZE_METHODS | frozenset({"storage_offset", "data_ptr", "is_floating_point", "is_complex", "type"})
#: builtins that read only what the object is, not its elements
_METADATA_CALLS = frozenset({"len", "isinstance", "id", "type", "hasattr", "callable"})
#: torch functions that read only the shape, dtype and device of their first argument
_METADATA_FUNCTIONS = frozenset({"zeros_like", "ones_like", "empty_like", "full_like", "rand_like", "randn_like",
                                 "randint_like", "is_tensor", "is_floating_point", "is_complex", "numel"})
#: tensor methods whose result takes only the receiver's dtype and device (``x.new_ones(x.shape)``)
_NEW_METHODS = ops.FACTORY_METHODS
#: containers that keep the reference they are given (``[x, self.block(x)]``)
_KEEPS_REFERENCE = (ast.List, ast.Tuple, ast.Set, ast.Starred, ast.keyword)
_EXCLUSIVE = (ast.IfExp, ast.BoolOp, ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp, ast.Lambda)

_Result = Optional[Tuple[str, Optional[ast.Name]]]  # ("read", load) or ("end", None); None: falls through


def value_load(facts: FunctionFacts, load: ast.Name) -> bool:
    """``load`` reads the tensor's elements (or keeps a reference that may): not ``x.shape``, ``x.size(0)``,
    ``len(x)``, ``isinstance(x, T)``, ``x is None``."""
    parent = facts.parent(load)
    if isinstance(parent, ast.Attribute) and parent.value is load:
        if parent.attr in NON_ALIAS_ATTRS:
            return False
        call = facts.parent(parent)
        if parent.attr in _METADATA_METHODS | _NEW_METHODS | CONTAINER_MUTATORS and isinstance(call, ast.Call) \
                and call.func is parent:
            return False  # (`feats.append(y)`: a list that holds the tensor stores another element, reading none)
    if isinstance(parent, ast.Subscript) and parent.value is load and isinstance(parent.ctx, ast.Store) \
            and not isinstance(facts.parent(parent), ast.AugAssign):
        return False  # `feats[k] = y` (not `x[k] += y`, which reads `x[k]`)
    if isinstance(parent, ast.Call) and isinstance(parent.func, ast.Name) and parent.func.id in _METADATA_CALLS:
        return False
    if isinstance(parent, ast.Call) and parent.args and parent.args[0] is load \
            and last_name(parent.func) in _METADATA_FUNCTIONS:
        return False  # `torch.zeros_like(x)`, `torch.is_tensor(x)`
    if _shadowed(facts, load):
        return False  # `[f(x) for x in xs]`, `lambda x: ...`: another `x`
    if isinstance(parent, ast.Compare) and all(isinstance(op, (ast.Is, ast.IsNot)) for op in parent.ops):
        return False
    return True


_SCOPES = (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp, ast.Lambda)


def _shadowed(facts: FunctionFacts, node: ast.AST) -> bool:
    """The name ``node`` (a load, or a call's argument) is bound by a comprehension or lambda around it, not the
    function's own name."""
    name = node.id if isinstance(node, ast.Name) else None
    parent = facts.parent(node)
    while name is not None and parent is not None and not isinstance(parent, ast.stmt):
        if isinstance(parent, ast.Lambda) and any(a.arg == name for a in parent.args.posonlyargs + parent.args.args
                                                  + parent.args.kwonlyargs):
            return True
        if isinstance(parent, _SCOPES[:4]) and any(isinstance(n, ast.Name) and n.id == name
                                                   for g in parent.generators for n in ast.walk(g.target)):
            return True
        parent = facts.parent(parent)
    return False


def _loads(facts: FunctionFacts, node: ast.AST, name: str) -> List[ast.Name]:
    return sorted((n for n in ast.walk(node) if isinstance(n, ast.Name) and n.id == name
                   and isinstance(n.ctx, ast.Load) and value_load(facts, n)), key=lambda n: (n.lineno, n.col_offset))


def _scan_block(facts: FunctionFacts, stmts, name: str) -> _Result:
    for stmt in stmts:
        result = _scan(facts, stmt, name)
        if result is not None:
            return result
    return None


def _first(loads: List[ast.Name]) -> _Result:
    return ("read", loads[0]) if loads else None


def _scan(facts: FunctionFacts, stmt: ast.stmt, name: str) -> _Result:
    """The first read of ``name`` in ``stmt``, "end" where ``stmt`` binds it again (or leaves) on every path."""
    if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return ("end", None) if stmt.name == name else None
    if isinstance(stmt, ast.If):
        head = _first(_loads(facts, stmt.test, name))
        if head:
            return head
        body, orelse = _scan_block(facts, stmt.body, name), _scan_block(facts, stmt.orelse, name)
        for result in (body, orelse):
            if result is not None and result[0] == "read":
                return result
        return ("end", None) if body is not None and orelse is not None else None
    if isinstance(stmt, (ast.For, ast.AsyncFor)):
        head = _first(_loads(facts, stmt.iter, name))
        if head:
            return head
        rebinds = any(isinstance(n, ast.Name) and n.id == name for n in ast.walk(stmt.target))
        for block in ([] if rebinds else stmt.body, stmt.orelse):  # (a loop may run no pass: never "end")
            result = _scan_block(facts, block, name)
            if result is not None and result[0] == "read":
                return result
        return None
    if isinstance(stmt, ast.While):
        head = _first(_loads(facts, stmt.test, name))
        if head:
            return head
        for block in (stmt.body, stmt.orelse):
            result = _scan_block(facts, block, name)
            if result is not None and result[0] == "read":
                return result
        return None
    if isinstance(stmt, (ast.With, ast.AsyncWith)):
        for item in stmt.items:
            head = _first(_loads(facts, item.context_expr, name))
            if head:
                return head
            if item.optional_vars is not None and any(isinstance(n, ast.Name) and n.id == name
                                                      for n in ast.walk(item.optional_vars)):
                return ("end", None)
        return _scan_block(facts, stmt.body, name)
    if isinstance(stmt, ast.Try) or type(stmt).__name__ == "TryStar":
        results = [_scan_block(facts, stmt.body, name)]
        results += [_scan_block(facts, h.body, name) for h in stmt.handlers]
        results += [_scan_block(facts, stmt.orelse, name), _scan_block(facts, stmt.finalbody, name)]
        for result in results:
            if result is not None and result[0] == "read":
                return result
        return results[-1]
    if isinstance(stmt, (ast.Return, ast.Raise, ast.Break, ast.Continue)):
        return _first(_loads(facts, stmt, name)) or ("end", None)
    if not isinstance(stmt, (ast.Expr, ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Delete, ast.Assert,
                             ast.Import, ast.ImportFrom, ast.Pass, ast.Global, ast.Nonlocal)):
        return _first(_loads(facts, stmt, name))  # (`match`: any read)
    if isinstance(stmt, ast.AugAssign) and isinstance(stmt.target, ast.Name) and stmt.target.id == name:
        return ("read", stmt.target)  # `x += y` reads `x`
    loads = _loads(facts, stmt, name)
    if loads:
        return ("read", loads[0])
    return ("end", None) if _binds(stmt, name) else None


def _same_statement(facts: FunctionFacts, stmt: ast.stmt, call: ast.Call, name: str) -> Optional[ast.Name]:
    """A load of ``name`` in the write's own statement whose reference is used after the call ran: after it in
    evaluation order, or before it but kept as it is (an operand of the same operation, an item of a list)."""
    inside = {id(n) for n in ast.walk(call)}
    call_path = {id(n) for n in facts.path_to(call)}
    for load in _loads(facts, stmt, name):
        if id(load) in inside:
            continue
        chain = facts.path_to(load)
        common = next((n for n in reversed(chain[:-1]) if id(n) in call_path), None)
        if common is None or isinstance(common, _EXCLUSIVE):
            continue  # (`self.block(x) if c else x`: one or the other)
        if (load.lineno, load.col_offset) > (call.lineno, call.col_offset):
            return load
        below = chain[chain.index(common) + 1:-1]
        if all(isinstance(n, _KEEPS_REFERENCE) for n in below):
            return load  # `x + self.block(x)`, `torch.cat([x, self.block(x)])`: the op runs after the write
        if len(below) == 1 and isinstance(below[0], ast.Attribute) and isinstance(common, ast.Call) \
                and common.func is below[0]:
            return load  # `x.add(self.block(x))`: the method reads its receiver after its argument ran
    if isinstance(stmt, ast.AugAssign) and isinstance(stmt.target, ast.Name) and stmt.target.id == name:
        return stmt.target
    return None


def following(facts: FunctionFacts, stmt: ast.stmt, name: str) -> Optional[ast.Name]:
    """The first read of ``name`` after ``stmt`` on some path (in a loop around it: on its next pass too, unless the
    loop binds the name again on each pass). Nothing runs after a ``return``."""
    if isinstance(stmt, (ast.Return, ast.Raise)):
        return None
    node: ast.AST = stmt
    while True:
        parent = facts.parent(node)
        if parent is None or isinstance(parent, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.Module)):
            block = getattr(parent, "body", []) if parent is not None else []
            index = next((i for i, s in enumerate(block) if s is node), None)
            result = _scan_block(facts, block[index + 1:], name) if index is not None else None
            return result[1] if result is not None and result[0] == "read" else None
        if isinstance(node, ast.excepthandler) or type(node).__name__ == "match_case":
            if isinstance(node, ast.excepthandler):  # (a handler's `finally:` runs next)
                result = _scan_block(facts, getattr(parent, "finalbody", []), name)
                if result is not None:
                    return result[1] if result[0] == "read" else None
            node = parent
            continue
        for field in ("body", "orelse", "finalbody"):
            block = getattr(parent, field, None)
            if isinstance(block, list) and any(s is node for s in block):
                break
        else:
            block = []
        index = next((i for i, s in enumerate(block) if s is node), None)
        if index is None:
            node = parent
            continue
        rest = block[index + 1:]
        if isinstance(parent, ast.Try) or type(parent).__name__ == "TryStar":
            # after a `try` body its `else:`, then its `finally:`; after `else:`, the `finally:`
            rest = rest + (parent.orelse if block is parent.body else []) + (
                parent.finalbody if block is not parent.finalbody else [])
        result = _scan_block(facts, rest, name)
        if result is not None:
            return result[1] if result[0] == "read" else None
        if isinstance(parent, LOOPS) and block is parent.body and not (
                isinstance(parent, (ast.For, ast.AsyncFor))
                and any(isinstance(n, ast.Name) and n.id == name for n in ast.walk(parent.target))):
            again = _scan_block(facts, block[:index], name)  # the next pass
            if again is not None:
                return again[1] if again[0] == "read" else None
            if isinstance(parent, ast.While):
                loads = _loads(facts, parent.test, name)
                if loads:
                    return loads[0]
        node = parent


def _aliases(facts: FunctionFacts, stmt: ast.stmt, name: str) -> List[Tuple[str, bool]]:
    """Names bound to ``name`` itself (``identity = x``) or to a view of it that shares its storage (``x.view(...)``,
    ``x.detach()``, ``x.data``, ``x[0]``; :func:`~.fixplan.bindings.shared_base`) before ``stmt`` and not bound again
    since, each with whether
    ``name`` may have been bound again in between (in a branch that ``stmt`` is not in: ``residual = x; if pre:
    x = self.norm(x)``, so ``residual`` is the written tensor only on some paths). A binding of ``name`` to other
    storage on every path in between (:func:`.holders.rebound_between`) ends the alias."""
    start = (stmt.lineno, stmt.col_offset)
    out = []
    for assign in facts.assigns:
        if not (isinstance(assign, ast.Assign) and len(assign.targets) == 1
                and isinstance(assign.targets[0], ast.Name) and (assign.lineno, assign.col_offset) < start):
            continue
        base = shared_base(assign.value)  # `identity = x`, and views: `flat = x.view(n, -1)`, `d = x.detach()`
        if not (isinstance(base, ast.Name) and base.id == name) or assign.targets[0].id == name:
            continue
        at = (assign.lineno, assign.col_offset)
        again = rebound_between(facts, assign, stmt, name)  # (on every path, some, none)
        if again is True:
            continue
        alias = assign.targets[0].id
        if any(at < (a.lineno, a.col_offset) < start for a in facts.assigns if _assign_binds(a, alias)):
            continue
        out.append((alias, again is False))
    return out


def last_binding(facts: FunctionFacts, stmt: ast.stmt, name: str) -> Optional[ast.expr]:
    """The value of the last plain ``name = value`` before ``stmt`` in source order, when it is in a block that
    holds ``stmt`` (so it reaches it, unless a later binding in between does)."""
    start = (stmt.lineno, stmt.col_offset)
    ancestors = {id(n) for n in facts.path_to(stmt)}
    best = None
    for assign in facts.assigns:
        at = (assign.lineno, assign.col_offset)
        if at >= start:
            continue
        if isinstance(assign, ast.Assign) and len(assign.targets) == 1 and isinstance(assign.targets[0], ast.Name) \
                and assign.targets[0].id == name:
            if id(facts.parent(assign)) in ancestors and (best is None or at > best[0]):
                best = (at, assign.value)
        elif _assign_binds(assign, name):
            if best is None or at > best[0]:
                best = (at, None)  # bound otherwise later: unknown
    return best[1] if best is not None else None


def read_again(facts: FunctionFacts, call: ast.Call, name: str, aliases: bool = True,
               within: Optional[ast.AST] = None) -> Optional[Tuple[ast.Name, bool]]:
    """The first load after ``call`` (which wrote the tensor the local or parameter ``name`` holds) that may read
    what it wrote, and whether only on some paths: of ``name`` before it is bound again, or (``aliases``) of a name
    bound to the same tensor before the call. None where there is none. ``within`` (a loop around the call whose
    layer writes only what an earlier pass made, :mod:`.layer_elements`): only names and containers the loop itself
    bound or filled count, on some paths."""
    stmt = statement_of(facts, call)
    if not isinstance(stmt, (ast.Expr, ast.Assign, ast.AnnAssign, ast.AugAssign, ast.Return)):
        return None
    if any(isinstance(a, ast.Name) and a.id == name and _shadowed(facts, a) for a in call.args[:1]):
        return None  # `[self.act(x) for x in feats]`: each pass writes its own `x`
    found = _same_statement(facts, stmt, call, name)
    if found is None and not _binds(stmt, name):
        found = following(facts, stmt, name)
    if found is not None or not aliases:
        return (found, False) if found is not None else None
    held = [(alias, True) for alias, _ in containers_holding(facts, stmt, name, within)] \
        if within is not None else _aliases(facts, stmt, name) + containers_holding(facts, stmt, name)
    for alias, may in held:
        found = _same_statement(facts, stmt, call, alias)
        if found is None and not _binds(stmt, alias):
            found = following(facts, stmt, alias)
        if found is not None:
            return found, may
    return None


#: in-place activations and dropout whose result is taken for a new tensor (``h = x.relu_()``)
ACTIVATION_OPS = frozenset({"relu", "relu6", "leaky_relu", "elu", "selu", "celu", "rrelu", "sigmoid", "tanh",
                            "hardtanh", "hardsigmoid", "hardswish", "silu", "mish", "threshold", "dropout",
                            "dropout1d", "dropout2d", "dropout3d", "feature_alpha_dropout", "softplus"})
#: ``layer`` of a write whose call states it (``h = F.relu(x, inplace=True)``, ``h = x.relu_()``) but whose value
#: goes on under another name: the later read of ``x`` is reported as for a layer
VALUE_USED = "value"


def remedy(target: str, helper: Optional[str], line: int, layer: str) -> str:
    """What to change, for an IPV007 finding (it has no automatic fix: the later read should see the input, so the
    program's values change): where the layer is built, in the helper that writes, or at the call itself."""
    if helper is not None:
        return (f"the write is in `{helper}()` (line {line}): make it out of place there, or pass `{target}.clone()` "
                "here")
    if layer == VALUE_USED:
        return f"the call returns `{target}` itself: use its out-of-place form, or bind its result to `{target}`"
    return f"the flag is set where the layer is built: build it with `inplace=False`, or pass `{target}.clone()` here"


def value_used(facts: FunctionFacts, call: ast.AST, name: str) -> bool:
    """``call`` (an in-place op on ``name`` that says so) hands its result on under another name or into an
    expression (``h = F.relu(x, inplace=True)``, ``return fc(x.relu_()) + x``): not a statement of its own, nor a
    binding of ``name`` itself (``x = F.relu(x, inplace=True)``), where the author means the write."""
    stmt = statement_of(facts, call)
    if stmt is None or isinstance(stmt, ast.Expr) and stmt.value is call or _binds(stmt, name) \
            or isinstance(stmt, ast.AugAssign):
        return False
    return isinstance(stmt, (ast.Assign, ast.AnnAssign, ast.Return, ast.Expr))


def unchanged(facts: FunctionFacts, call: ast.Call, name: str, non_negative: Callable[[ast.expr], bool],
              layer: str, keeps_sign: Callable[[ast.Call], bool] = lambda c: False) -> bool:
    """The layer leaves the value as it is: a ReLU-like layer (:data:`POSITIVE_IDENTITY`) on a value
    ``non_negative`` says is never negative (``x = F.relu(h)``; ``relu(relu(x)) == relu(x)``), also through names bound
    to what ``keeps_sign`` calls (a pooling layer) made of such a value."""
    if layer.rpartition(".")[2] not in POSITIVE_IDENTITY:
        return False
    stmt = statement_of(facts, call)
    value = last_binding(facts, stmt, name) if stmt is not None else None
    for _ in range(4):  # (`x = self.pool(x)` after `x = self.relu1(h)`: the pooled maxima of a ReLU's output)
        if value is None:
            return False
        if non_negative(value):
            return True
        inner = value.args[0] if isinstance(value, ast.Call) and value.args and keeps_sign(value) else None
        if isinstance(inner, ast.Name):
            stmt = statement_of(facts, value)
            value = last_binding(facts, stmt, inner.id) if stmt is not None else None
        elif isinstance(inner, ast.Call):
            value = inner  # `self.pool(torch.relu(h))`
        else:
            return False
    return False


def non_negative_call(value: ast.expr, stack_op: Callable[[ast.expr], Optional[str]]) -> bool:
    """``value`` is a call whose result is never negative: ``F.relu(h)``, ``torch.sigmoid(h)``, ``h.exp()``, or
    ``self.<attr>(h)`` where ``stack_op`` says the attribute's output comes from such an op."""
    if isinstance(value, ast.BinOp) and isinstance(value.op, ast.Pow) and isinstance(value.right, ast.Constant) \
            and type(value.right.value) is int and value.right.value % 2 == 0:
        return True  # `h ** 2`
    if not isinstance(value, ast.Call):
        return False
    name = last_name(value.func)
    if name in NON_NEGATIVE_OPS:
        return True
    if name in ("clamp", "clip", "clamp_min", "clamp_"):
        low = next((k.value for k in value.keywords if k.arg == "min"), None)
        if low is None:  # (positional: `torch.clamp(x, 0)` or `x.clamp(0)`)
            given = value.args[1:] if isinstance(value.func, ast.Name) or _torch_call(value) else value.args
            low = given[0] if given else None
        return isinstance(low, ast.Constant) and isinstance(low.value, (int, float)) and low.value >= 0
    if name in _KEEPS_SIGN:  # pooling and reshaping keep every element's sign: `F.max_pool2d(F.relu(h), 2)`
        inner = value.args[0] if value.args and (isinstance(value.func, ast.Name) or _torch_call(value)) else (
            value.func.value if isinstance(value.func, ast.Attribute) else None)
        return inner is not None and non_negative_call(inner, stack_op)
    op = stack_op(value.func)
    return op is not None and op in NON_NEGATIVE_OPS


#: ops whose output elements are elements (or means or maxima) of their input: a non-negative input stays so
_KEEPS_SIGN = frozenset({"max_pool1d", "max_pool2d", "max_pool3d", "avg_pool1d", "avg_pool2d", "avg_pool3d",
                         "adaptive_max_pool1d", "adaptive_max_pool2d", "adaptive_max_pool3d", "adaptive_avg_pool1d",
                         "adaptive_avg_pool2d", "adaptive_avg_pool3d", "view", "reshape", "flatten", "permute",
                         "transpose", "contiguous", "squeeze", "unsqueeze", "float", "to"})


def _torch_call(call: ast.Call) -> bool:
    """``torch.f(x, ...)`` / ``F.f(x, ...)``: the first argument is the input, not the receiver."""
    head = dotted_name(call.func.value) if isinstance(call.func, ast.Attribute) else None
    return head in ("torch", "F", "nn.functional", "torch.nn.functional")


class RereadsMixin:
    """A later read of what a call wrote without showing it (a part of :class:`~.dataflow.Scope`, through
    :class:`~.reporting.ReportingMixin`)."""

    def hidden_write_reread(self, node: ast.AST, target: ast.expr, layer: str) -> Optional[Tuple[str, str, int, int]]:
        """Where a call wrote the local or parameter ``target`` without saying so (a layer built with ``inplace=True``,
        a submodule whose forward writes its input): the written name and the first later load that may read what it
        wrote (``(name, text, line, col)``; the text says "on some paths" where the load may read something else)."""
        if not (isinstance(target, ast.Name) and isinstance(node, ast.Call) and self.func is not None
                and not isinstance(self.func, ast.Module)):
            return None
        facts = self.facts()
        if layer and unchanged(facts, node, target.id, self._non_negative, layer, self._keeps_sign):
            return None
        some_pass = self.some_pass_layers.get(node.func.id) if isinstance(node.func, ast.Name) else None
        if some_pass is not None:  # (`for f in self.layers: x = f(x)`: only what the loop stored)
            found = read_again(facts, node, target.id, within=some_pass[0]) \
                if any(n is some_pass[0] for n in facts.path_to(node)) else None
            return (target.id, f"`{found[0].id}` (on some paths)", found[0].lineno, found[0].col_offset) \
                if found is not None else None
        found = read_again(facts, node, target.id)
        written = self.env.get(target.id, ())
        if found is None and written:
            # another name the analysis knows holds the same tensor, or a view of it (a parameter handed through
            # a pass-through helper: `x, _ = self.norm((resid, mask))` with `self.norm = lambda x: x`)
            for name in sorted(self.holders(list(written))):
                held = self.env.get(name, ())
                if "." in name or "[" in name or name == target.id or not held or any(h.guessed for h in held) \
                        or not all(any(h.derived_from(o) for o in written) for h in held) \
                        or unpacked_apart(facts, statement_of(facts, node), target.id, name):
                    continue
                found = read_again(facts, node, name, aliases=False)
                if found is not None:
                    found = (found[0], not all(any(o.derived_from(h) or h.derived_from(o) for h in held)
                                               for o in written))
                    break
        if found is None:
            # `x = self.pre(resid)` with `self.pre` a layer that may return its input (`nn.Identity()`, `lambda t: t`
            # where a flag turns it off, a dropout in eval mode): `resid` may be the written tensor
            stmt = statement_of(facts, node)
            value = last_binding(facts, stmt, target.id) if stmt is not None else None
            if isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute) and self._is_self(value.func.value) \
                    and value.func.attr in self.identity_layers and value.args and isinstance(value.args[0], ast.Name):
                found = read_again(facts, node, value.args[0].id)
                found = (found[0], True) if found is not None else None
        if found is None:
            return None
        load, may = found
        text = f"`{load.id}`" + (" (on some paths)" if may else "")
        if (load.lineno, load.col_offset) < (node.lineno, node.col_offset) \
                and statement_of(facts, load) is not statement_of(facts, node):
            text += " (on the loop's next pass)"
        return target.id, text, load.lineno, load.col_offset

    def _keeps_sign(self, call: ast.Call) -> bool:
        """``self.pool(x)`` with ``self.pool = nn.MaxPool2d(2)`` (:data:`~...torch_facts.ops.SIGN_KEEPING_LAYERS`), or
        ``F.max_pool2d(x, 2)``: a non-negative input stays so."""
        func = call.func
        if isinstance(func, ast.Attribute) and self._is_self(func.value) and self.ctx is not None and self.cls_qual:
            builder = self.ctx.attribute_builder(self.cls_qual, func.attr) or ""
            return builder.startswith("torch.") and builder.rpartition(".")[2] in ops.SIGN_KEEPING_LAYERS
        return last_name(func) in _KEEPS_SIGN

    def _non_negative(self, value: ast.expr) -> bool:
        """``value`` is never negative: a call of ``relu``, ``sigmoid``, ``exp``, ... or of ``self.<attr>`` built
        as one (``nn.ReLU()``, an ``nn.Sequential`` ending in ``nn.Sigmoid()``: :attr:`torch_stacks`)."""
        def stack_op(func: ast.expr) -> Optional[str]:
            if isinstance(func, ast.Attribute) and self._is_self(func.value):
                if func.attr in self.torch_stacks:
                    return self.torch_stacks[func.attr]
                module = self.inplace_modules.get(dotted_name(func) or "")
                return "relu" if module and module.rpartition(".")[2] == "ReLU" else None
            if isinstance(func, ast.Name):
                module = self.inplace_modules.get(func.id)
                return "relu" if module and module.rpartition(".")[2] == "ReLU" else None
            return None
        return non_negative_call(value, stack_op)
