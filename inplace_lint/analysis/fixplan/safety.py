"""Fix safety: whether a planned rewrite can be seen by anything else (SAFE or UNSAFE, with the reason).

Safety (DESIGN.md "Fix policy"): a rewrite rebinds the target name instead of
mutating the tensor, so anything else that shares the storage stops seeing the
change. It is SAFE only when nothing that could observe the mutation can see it:

- the target and the view's base (``output`` of ``output.logits``) and every other
  name that may hold the same tensor (for every origin the target may have) are local
  to the function: not a parameter, ``global``, ``nonlocal`` or closure variable;
- none of them is read after the write (reads in the other arm of an ``if`` around the
  write do not count, unless a loop around that ``if`` can run it again);
- none of them escaped before the write: stored in a container or an attribute, passed
  to a call that may keep it (anything but torch functions and a few builtins), yielded,
  or captured by a nested function, lambda or generator;
- what an in-project call returned is not also held by the callee (``FunctionSummary.kept``:
  a caching or replacing decorator, ``self.last = out``, ``_LOG.append(out)``; see
  :func:`returned_elsewhere`, :func:`decorator_effects`);
- no Python attribute was set on the tensor object (``x.tag = v``: lost by rebinding).

A model output is a record: another field (``output.hidden_states``, ``output["entropy"] = e``)
is not a read of the written one (:func:`written_fields`).

Anything else is UNSAFE, with the reason.
"""
from __future__ import annotations

import ast
import bisect
from typing import Callable, Dict, FrozenSet, Iterable, List, Optional, Sequence, Set, Tuple

from ...findings import SAME_TENSOR_STEPS, Applicability, Origin, RootKind, StepKind, WriteKind
from ..astutil import dotted_name as dotted, walk_ast
from ..class_facts import ANY_FIELD
from ..astutil import last_name
from .facts import (NON_ALIAS_ATTRS, FunctionFacts, alias_chain_top, alias_closure, climb, escape,
                    exclusive_spans, root_base_name)
from .bindings import (bound_sources, from_outside, holding_locals, rebound_before, shared_base,
                       stored_elsewhere)
from .sources import held_sources


def applicability(facts: FunctionFacts, params: Sequence[str], target_name: str, origins: Sequence[Origin],
                  aliases: Iterable[str], write: ast.AST, loops: Sequence[ast.AST],
                  callers_checked: bool = False,
                  shared_fields: Sequence[Sequence[str]] = ()) -> Tuple[Applicability, str]:
    """SAFE when nothing outside the rebinding can observe the mutation; else UNSAFE with the reason.

    ``callers_checked``: the project pass has checked every in-project call site and none reads what it
    passed afterwards (:mod:`.project`), so a parameter is as private as a local.
    """
    if isinstance(facts.func, ast.Module):
        return Applicability.UNSAFE, "module-level names can be imported by other code, which would no longer see the change"
    if callers_checked:
        params = ()
    # a parameter's name bound again to a tensor made here before the write: the caller's tensor is not written, and
    # the name's earlier loads read that older object
    rebound = rebound_before(facts, target_name, write, params, origins) if target_name in params else None
    if target_name in params and rebound is None:
        return Applicability.UNSAFE, f"`{target_name}` is a parameter: the caller would no longer see the change"
    # (with `rebound`, no other binding of the name reaches the write)
    held = None if rebound is not None else next(
        ((src, line) for src, line in bound_sources(facts, target_name) if src in params), None)
    if held is not None:
        # `variance = emb if use_emb else torch.norm(...)`, `v = given or ...`, an `if`/`except`/loop binding:
        # every binding may reach the write, and one holds the caller's tensor
        return Applicability.UNSAFE, (f"`{target_name}` may be `{held[0]}` (line {held[1]}), a parameter: the caller "
                                      "would no longer see the change")
    path = facts.path_to(write)
    if any(isinstance(p, ast.Try) and any(c is child for c in p.finalbody) for p, child in zip(path, path[1:])):
        return Applicability.UNSAFE, "the write is in a `finally` block, after what the `try` block returns"
    if not facts.is_local(target_name) and not (callers_checked and facts.is_param(target_name)):
        return Applicability.UNSAFE, f"`{target_name}` comes from outside the function: it would no longer see the change"
    frame = next((n for name in ("locals", "vars", "eval", "exec") for n in facts.by_name.get(name, ((), ()))[1]
                  if isinstance(facts.parent(n), ast.Call) and facts.parent(n).func is n
                  and (name in ("eval", "exec") or not facts.parent(n).args)), None)
    if frame is not None:
        # `frame = locals()`: a dict of every local name, which keeps the tensor the rewrite would leave behind;
        # `eval("out.logits")` reads whatever local names its text names
        if frame.id in ("eval", "exec"):
            return Applicability.UNSAFE, f"`{frame.id}(...)` (line {frame.lineno}) may read any local name"
        return Applicability.UNSAFE, f"`{frame.id}()` (line {frame.lineno}) holds every local name"
    observers: Dict[str, str] = {a: a for a in aliases if a != target_name}
    for origin in origins:
        base = root_base_name(origin)
        if base is not None and base != target_name:
            observers.setdefault(base, origin.root_text)
    for source, _ in held_sources(facts, target_name, write, loops):
        observers.setdefault(source, source)  # `beta = [x][0]`, `with nullcontext(x) as beta`: `beta` may be `x`
    for holder, what in holding_locals(facts, target_name).items():
        observers.setdefault(holder, what)  # `attn = out["attn"]`: `out` holds the written tensor too
        outside = from_outside(facts, holder, callers_checked)
        if outside is not None:  # `cache = caches[i]; attn = cache["attn"]`: the caller's dict holds it
            return Applicability.UNSAFE, (f"`{holder}` holds the written tensor (`{what}`) and is "
                                          f"`{ast.unparse(outside)}`, from outside the function, which would no "
                                          "longer see the change")
    for name, what in sorted(observers.items()):
        if name in params:
            return Applicability.UNSAFE, (
                f"`{name}` is a parameter: the caller would no longer see the change to `{what}`")
        if not facts.is_local(name) and not (callers_checked and facts.is_param(name)):
            return Applicability.UNSAFE, (
                f"`{name}` comes from outside the function: other code would no longer see the change")
    # the objects the written tensor is a field or an item of (`out` of `out.logits`, `outs` of `outs[0]`)
    holders = {name for name, what in observers.items() if what != name and what.startswith(name)}
    key = frozenset(observers) | {target_name}
    start = (write.lineno, write.col_offset)
    end = (getattr(write, "end_lineno", write.lineno), getattr(write, "end_col_offset", 0))
    # outside loops, an alias made from the target after the write sees the new values either way
    # and a link made in an arm of an `if` that excludes the write never ran with it
    before = None if loops else start
    exclusive = exclusive_spans(facts, write)
    closure_key = (key, before, tuple(exclusive) if before else ())
    if closure_key not in facts.closures:
        facts.closures[closure_key] = alias_closure(facts, set(key), before, exclusive if before else ())
    watched = facts.closures[closure_key]
    loop_spans = [(loop.lineno, loop.end_lineno or loop.lineno) for loop in loops]
    fields = written_fields(origins, shared_fields)
    if fields:
        # a read of another field of a model output does not observe the written one, so the first load of
        # a kind no longer decides for the rest (what _candidate_loads assumes): every load is judged
        candidates = sorted((n for name in watched for n in facts.by_name.get(name, ((), ()))[1]),
                            key=lambda n: (n.lineno, n.col_offset))
    else:
        candidates = _candidate_loads(facts, watched, target_name, start, end, loop_spans, exclusive, rebound)
        stores = facts.attribute_stores(target_name)
        if stores:  # `x.tag = v` on the tensor object: not a kind _candidate_loads looks for
            seen = {id(n) for n in candidates}
            candidates = sorted(candidates + [n for n in stores if id(n) not in seen],
                                key=lambda n: (n.lineno, n.col_offset))
    for load in candidates:
        name = load.id
        pos = (load.lineno, load.col_offset)
        if start <= pos < end:
            continue  # the write itself
        if name in fields and _other_field(facts, load, fields[name]):
            continue  # `output.hidden_states`, `output["entropy"] = e`: another field of the output object
        if name == target_name and (pos < start or any(lo <= load.lineno <= hi for lo, hi in loop_spans)):
            attr = facts.parent(load)
            if isinstance(attr, ast.Attribute) and attr.value is load and (isinstance(attr.ctx, (ast.Store, ast.Del))
                                                                          or attr.attr == "__dict__"):
                # `x.tag = v`: Python state on the tensor object; the rebound name is a new object without it
                return Applicability.UNSAFE, (
                    f"`{name}.{attr.attr}` is set on the tensor object (line {load.lineno}): the rebound "
                    f"`{name}` would be a new tensor without it (AttributeError)")
        if facts.captured(load):  # (a closure reads the name when it runs, so `rebound` does not help)
            return Applicability.UNSAFE, (
                f"`{name}` is used by a nested function, lambda or generator (line {load.lineno}), "
                "which would no longer see the change")
        in_loop = any(lo <= load.lineno <= hi for lo, hi in loop_spans)
        later = pos >= end or in_loop
        if later and name != target_name and not any(lo <= load.lineno <= hi for lo, hi in exclusive):
            return Applicability.UNSAFE, (
                f"`{name}` is read after the write (line {load.lineno}) and would no longer see the change")
        if name == target_name and rebound is not None and pos < rebound:
            continue  # `x` of `x = torch.sigmoid(self.norm(x))`: the caller's tensor, not the written one
        if (pos < start and not any(lo <= load.lineno <= hi for lo, hi in exclusive)) or in_loop:
            # after the write, the target holds the same values either way; a load in an arm of an
            # `if` that excludes the write never ran before it
            if name in holders and isinstance(facts.parent(load), ast.BinOp):
                # `record = out | extra`, `outs + rest`: the object holding the written tensor, combined into a
                # new container that holds the same tensor
                return Applicability.UNSAFE, (
                    f"`{name}` holds the written tensor and `{ast.unparse(facts.parent(load))}` (line {load.lineno}) "
                    "may copy it into a new container, where the change would no longer be seen")
            escape = facts.escape_of(load)
            if escape is not None:
                return Applicability.UNSAFE, (
                    f"`{name}` {escape} (line {load.lineno}), where the change would no longer be seen")
    stored = stored_elsewhere(facts, target_name, callers_checked)
    if stored is not None:
        # `y = self.cache = torch.exp(h)`, `d["h"] = y = ...`: the tensor is stored where the rebound name is not
        return Applicability.UNSAFE, (f"`{ast.unparse(stored)}` is bound to the same tensor (line {stored.lineno}) "
                                      "and would no longer see the change")
    return Applicability.SAFE, ""


#: fields of a model output that may hold the same tensor: ``last_hidden_state`` is usually the last
#: element of ``hidden_states`` (Hugging Face models append the final state to both)
_ALIASED_FIELDS = (frozenset({"last_hidden_state", "hidden_states", "encoder_last_hidden_state",
                              "encoder_hidden_states", "decoder_hidden_states"}),)

def _field_of(text: str) -> Optional[str]:
    """``logits`` for ``output.logits``, ``output["logits"]`` (and views of them); None for ``outputs[0]``."""
    head = text.split(".", 1)[0].split("[", 1)[0]
    rest = text[len(head):]
    if rest.startswith("."):
        name = rest[1:].split(".", 1)[0].split("[", 1)[0].split("(", 1)[0]
        return name if name.isidentifier() else None
    if rest[:2] in ('["', "['"):
        name = rest[2:].split(rest[1], 1)[0]
        return name if name.isidentifier() else None
    return None

def _field_group(name: str, shared: Sequence[Sequence[str]] = ()) -> FrozenSet[str]:
    out = {name}
    for group in (*_ALIASED_FIELDS, *shared):
        if name in group:
            out.update(group)
    return frozenset(out)

def written_fields(origins: Sequence[Origin], shared: Sequence[Sequence[str]] = ()) -> Dict[str, FrozenSet[str]]:
    """For each model output object the written tensor is a field of (``output`` of ``output.logits``),
    the fields it may be (with the fields that may share their tensor). An output object is a record:
    a different field holds a different tensor (issue 20, "a model output is an object with fields"),
    so reading ``output.hidden_states`` or storing ``output["entropy"]`` does not observe ``output.logits``.
    A base also reached as a whole (``outputs[0]``, the object itself) has no entry."""
    if any(ANY_FIELD in group for group in shared):
        return {}  # `Out(h, h)` somewhere: which fields share a tensor is not known, so none is apart
    fields: Dict[str, Set[str]] = {}
    whole: Set[str] = set()
    for origin in origins:
        base = root_base_name(origin)
        if base is None:
            continue
        name = _field_of(origin.root_text) if origin.root is RootKind.MODEL_OUTPUT else None
        if name is None:
            whole.add(base)
        else:
            fields.setdefault(base, set()).update(_field_group(name, shared))
    return {base: frozenset(names) for base, names in fields.items() if base not in whole}

def _other_field(facts: FunctionFacts, load: ast.Name, fields: FrozenSet[str]) -> bool:
    """``load`` reads or stores one named field of the object, not one of ``fields``: ``output.hidden_states``,
    ``output["entropy"] = e``. A method (``output.get("logits")``, ``output.to_tuple()``) may read any field."""
    parent = facts.parent(load)
    if isinstance(parent, ast.Attribute) and parent.value is load:
        grand = facts.parent(parent)
        if isinstance(grand, ast.Call) and grand.func is parent:
            return False
        return parent.attr not in fields and not parent.attr.startswith("__")  # (`out.__dict__` is every field)
    if isinstance(parent, ast.Subscript) and parent.value is load and isinstance(parent.slice, ast.Constant) \
            and isinstance(parent.slice.value, str):
        return parent.slice.value not in fields
    return False

def _candidate_loads(facts: FunctionFacts, watched: Set[str], target_name: str, start: Tuple[int, int],
                     end: Tuple[int, int], loop_spans: Sequence[Tuple[int, int]],
                     exclusive: Sequence[Tuple[int, int]], rebound: Optional[Tuple[int, int]] = None) -> List[ast.Name]:
    """The loads of ``watched`` names that :func:`applicability` must judge, in source order: for each name,
    the first load of each kind that can make the fix unsafe (captured by a nested function; read after the
    write or in a loop around it; escaping before it or in such a loop). The first load that makes the fix
    unsafe is always among them, so the verdict (and its reason) is the one a scan of every load gives,
    at the cost of a few binary searches per watched name instead of the function's length."""
    inf = (float("inf"), 0)
    found: Dict[int, ast.Name] = {}

    def first(positions, nodes, lo, hi, skip_exclusive) -> None:
        i = bisect.bisect_left(positions, lo)
        while i < len(positions) and positions[i] < hi:
            pos = positions[i]
            if start <= pos < end:
                i = bisect.bisect_left(positions, end)
                continue
            span = next(((a, b) for a, b in exclusive if a <= pos[0] <= b), None) if skip_exclusive else None
            if span is not None:
                i = bisect.bisect_left(positions, (span[1] + 1, -1))
                continue
            found[id(nodes[i])] = nodes[i]
            return

    for name in watched:
        if name not in facts.by_name:
            continue
        first(*facts.captured_of(name), (-1, -1), inf, False)
        positions, nodes = facts.by_name[name]
        escaping = facts.escaping(name)
        if name != target_name:
            first(positions, nodes, end, inf, True)
        # (``rebound``: the target's loads before it read an older object, not the written one)
        floor = rebound if name == target_name and rebound is not None else (-1, -1)
        first(*escaping, floor, start, True)
        for lo, hi in loop_spans:
            if name != target_name:
                first(positions, nodes, (lo, -1), (hi + 1, -1), True)
            first(*escaping, max((lo, -1), floor), (hi + 1, -1), False)
    return sorted(found.values(), key=lambda n: (n.lineno, n.col_offset))

def kept_reason(origins: Iterable[Origin], kept: Dict[Tuple[str, int], str]) -> str:
    """Why one of ``origins`` (what an in-project call returned) is also held elsewhere, or ""."""
    if not kept:
        return ""
    for origin in origins:
        reason = kept.get((origin.root_text, origin.root_line))
        if reason:
            return reason
    return ""


# --------------------------------------------------------------------------- results kept elsewhere

#: decorators that neither keep what the function returns nor call it from elsewhere
_TRANSPARENT_DECORATORS = frozenset({
    "staticmethod", "classmethod", "abstractmethod", "override", "final", "overload", "wraps", "no_type_check",
    "no_grad", "inference_mode", "enable_grad", "set_grad_enabled", "compile", "script", "script_method",
    "ignore", "unused", "export", "disable", "custom_fwd", "custom_bwd", "autocast", "once_differentiable",
    "setter", "getter", "deleter", "property", "contextmanager", "asynccontextmanager", "jit", "njit",
    "deprecated", "torch_function",
})

_CACHING_DECORATORS = frozenset({"lru_cache", "cache", "cached", "memoize", "memoized", "cached_method",
                                 "lru_cache_with_ttl", "cached_property"})

def decorator_effects(func: ast.AST, passes_through: Callable[[ast.expr], bool] = lambda dec: False
                      ) -> Tuple[str, str]:
    """(why the result is kept, which decorator may call the function from elsewhere) for ``func``'s
    decorators: ``@functools.lru_cache`` keeps each result and returns the same tensor to the next call
    with equal arguments (functools docs); a decorator not known to pass calls through replaces the
    function (a wrapper that may store results, a registry that calls it by name). ``passes_through``:
    the project's own pass-through decorators (:meth:`~..project_calls.ProjectCallsMixin.project_wrapper`)."""
    kept = decorated = ""
    for dec in getattr(func, "decorator_list", ()):
        head = dec.func if isinstance(dec, ast.Call) else dec
        name = last_name(head) or ""
        text = dotted(head) or ast.unparse(head)
        if name in _TRANSPARENT_DECORATORS or passes_through(dec):
            continue
        if name in _CACHING_DECORATORS:
            kept = kept or f"`@{text}` keeps each result and returns the same tensor to later calls"
            continue
        kept = kept or f"`@{text}` replaces the function and may keep what it returns"
        decorated = decorated or f"@{text}"
    return kept, decorated

def _describe_keeper(facts: FunctionFacts, load: ast.Name) -> Optional[str]:
    """Where the object named at ``load`` is also put: ``self.last``, ``_LOG.append``, ... or None."""
    if facts.captured(load):
        return f"`{load.id}` is used by a nested function or generator (line {load.lineno})"
    top, keeper = climb(facts, load)
    if keeper is not None:
        return f"`{load.id}` is passed to `{dotted(keeper.func) or ast.unparse(keeper.func)}` (line {load.lineno})"
    parent = facts.parent(top)
    if isinstance(parent, (ast.Assign, ast.AnnAssign)) and getattr(parent, "value", None) is top:
        targets = parent.targets if isinstance(parent, ast.Assign) else [parent.target]
        # (a `global`/`nonlocal` name outlives the call as an attribute does)
        stored = [t for t in targets if not isinstance(t, ast.Name) or t.id in facts.declared]
        if stored:
            return f"`{load.id}` is also stored in `{ast.unparse(stored[0])}` (line {load.lineno})"
        return None
    how = escape(facts, load)
    return None if how is None else f"`{load.id}` {how} (line {load.lineno})"

def returned_elsewhere(facts: FunctionFacts, bases: Iterable[str] = ()) -> str:
    """Why what the function returns may also be reachable after it returns (it was stored in an
    attribute, a container, a global, passed to a call that may keep it, captured), or "".
    ``bases``: the objects the returned tensors are fields of (``out`` of a returned ``out.logits``)."""
    names: Set[str] = set(bases)
    for ret in facts.returns:
        value = ret.value
        tops = {id(value)}
        if isinstance(value, (ast.Tuple, ast.List)):
            tops |= {id(e) for e in value.elts}
        for n in walk_ast(value):
            if isinstance(n, ast.Name) and id(alias_chain_top(facts, n)) in tops:
                names.add(n.id)
    for ret in facts.returns:
        top = ret.value
        while isinstance(top, (ast.Attribute, ast.Subscript)) and not (
                isinstance(top, ast.Attribute) and top.attr in NON_ALIAS_ATTRS):
            top = top.value
        if top is not ret.value and isinstance(top, ast.Name) and (
                top.id in ("self", "cls") or not (facts.is_param(top.id) or facts.is_local(top.id))):
            # `return self._cur`, `return CACHE[k]`: the object stays where it was read from (an attribute of
            # another parameter is the caller's own object, judged at the caller)
            return f"it is `{ast.unparse(ret.value)}` (line {ret.lineno})"
    if not names:
        return ""
    if any(facts.is_param(n) or not facts.is_local(n) for n in names):
        return ""  # a parameter or a global: the caller's own reference (judged at the caller)
    watched = alias_closure(facts, names)
    inside = {id(n) for ret in facts.returns for n in walk_ast(ret)}
    for load in facts.loads:
        if load.id not in watched or id(load) in inside:
            continue
        keeper = _describe_keeper(facts, load)
        if keeper is not None:
            return keeper
    return ""


def raises_at_write(node: ast.AST, kind: WriteKind, target: ast.expr, origins: Sequence[Origin]) -> bool:
    """With grad on, the write raises where it stands, before any backward (torch 2.13, executed), so no
    out-of-place form keeps the program's behaviour:
    - ``out=`` a tensor that requires grad and is not also an input ("functions with out=... arguments
      don't support automatic differentiation"; the rewrite's fresh ``out`` does not require grad);
    - a leaf that requires grad, or a view of one (``w = torch.ones(3, requires_grad=True); w.add_(1)``:
      "a leaf Variable that requires grad is being used in an in-place operation");
    - an operand that is a view of the written tensor other than the tensor itself (``y.add_(y.t())``: "some
      elements of the input tensor and the written-to tensor refer to a single memory location")."""
    if kind is WriteKind.OUT_KWARG and isinstance(node, ast.Call) and any(
            o.grad_evidence or o.guess_param >= 0 for o in origins):
        base = ast.dump(shared_base(target))
        inputs = [shared_base(a) for a in list(node.args) + [k.value for k in node.keywords if k.arg != "out"]]
        if not any(isinstance(a, ast.Name) and ast.dump(a) == base for a in inputs):
            return True  # (`add(x, t, out=x)`: `x` is an input too, and the rewrite raises the same)
    if any(o.root is RootKind.TENSOR and "requires_grad=True" in o.root_text
           and all(s.kind is StepKind.VIEW or s.kind in SAME_TENSOR_STEPS for s in o.steps) for o in origins):
        return True
    name = target.id if isinstance(target, ast.Name) else None
    if name is None:
        return False
    if kind is WriteKind.METHOD and isinstance(node, ast.Call):
        operands = list(node.args) + [k.value for k in node.keywords]
    elif kind in (WriteKind.AUGMENTED, WriteKind.SUBSCRIPT):
        operands = [getattr(node, "value", None)]
    else:
        return False
    for operand in operands:
        base = shared_base(operand) if operand is not None and not isinstance(operand, ast.Name) else None
        if isinstance(base, ast.Name) and base.id == name and base is not operand:
            return True
    return False


#: in-place methods that read each operand element only to write the element at the same place: an operand that
#: is the written tensor itself (``x.mul_(x)``) gives what the out-of-place form gives
_ELEMENTWISE_INPLACE = frozenset({
    "add_", "sub_", "subtract_", "mul_", "multiply_", "div_", "divide_", "true_divide_", "floor_divide_", "pow_",
    "fmod_", "remainder_", "clamp_", "clip_", "clamp_min_", "clamp_max_", "addcmul_", "addcdiv_", "lerp_", "copy_",
    "maximum_", "minimum_", "fmax_", "fmin_", "hypot_", "atan2_", "logaddexp_", "copysign_", "xlogy_",
})


def operand_shares_target(facts, kind: WriteKind, node: ast.AST, name: str) -> Optional[str]:
    """Why an operand of the write may share the written tensor's memory, or None: the tensor itself read by an
    op that is not elementwise (``x.masked_scatter_(m, x)`` reads elements it already wrote;
    ``x.index_copy_(0, i, x)`` raises "some elements of the input tensor and the written-to tensor refer to a
    single memory location"), or another name for it or a view of it (``ref = x[:, :1]; x -= ref``: torch 2.13
    zeroes the first column, then subtracts the zeros). The out-of-place form reads the old values, so it
    computes something else (executed: tests/test_fix_review15.py)."""
    if kind is WriteKind.METHOD and isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
        operands, elementwise = list(node.args) + [k.value for k in node.keywords], node.func.attr in _ELEMENTWISE_INPLACE
    elif kind is WriteKind.AUGMENTED:
        operands, elementwise = [node.value], not isinstance(node.op, ast.MatMult)
    else:
        return None
    for operand in operands:
        base = shared_base(operand)
        if not isinstance(base, ast.Name):
            continue
        if base.id == name:
            if base is operand and not elementwise:
                return f"`{name}` is also an operand of the op, which reads elements it has already written"
            continue  # (a view of the target other than itself: `raises_at_write`)
        if base.id in alias_closure(facts, {name}) or name in alias_closure(facts, {base.id}):
            return (f"`{base.id}` may share `{name}`'s memory: the in-place op reads elements it has already "
                    "written, the out-of-place form the old ones")
    return None
