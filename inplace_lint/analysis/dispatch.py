"""Methods a class calls only under a flag (:func:`dispatch_guards`), and the arms that flag makes dead in them.

``forward(self, x): return self._forward_inplace(x) if self.inplace else self._forward(x)`` in a base class runs a
subclass's ``_forward`` only with ``self.inplace`` false, so ``if self.inplace: F.relu_(x); x.mul_(self.alpha)``
inside ``_forward`` never runs (torch-activation's activations, set BY: about 185 such arms, their in-place twins in
``_forward_inplace``). Kept per class in its ``__init__`` attributes (:func:`.init_builds.init_attributes`) under
``"@guard:<method>"``, so a subclass finds what its bases' dispatch says (``Resolver.attribute_builder``).
"""
from __future__ import annotations

import ast
from typing import Dict, Optional, Tuple

from .astutil import child_nodes

#: the value of a call made with no flag test around it
UNGUARDED = "dispatch.none"


def _flag(test: ast.expr, me: str) -> Optional[Tuple[str, bool]]:
    """``(attr, truth)`` of ``self.attr`` / ``not self.attr``."""
    truth = True
    while isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        truth, test = not truth, test.operand
    if isinstance(test, ast.Attribute) and isinstance(test.value, ast.Name) and test.value.id == me:
        return test.attr, truth
    return None


def dispatch_guards(cls: ast.ClassDef) -> Dict[str, str]:
    """``"@guard:<m>"`` -> ``"dispatch.<attr>.<0|1>"`` for each method ``m`` every ``self.m(...)`` call in the class's
    methods makes under one test of a flag of ``self`` (in an ``if`` arm or a conditional expression's branch;
    1: the flag holds there; under two such tests, the outer one), or :data:`UNGUARDED` when one call has no such
    test. One walk of each method, carrying the test a node is under."""
    found: Dict[str, set] = {}
    for item in cls.body:
        if not isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)) or not item.args.args:
            continue
        me = item.args.args[0].arg
        todo: list = [(item, None)]
        pop, push = todo.pop, todo.append
        while todo:
            node, guard = pop()
            kind = node.__class__
            if kind is ast.Call:
                func = node.func
                if func.__class__ is ast.Attribute and func.value.__class__ is ast.Name and func.value.id == me:
                    found.setdefault(func.attr, set()).add(
                        f"dispatch.{guard[0]}.{int(guard[1])}" if guard else UNGUARDED)
            elif kind is ast.If or kind is ast.IfExp:
                flag = _flag(node.test, me)
                if flag is not None:
                    push((node.test, guard))
                    for part in (node.body if kind is ast.If else (node.body,)):
                        push((part, guard or flag))
                    for part in (node.orelse if kind is ast.If else (node.orelse,)):
                        push((part, guard or (flag[0], not flag[1])))
                    continue
            for child in child_nodes(node):
                push((child, guard))
    return {f"@guard:{m}": (guards.pop() if len(guards) == 1 else UNGUARDED) for m, guards in found.items()}


class DispatchMixin:
    """``dead_arm`` (a part of :class:`~.dataflow.Scope`)."""

    def dead_arm(self, test: ast.expr) -> bool:
        """``test`` (``self.inplace``, ``not self.inplace``, or an ``and`` with one such part) is false whenever this
        method runs: the only calls of it the class and its bases make are under the opposite test
        (:func:`dispatch_guards`)."""
        name = getattr(self.func, "name", None)
        if not name or not self.cls_qual or self.ctx is None or not self.self_name:
            return False
        if isinstance(test, ast.BoolOp):  # `self.inplace and hasattr(x, "copy_")`: false when one part is
            parts = [self.dead_arm(v) for v in test.values]
            return any(parts) if isinstance(test.op, ast.And) else all(parts)
        flag = _flag(test, self.self_name)
        if flag is None:
            return False
        key = ("dispatch", name)
        if key not in self.local_cond_cache:
            self.local_cond_cache[key] = self.ctx.attribute_builder(self.cls_qual, f"@guard:{name}")
        guard = self.local_cond_cache[key]
        if not guard or guard.endswith(UNGUARDED):
            return False
        _, attr, truth = guard.rsplit(".", 2)
        return attr == flag[0] and (truth == "1") != flag[1]
