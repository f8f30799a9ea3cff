"""One storage, one version counter: which names an in-place write reaches (a part of :class:`~.dataflow.Scope`).

A view shares its base's storage and version counter, and so does every other view of that base
(docs/pytorch-facts.md#shared-version-counter). An op that saved one of them for backward (an input of
``x[0] @ w``, the output of ``torch.relu_(x[0])`` or ``nn.ReLU(inplace=True)(x.real)``) is failed by a later
in-place write to any of them: the base, the view itself, or a sibling view (``x[1]``, ``x.imag``). The walk
records which plain names view which (:meth:`StorageMixin.note_view`); a saved mark is held on all of them
when the base is proven a tensor, and one level each way otherwise (a list's items are separate tensors).
"""
from __future__ import annotations

import ast
from typing import List, Optional

from ..torch_facts import ops
from .astutil import dotted_name
from .env import EMPTY, cap
from .expressions import holder_of, is_basic_index, key_of
from .names import qualify_dotted
from .summaries import param_index


def _view_attribute(node: ast.expr) -> bool:
    """``x.real``, ``x.T``, ``x.mT``: an attribute that is a view of ``x`` (not ``.data``: its own version
    counter, docs/pytorch-facts.md#detach-ends-tracking)."""
    return isinstance(node, ast.Attribute) and node.attr in ops.VIEW_ATTRIBUTES and node.attr != "data"


class StorageMixin:
    """The names that share one storage and version counter (a part of :class:`~.dataflow.Scope`)."""

    def note_view(self, key: str, value: Optional[ast.expr]) -> None:
        """``key`` was just bound to ``value``: a view of another plain name (basic slicing with slices and
        constants, or a view method), or not (then what ``key`` viewed, and what viewed ``key``, is forgotten)."""
        for name in [n for n, base in self.view_bases.items() if base == key or n == key]:
            del self.view_bases[name]
        node = value
        while True:
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr != "detach" \
                    and (node.func.attr in ops.VIEW_METHODS or node.func.attr in ("real", "imag")):
                if self._torch_function(node.func):  # `torch.select(z, 0, 0)`, `torch.real(z)`: a view of `z`
                    if not node.args:
                        break
                    node = node.args[0]
                elif node.func.attr in ops.VIEW_METHODS:
                    node = node.func.value
                else:
                    break
            elif isinstance(node, ast.Subscript) and is_basic_index(node.slice, self.known_ints()) \
                    or _view_attribute(node):
                node = node.value
            else:
                break
        if node is not value and isinstance(node, ast.Name) and node.id != key:
            self.view_bases[key] = node.id

    def _torch_function(self, func: ast.Attribute) -> bool:
        """``func`` names a function of torch's namespace (``torch.select``, ``th.real`` with ``import torch as th``)."""
        head = dotted_name(func.value)
        return head is not None and qualify_dotted(head, self.names, self.is_local_name)[0] == "torch"

    def proven_tensor(self, name: str) -> bool:
        """Everything ``name`` may hold is a tensor made here (not a parameter's placeholder, not a list)."""
        origins = self.env.get(name)
        return bool(origins) and all(o.is_tensor and o.certain_tensor and param_index(o) is None for o in origins)

    def _view_root(self, name: str) -> str:
        """The base ``name`` views, followed up to a name that views nothing (``name`` itself if it views nothing)."""
        root, seen = name, {name}
        while root in self.view_bases and self.view_bases[root] not in seen:
            root = self.view_bases[root]
            seen.add(root)
        return root

    def sharing_storage(self, key: str) -> List[str]:
        """``key`` and the names that share its storage: when the base it views (followed up) is proven a tensor,
        the base and every name that views it, however deep; otherwise the name ``key`` views and the names
        that view ``key``, one level each way."""
        root = self._view_root(key)
        if not self.proven_tensor(root):
            out = [key]
            if key in self.view_bases:
                out.append(self.view_bases[key])
            out.extend(n for n, base in self.view_bases.items() if base == key)
            return out
        out = [key] + ([root] if root != key else [])
        out.extend(name for name in self.view_bases if name not in out and self._view_root(name) == root)
        return out

    def storage_key(self, target: ast.expr) -> Optional[str]:
        """The name that holds what an in-place write to ``target`` wrote: ``h`` for ``h``, ``h[:, :2]``,
        ``h.view(-1)``, ``h.real`` or ``h.T`` (only a tensor has them, and they are views), and for ``h[0]`` when
        ``h`` is proven a tensor (else ``h[0]`` may be a list's item, held by its own key)."""
        node, attribute = target, False
        while isinstance(node, ast.Subscript) and is_basic_index(node.slice) \
                or _view_attribute(node):
            attribute = attribute or isinstance(node, ast.Attribute)
            node = node.value
        base = dotted_name(node) if node is not target else None
        if base is not None and base != self.self_name and (attribute or self.proven_tensor(base)):
            return base
        return key_of(target) or holder_of(target)

    def hold_saved_output(self, target: ast.expr, saved: frozenset) -> None:
        """An in-place op that saves its output (``relu_``, ``sigmoid_``, ``nn.ReLU(inplace=True)``) wrote
        ``target``: its storage now holds that output, under every name that shares it."""
        key = self.storage_key(target)
        if key is None:
            return
        self.hold(key, cap(self.env.get(key, EMPTY) | saved))
        for name in self.sharing_storage(key)[1:]:
            held = self.env.get(name)
            if held and any(o.is_tensor for o in held):
                self.hold(name, cap(held | saved))


def whole_read(node: ast.expr, counters=frozenset()) -> Optional[str]:
    """The name ``node`` reads whole: the name itself, or the base of basic indexing of it (``out[..., 0]``, a view:
    :func:`basic_view`); None for anything else."""
    if not (isinstance(node, ast.Name) or isinstance(node, ast.Subscript) and basic_view(node, counters)):
        return None
    while isinstance(node, ast.Subscript):
        node = node.value
    return node.id


def basic_view(node: ast.expr, counters=frozenset()) -> bool:
    """``node`` is a name, or basic indexing of one (``qu[..., 0]``, ``x[:, 1:]``, or with ``counters``, names a
    ``for ... in range(...)`` binds: ``qu[..., i]``): surely a view of it, whatever the walk knows of the names
    around (another name used as an index may be a mask: a copy)."""
    while isinstance(node, ast.Subscript):
        parts = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
        if not all(is_basic_index(p, counters) for p in parts):
            return False
        node = node.value
    return isinstance(node, ast.Name)
