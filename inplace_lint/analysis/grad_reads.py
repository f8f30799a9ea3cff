"""Whether a backward can reach an op: what it computes is read only by something that takes no gradient
(``x.max().item()``, a comparison, an index), followed through the names it is bound to (:mod:`.consumers`).
A part of :class:`~.dataflow.Scope`, through :class:`~.call_grad.CallGradMixin`."""
from __future__ import annotations

import ast

from .astutil import walk_ast
from .consumers import flows_into, only_gradless_readers

#: methods and builtins whose result takes no gradient from their receiver or argument (a Python number, an
#: integer or bool tensor): what an op saved for backward is never read through them
_READ_WITHOUT_GRAD_METHODS = frozenset({"item", "tolist", "numpy", "long", "int", "bool", "short", "byte",
                                        "argmax", "argmin", "nonzero", "any", "all"})
_READ_WITHOUT_GRAD_FUNCTIONS = frozenset({"int", "float", "bool", "len", "round", "str", "repr", "print", "format"})

#: the fields of a compound statement that hold its blocks (statements), not its own expressions
_BLOCK_FIELDS = frozenset({"body", "orelse", "finalbody", "handlers", "cases"})


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
        names = flows_into(node, facts.parents)
        if names is None:
            return False
        if not names:
            return True
        return only_gradless_readers(names, lambda name: facts.by_name.get(name, ((), ()))[1], facts.parents, node,
                                     set(), facts.captured_loads, self.params, facts.declared, unread=True)

    def _values_read_without_grad(self, call: ast.Call) -> bool:
        """``v, i = x.max(1)`` (a values-and-indices op unpacked into names): every read of ``v``, followed
        through the names it is bound to, ends without a gradient (a comparison, an index fill), or nothing
        reads it, so the op's backward never runs and the indices it saved are never read (iopaint's RetinaFace
        matching, executed)."""
        if self.func is None or isinstance(self.func, ast.Module):
            return False
        facts = self.facts()
        parent = facts.parents.get(id(call))
        if not (isinstance(parent, ast.Assign) and parent.value is call and len(parent.targets) == 1
                and isinstance(parent.targets[0], ast.Tuple) and len(parent.targets[0].elts) == 2
                and all(isinstance(e, ast.Name) for e in parent.targets[0].elts)):
            return False
        values = parent.targets[0].elts[0].id
        return only_gradless_readers({values}, lambda name: facts.by_name.get(name, ((), ()))[1], facts.parents, call,
                                     set(), facts.captured_loads, self.params, facts.declared, unread=True)
