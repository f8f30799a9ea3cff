"""Names resolved through imports: is ``Fn.relu_`` torch's, is ``np.exp`` numpy's?

The interpreter keeps, per scope, a map from each imported local name to what it
names (``{"Fn": "torch.nn.functional", "relu_": "torch.nn.functional.relu_",
"np": "numpy"}``), filled by ``import`` / ``from ... import`` statements as they
are walked (module level first, so functions see the module's imports). A dotted
expression is *qualified* by replacing its head with what the head was imported as.

What it guesses: a head that no import binds and no local name shadows is taken
literally, so snippets without imports (``torch.relu_(x)``, ``F.relu(x, inplace=True)``)
keep working; ``F`` and ``nn.functional`` are then read as ``torch.nn.functional``.
"""
from __future__ import annotations

import ast
import re
from typing import Dict, Optional, Tuple

from .astutil import dotted_name

#: namespaces whose functions take the tensor as first argument (``torch.squeeze(x, 0)``)
TORCH_NAMESPACES = frozenset({"torch", "torch.nn.functional", "torch.special", "torch.linalg", "torch.fft"})
FUNCTIONAL_NAMESPACE = "torch.nn.functional"
#: unimported names read as torch namespaces (code snippets, files that import inside functions we skip)
_UNBOUND_ALIASES = {"F": "torch.nn.functional", "nn.functional": "torch.nn.functional", "torch": "torch",
                    "Tensor": "torch.Tensor"}
#: libraries whose results are never torch tensors (numbers, numpy arrays, random values)
NON_TENSOR_LIBRARIES = frozenset({"math", "cmath", "numpy", "random", "statistics", "decimal", "fractions"})
#: the heads :func:`qualify` reads literally when no import binds them and no local shadows them: the
#: only names whose becoming local changes what an expression means (a loop's second pass relies on it)
LITERAL_HEADS = frozenset({h.split(".")[0] for h in _UNBOUND_ALIASES} | NON_TENSOR_LIBRARIES | {"functools", "partial"})


def import_bindings(node: ast.stmt, package: str = "") -> Dict[str, str]:
    """The names an ``import`` statement binds, and what each names.

    ``import torch.nn.functional as Fn`` -> ``{"Fn": "torch.nn.functional"}``;
    ``import torch.nn`` -> ``{"torch": "torch"}``; ``from .mod import f`` in package
    ``pkg`` -> ``{"f": "pkg.mod.f"}``. What binds no name of its own is kept under a key no name can be
    (``"*pkg.mod"``), so the module still counts as imported: ``from .mod import *``, ``import pkg.sub``.
    """
    out: Dict[str, str] = {}
    if isinstance(node, ast.Import):
        for alias in node.names:
            if alias.asname:
                out[alias.asname] = alias.name
            else:
                head = alias.name.split(".")[0]
                out[head] = head
                if head != alias.name:
                    out[f"*{alias.name}"] = alias.name
    elif isinstance(node, ast.ImportFrom):
        base = node.module or ""
        if node.level:
            parts = package.split(".") if package else []
            if node.level > 1:
                parts = parts[: len(parts) - (node.level - 1)] if len(parts) >= node.level - 1 else []
            base = ".".join([p for p in parts if p] + ([node.module] if node.module else []))
        for alias in node.names:
            if alias.name == "*":
                out[f"*{base}"] = base
                continue
            out[alias.asname or alias.name] = f"{base}.{alias.name}" if base else alias.name
    return out


def qualify(node: ast.AST, names: Dict[str, str], local: "LocalCheck") -> Tuple[Optional[str], bool]:
    """``(qualified name, resolved through an import)`` of a dotted expression, or ``(None, False)``.

    ``local(head)`` says whether the head is a local value (a parameter, an assigned name): such a
    head qualifies to None (``x.exp`` is a method of a value, not a module function).
    """
    return qualify_dotted(dotted_name(node), names, local)


def qualify_dotted(dotted: Optional[str], names: Dict[str, str], local: "LocalCheck") -> Tuple[Optional[str], bool]:
    """:func:`qualify` of an expression whose :func:`~.astutil.dotted_name` is ``dotted``."""
    if dotted is None:
        return None, False
    head, _, rest = dotted.partition(".")
    if head in names:
        target = names[head]
        return (f"{target}.{rest}" if rest else target), True
    if local(head):
        return None, False
    for alias, target in _UNBOUND_ALIASES.items():
        if dotted == alias or dotted.startswith(alias + "."):
            return target + dotted[len(alias):], False
    return dotted, False


class LocalCheck:  # pragma: no cover - typing helper
    def __call__(self, head: str) -> bool: ...


def is_torch(qual: Optional[str]) -> bool:
    return qual is not None and (qual == "torch" or qual.startswith("torch."))


def is_non_tensor_library(qual: Optional[str]) -> bool:
    return qual is not None and qual.split(".")[0] in NON_TENSOR_LIBRARIES


#: einops' ``rearrange`` of a tensor is ``reshape`` and ``permute`` of it: a view when the strides allow, else a copy,
#: with the input's autograd history either way (einops docs: "rearrange ... reordering, composition and decomposition
#: of axes"; its torch backend calls ``Tensor.reshape``/``permute``): what ``x.reshape(...)`` is
#: einops' ``repeat`` is that and ``expand``: an axis the output adds on its own (``"b f -> b f i"``) is a stride-0
#: view of the input, one folded into a group with another (``"b f -> b (f i)"``) makes a copy (executed on torch
#: 2.13 and einops 0.8: the first shares the input's storage, the second does not): :func:`einops_op`
EINOPS_OPS = frozenset({"einops.rearrange", "einops.einops.rearrange", "einops.repeat", "einops.einops.repeat"})


def rearranged(call: ast.Call) -> bool:
    """``rearrange(x, ...)`` of one tensor: not of a list or tuple of them (einops stacks those first: a copy)."""
    return bool(call.args) and not isinstance(call.args[0], (ast.List, ast.Tuple, ast.ListComp, ast.GeneratorExp))


def einops_op(qual: str, call: ast.Call) -> str:
    """The tensor method an einops call of :data:`EINOPS_OPS` amounts to: ``expand`` for a ``repeat`` whose pattern
    adds an axis of its own and merges no axes into a group (a stride-0 view: a write to it writes the input, every
    repeat at once; ``"b f -> (f b) i"`` copies, executed), else ``reshape``
    (a view when the strides allow, else a copy: a new axis folded into a group, ``"b f -> b (f i)"``, copies, but
    not where ``f`` is 1; a pattern that is not a literal)."""
    pattern = call.args[1] if len(call.args) > 1 else next((k.value for k in call.keywords if k.arg == "pattern"), None)
    if not qual.endswith(".repeat") or not (isinstance(pattern, ast.Constant) and isinstance(pattern.value, str)) \
            or pattern.value.count("->") != 1:
        return "reshape"
    left, right = pattern.value.split("->")
    known = set(re.findall(r"[A-Za-z_]\w*", left))
    depth, added = 0, set()  # (the depth at which each new axis stands)
    for token in re.findall(r"\(|\)|[A-Za-z_]\w*|\d+", right):
        depth += token == "(" or -(token == ")")
        if token not in ("(", ")") and token not in known and token != "1":
            added.add(depth)
    # (`"b f -> (f b) i"`: axes merged into a group, after a permute, make a copy)
    grouped = any(len(group.split()) > 1 for group in re.findall(r"\(([^()]*)\)", right))
    return "expand" if 0 in added and not grouped else "reshape"
