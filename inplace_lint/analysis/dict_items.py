"""Items of a local dict stored under a key that is not a constant (``mapped[ntype] = self.act(self.enc[ntype](h))`` in
a loop over node types): any later read of one of its items (``mapped[etype[0]]``, ``mapped["a"]``) may be what was
stored there. A part of :class:`~.dataflow.Scope`. Items under constant keys are plain environment keys
(``mapped['a']``, :func:`.expressions.key_of`); these are held under ``mapped[*]``."""
from __future__ import annotations

import ast
from typing import Optional

from .astutil import walk_ast
from .env import cap

#: the environment key suffix of a dict's items stored under keys that are not constants
ANY_KEY = "[*]"


def _dict_display(value: Optional[ast.expr]) -> bool:
    """``{}``, ``{k: v}``, ``dict()`` or ``dict(a=1)``: a new dict."""
    return isinstance(value, ast.Dict) or isinstance(value, ast.Call) and isinstance(value.func, ast.Name) \
        and value.func.id == "dict" and not value.args


class DictItemsMixin:
    """A local dict's items stored under computed keys (a part of :class:`~.dataflow.Scope`)."""

    def local_dict(self, name: str) -> bool:
        """``name`` is bound in this function only by ``=`` to new dicts (``mapped = {}``, ``dict()``), never to
        anything else, and is no parameter: its items are what this function stores."""
        values = self._bindings().get(name)
        return bool(values) and name not in self.params and all(_dict_display(v) for v in values)

    def store_any_key(self, target: ast.Subscript, value: frozenset, value_node: Optional[ast.expr] = None) -> None:
        """``mapped[t] = v`` with a key that is not a constant, into a local dict: ``v`` joins what its items may
        hold (``mapped[*]``; each pass of a loop adds its own). A value computed from an item of the same dict
        (``mapped[t] = mapped[t].clone()``, ``= self.norm(mapped[t])``) replaces them: the items are transformed."""
        base = target.value
        if not (isinstance(base, ast.Name) and self.key_of(target) is None and self.local_dict(base.id)):
            return
        key = base.id + ANY_KEY
        transformed = value_node is not None and any(
            isinstance(n, ast.Subscript) and isinstance(n.value, ast.Name) and n.value.id == base.id
            for n in walk_ast(value_node))
        if transformed:
            self.bind_name(key, value)
        elif value:
            self.bind_name(key, cap(set(self.env.get(key) or ()) | set(value)))

    def any_key_item(self, node: ast.Subscript) -> Optional[frozenset]:
        """What a read ``mapped[k]`` of a local dict may give when items were stored under computed keys: those,
        and what was stored under the same constant key; None when none was stored so."""
        if not (isinstance(node.value, ast.Name) and isinstance(node.ctx, ast.Load)):
            return None
        held = self.env.get(node.value.id + ANY_KEY)
        if not held:
            return None
        return cap(set(held) | set(self.env.get(self.key_of(node) or "") or ()))
