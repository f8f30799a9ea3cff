"""Whether a backward can reach an op: what it computes is read only by something that takes no gradient
(``x.max().item()``, a comparison, an index), followed through the names it is bound to (:mod:`.consumers`).
A part of :class:`~.dataflow.Scope`, through :class:`~.call_grad.CallGradMixin`."""
from __future__ import annotations

import ast
from dataclasses import replace
from typing import List, Optional, Tuple

from ..findings import Origin, RootKind
from ..torch_facts import ops

from .astutil import dotted_name, last_name, walk_ast
from .consumers import flows_into, only_gradless_readers, param_reads
from .summaries import param_index

#: methods and builtins whose result takes no gradient from their receiver or argument (a Python number, an
#: integer or bool tensor): what an op saved for backward is never read through them
_READ_WITHOUT_GRAD_METHODS = frozenset({"item", "tolist", "numpy", "long", "int", "bool", "short", "byte",
                                        "argmax", "argmin", "nonzero", "any", "all"})
_READ_WITHOUT_GRAD_FUNCTIONS = frozenset({"int", "float", "bool", "len", "round", "str", "repr", "print", "format"})

#: torch factories that make a new tensor with its own storage (not ``as_tensor``, ``from_numpy``: they share it)
_FRESH_FACTORIES = ops.FACTORY_FUNCTIONS - ops.SHARING_FACTORIES

#: the fields of a compound statement that hold its blocks (statements), not its own expressions
_BLOCK_FIELDS = frozenset({"body", "orelse", "finalbody", "handlers", "cases"})


#: in-place binary ops whose backward reads the other operand for the receiver's gradient: with the receiver
#: as that operand (``a.mul_(a)``) the backward raises (executed on torch 2.13; ``add_``, ``sub_``, ``lerp_``,
#: ``copysign_`` do not)
_READS_OTHER_FOR_SELF = frozenset({"mul_", "multiply_", "div_", "divide_", "true_divide_", "pow_", "atan2_", "arctan2_",
                                   "hypot_", "fmod_", "remainder_", "xlogy_", "ldexp_"})


class GradReadsMixin:
    """Reads that take no gradient (a part of :class:`~.dataflow.Scope`)."""

    def read_without_grad(self, node: ast.expr) -> bool:
        """What ``node`` computes is only read by something that takes no gradient (``x.max().item()``,
        ``int(x.sum())``, ``x.amax() > 0``, ``x.max().long()``): no backward runs through it, so what its op
        saved for backward is never read (docs/pytorch-facts.md#saved-input)."""
        stmt = self.stmt_stack[-1] if self.stmt_stack else None
        if stmt is None:
            return False
        # the statement's own expressions: an `if`/`for`/`with` header, not the blocks under it
        heads = [child for name, child in ast.iter_fields(stmt) if name not in _BLOCK_FIELDS]
        nodes = [n for head in heads for item in (head if isinstance(head, list) else [head])
                 if isinstance(item, ast.AST) for n in walk_ast(item)]
        for parent in [stmt] + nodes:
            for child in ast.iter_child_nodes(parent):
                if child is not node:
                    continue
                if isinstance(parent, ast.Attribute) and parent.attr in _READ_WITHOUT_GRAD_METHODS:
                    return True
                if isinstance(parent, ast.Call) and isinstance(parent.func, ast.Name) \
                        and parent.func.id in _READ_WITHOUT_GRAD_FUNCTIONS and node in parent.args:
                    return True
                # `f'max: {torch.max(h)}'`: formatted into a string (a verbose print)
                return isinstance(parent, (ast.Compare, ast.FormattedValue))
        return False

    def _output_read_without_grad(self, node: ast.expr) -> bool:
        """Followed past the statement (:mod:`.consumers`): every read of what ``node`` computes, through the
        names it is bound to, ends without a gradient, or nothing reads it (``n = torch.linalg.norm(x)``
        with ``n`` read only by ``torch.nonzero(n * m)``, or never): the backward never reaches the op."""
        if self.func is None or isinstance(self.func, ast.Module):
            return False
        facts = self.facts()
        if not any(n is node for n in walk_ast(self.stmt_stack[-1])):
            return False  # a call evaluated apart from its statement (a summary's replay)
        # (a name whose items it is stored into, `buf[a:b] = torch.min(buf[a:b], d)`, when `buf` is a new tensor made
        # here: read only through `buf`)
        own = self._fresh_buffer
        names = flows_into(node, facts.parents, own_storage=own)
        skip = set()
        receiver = node.target if isinstance(node, ast.AugAssign) else node.func.value if isinstance(
            node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr.endswith("_") else None
        if isinstance(receiver, ast.Name) and (names is not None or isinstance(node, ast.AugAssign)):
            # `a.mul_(a)`, `a *= a`: what the op made lives on in its receiver (its own reads of it are the op's)
            names = (names or set()) | {receiver.id}
            skip = {id(n) for n in walk_ast(node) if isinstance(n, ast.Name)}
        if names is None:
            return False
        if not names:
            return True
        stmt, first = self.stmt_stack[-1], frozenset(names)  # (a name bound later gets the value there: followed)
        return only_gradless_readers(names, lambda name: facts.by_name.get(name, ((), ()))[1], facts.parents, node,
                                     skip, facts.captured_loads, self.params, facts.declared, unread=True,
                                     own_storage=own, stale=lambda load: load.id in first
                                     and self.read_after_rebinding(facts, stmt, load))

    def of_own_parameter(self, node: ast.expr) -> bool:
        """``self.constraint.transform(self.raw)``, ``F.softplus(self.raw_w)``: an untracked call (not a submodule's,
        nor a factory) given a parameter the class built: what it returns requires grad (gpytorch's constrained
        hyperparameters, alfi's kernels, set CX)."""
        return isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and not self._is_self(node.func.value) \
            and last_name(node.func) not in ops.FACTORY_FUNCTIONS and node.func.attr not in _READ_WITHOUT_GRAD_METHODS \
            and any(self._parameter_attribute(a) for a in node.args)

    def note_saved_indices(self, node: ast.expr, namespace: str, name: str, given: List[ast.expr],
                           origins: List[Optional[frozenset]], text) -> None:
        """``namespace.name`` ran on ``given`` with grad on: an integer index or bool mask it took (``x.gather(1,
        idx)``, ``x.masked_fill(mask, 0)``, ``torch.where(mask, a, b)``, ``F.nll_loss(x, target)``) is read by its
        backward when a float input at the positions :func:`ops.saved_index_inputs` names requires grad by evidence:
        writing it in place afterwards makes that backward raise (docs/pytorch-facts.md#saved-index), though it
        never requires grad itself. Marked as read for another input's gradient (:meth:`mark_saved_for_other`)."""
        from .expressions import holder_of  # (expressions imports this module's users)

        for position, floats in ops.saved_index_inputs(namespace, name):
            if position < len(given) and holder_of(given[position]) is not None and any(
                    f < len(given) and self.needs_grad(given[f], origins[f]) for f in floats):
                self.mark_saved_for_other(given[position], text(), node.lineno, node, surely_tensor=True)

    def note_tensor_index(self, node: ast.Subscript) -> None:
        """``h[idx]`` (read, grad on) with ``idx`` a name holding only tensors made here (``torch.arange``, a
        comparison's mask) and ``h`` requiring grad by evidence: advanced indexing's backward reads the index
        (``IndexBackward0``; docs/pytorch-facts.md#saved-index), so writing ``idx`` in place afterwards raises.
        A name that may hold a number or a list (a parameter, an untracked value) is basic indexing: nothing saved."""
        index = node.slice
        if self.no_grad or not isinstance(node.ctx, ast.Load) or not isinstance(index, ast.Name):
            return
        held = self.env.get(index.id)
        if not held or not all(o.is_tensor and o.certain_tensor and not o.guessed and param_index(o) is None
                               for o in held) or not self.needs_grad(node.value, None):
            return
        self.mark_saved_for_other(index, f"{ast.unparse(node.value)}[{index.id}]", node.lineno, node, surely_tensor=True)

    def saved_by_its_own_write(self, node: ast.AST, name: Optional[str], recv_node: ast.expr, recv: frozenset,
                               args: List[ast.expr]) -> frozenset:
        """``a.mul_(a)``, ``a.mul_(other=a)``, ``a *= a`` (``node``; ``args``: the operands after the receiver): the
        in-place op reads its argument, the receiver itself, for the receiver's gradient, then overwrites it: the
        backward raises when it runs (:data:`_READS_OTHER_FOR_SELF`; not ``add_``, ``copysign_``, whose backward
        reads no input for the receiver's gradient). Marks the receiver saved before the write is judged (the
        out-of-place op's entry in ``ops.SAVED_FOR_BACKWARD``); returns what the receiver then holds."""
        if not (name in _READS_OTHER_FOR_SELF and isinstance(recv_node, ast.Name) and self.recording
                and any(isinstance(a, ast.Name) and a.id == recv_node.id for a in args)):
            return recv
        self.note_saved_inputs(node, ops.TENSOR_METHOD, name[:-1], [recv_node] + list(args),
                               [recv] + [None] * len(args), lambda: f"{recv_node.id}.{name}")
        return self.env.get(recv_node.id) or recv

    def _fresh_buffer(self, name: str) -> bool:
        """Every binding of the local ``name`` makes a new tensor with storage of its own: a factory
        (``torch.full(...)``, ``torch.zeros_like(x)``), ``x.clone()`` or ``x.new_zeros(...)``; not an op that may give
        a view or its input back (``torch.select``, ``torch.as_tensor``)."""
        values = None if name in self.params else self._bindings().get(name)
        return bool(values) and all(
            isinstance(v, ast.Call) and isinstance(v.func, ast.Attribute) and (
                v.func.attr in ops.OWN_STORAGE_METHODS and not (dotted_name(v.func.value) or "").startswith("torch")
                or v.func.attr in _FRESH_FACTORIES and dotted_name(v.func.value) == "torch") for v in values)

    def _values_read_without_grad(self, call: ast.Call) -> bool:
        """``v, i = x.max(1)`` (a values-and-indices op unpacked into names): every read of ``v``, followed
        through the names it is bound to, ends without a gradient (a comparison, an index fill), or nothing
        reads it, so the op's backward never runs and the indices it saved are never read (iopaint's RetinaFace
        matching, executed). Also ``torch.sort(x, 1)[1]``, ``torch.topk(x, k).indices``: the values are dropped where
        the op runs, so nothing can read them (bindsnet's vote: ``torch.sort(rates, ...)[1][:, 0]``, set CV)."""
        if self.func is None or isinstance(self.func, ast.Module):
            return False
        facts = self.facts()
        parent = facts.parents.get(id(call))
        index = parent.slice if isinstance(parent, ast.Subscript) and parent.value is call else None
        if isinstance(index, ast.UnaryOp) and isinstance(index.op, ast.USub):  # (`[-1]` is `-(1)` in the tree)
            index = index.operand
        if isinstance(parent, ast.Attribute) and parent.value is call and parent.attr == "indices" or isinstance(
                index, ast.Constant) and type(index.value) is int and index.value == 1:
            return True
        if not (isinstance(parent, ast.Assign) and parent.value is call and len(parent.targets) == 1
                and isinstance(parent.targets[0], ast.Tuple) and len(parent.targets[0].elts) == 2
                and all(isinstance(e, ast.Name) for e in parent.targets[0].elts)):
            return False
        values = parent.targets[0].elts[0].id
        return only_gradless_readers({values}, lambda name: facts.by_name.get(name, ((), ()))[1], facts.parents, call,
                                     set(), facts.captured_loads, self.params, facts.declared, unread=True)

    def callee_reads(self, call: ast.Call, arg: ast.AST) -> Optional[str]:
        """What the project's own function ``call`` runs does with the argument ``arg`` (its summaries'
        ``gradless``/``flows_out``, for every function the call may run): "gradless" when no read takes a
        gradient through it, "returned" when it may also come back as the call's result, None otherwise."""
        if self.ctx is None or any(isinstance(a, ast.Starred) for a in call.args) \
                or any(k.arg is None for k in call.keywords):
            return None
        callees = self.resolve_callees(call.func)
        verdict = "gradless"
        for qual, bound in callees or [(None, 0)]:
            summary = self.ctx.summary(qual) if qual is not None else None
            params = (self.ctx.params_of(qual) or ((), False))[0] if summary is not None else ()
            index = next((bound + i for i, a in enumerate(call.args) if a is arg), None)
            if index is None:
                index = next((params.index(k.arg) for k in call.keywords if k.value is arg and k.arg in params), None)
            if summary is None or index is None or index >= len(params) or params[index].startswith("*") \
                    or index not in summary.gradless:
                return None
            if index in summary.flows_out:
                verdict = "returned"
        return verdict

    def params_read_without_grad(self, params: Tuple[str, ...]) -> Tuple[frozenset, frozenset]:
        """``(gradless, flows_out)`` of a summary: the parameters (by index in ``params``) every read of which
        ends without a gradient or in a return, and of those the ones a return may hand back."""
        if self.func is None or isinstance(self.func, (ast.Module, ast.Lambda)):
            return frozenset(), frozenset()
        facts = self.facts()
        gradless, flows_out = set(), set()
        for i, name in enumerate(params):
            if name.startswith("*") or name in ("self", "cls"):
                continue
            verdict = param_reads(name, lambda n: facts.by_name.get(n, ((), ()))[1], facts.parents,
                                  facts.captured_loads, facts.declared, self.callee_reads)
            if verdict is not None:
                gradless.add(i)
                if verdict:
                    flows_out.add(i)
        return frozenset(gradless), frozenset(flows_out)

    def _unreached_saved_outputs(self, node: ast.Call, summary, binding) -> None:
        """A saved output passed for a parameter the callee reads only without a gradient (``summary.gradless``:
        demucs's ``encode_mp3(wav)``, whose ``i16_pcm`` clamps it in place, then casts it to int16), where
        nothing else here reads it with one (:meth:`only_gradless_consumers`, this call included): no backward can
        reach the op that saved it, so it is passed on as saving nothing (a write to it, here or in the callee,
        cannot fail)."""
        for i, (origins, arg_node) in list(binding.items()):
            # (made here, held by no attribute or item: the callers cannot hold it)
            saved = [o for o in origins if o.root is RootKind.SAVED_OUTPUT and not o.root_no_grad
                     and param_index(o) is None and self._made_here(o)]
            if i in summary.gradless and saved and isinstance(arg_node, ast.Name) \
                    and all(self.only_gradless_consumers(node, o, through_calls=True) for o in saved):
                binding[i] = (frozenset(replace(o, root_no_grad=True) if o in saved else o for o in origins),
                              arg_node)

    def _made_here(self, origin: Origin) -> bool:
        """``origin`` was made by a statement of the function walked, ``name = <expression>`` with no other use of
        the value (not unpacked from a tuple whose other outputs a backward may run through, ``v, i = x.sort()``;
        no ``:=`` in it), and only plain names hold it."""
        func = self.func
        if func is None or isinstance(func, ast.Module) \
                or not func.lineno <= origin.root_line <= (func.end_lineno or func.lineno):
            return False
        facts = self.facts()
        binds = [s for s in facts.assigns if getattr(s, "lineno", None) == origin.root_line]
        if not binds or any(not isinstance(s, ast.Assign) or not all(isinstance(t, ast.Name) for t in s.targets)
                            or any(isinstance(n, ast.NamedExpr) for n in walk_ast(s.value)) for s in binds):
            return False
        same = (origin.root, origin.root_line, origin.root_text)
        return not any(("." in k or "[" in k) and any((o.root, o.root_line, o.root_text) == same for o in os)
                       for k, os in self.env.items())

    def read_before(self, names, origin: Origin) -> set:
        """Ids of the loads of ``names`` that read what they held before ``origin`` was bound to them: on an
        earlier line, or in the value of the assignment binding it (``wav = prevent_clip(wav)``), outside any loop
        around the binding (:meth:`only_gradless_consumers`)."""
        facts = self.facts()
        out = set()
        for name in names:
            for load in facts.by_name.get(name, ((), ()))[1]:
                if load.lineno > origin.root_line:
                    continue
                path = facts.path_to(load)
                if any(isinstance(node, (ast.For, ast.AsyncFor, ast.While))
                       and node.lineno <= origin.root_line <= (node.end_lineno or node.lineno) for node in path):
                    continue
                stmt = next((node for node in reversed(path) if isinstance(node, ast.stmt)), None)
                if load.lineno < origin.root_line or isinstance(stmt, ast.Assign) and stmt.lineno == origin.root_line \
                        and any(isinstance(t, ast.Name) and t.id == name for t in stmt.targets):
                    out.add(id(load))
        return out
