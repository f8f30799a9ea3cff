"""Import insertion: the names a rewrite uses (``out_of_place``, ``scale_logits``, ``DTensor``) and where
their imports go, as libcst's ``AddImportsVisitor`` places them."""
from __future__ import annotations

import ast
import re
from typing import Dict, List, Optional, Set, Tuple

from .. import textpos
from ..findings import Edit
from .edits import join_from_imports

RUNTIME_MODULE = "inplace_lint.runtime"
DTENSOR_MODULE = "torch.distributed.tensor"
#: where torch before 2.5 keeps ``DTensor`` (2.0 to 2.4; later versions keep it as an alias)
DTENSOR_OLD_MODULE = "torch.distributed._tensor"
#: modules whose ``DTensor`` is the real class (an existing import of it is reused)
DTENSOR_MODULES = (DTENSOR_MODULE, DTENSOR_OLD_MODULE)


def dtensor_import_form(torch_floor: Optional[Tuple[int, int]]) -> str:
    """How the inline style gets ``DTensor`` on a project whose oldest torch is ``torch_floor``:
    ``"none"`` below 2.0 (no DTensor exists: no guard is written), ``"public"`` from 2.5
    (``from torch.distributed.tensor import DTensor``), else ``"guarded"`` (2.0 to 2.4, or a floor the
    project does not state): ``torch.distributed.tensor`` with a fallback to ``torch.distributed._tensor``
    on ``ImportError`` (docs/pytorch-facts.md#dtensor-module)."""
    if torch_floor is None:
        return "guarded"
    if torch_floor < (2, 0):
        return "none"
    return "public" if torch_floor >= (2, 5) else "guarded"


class ImportNames:
    """The names the rewrite uses for ``out_of_place``, ``scale_logits`` and ``DTensor`` in one file: an
    existing top-level import of the real object (also one inside a top-level ``try``, as in
    ``try: from torch.distributed.tensor import DTensor`` / ``except ImportError: from
    torch.distributed._tensor import DTensor``) is reused; otherwise the plain name when the file never
    uses it, else a fresh one (``DTensor = None`` must not turn the guard into a TypeError).

    ``dtensor_form`` (:func:`dtensor_import_form`) says how a new ``DTensor`` import is written; ``unit``
    is the file's indentation step (for the guarded import's ``try`` block)."""

    def __init__(self, source: str, tree: ast.Module, dtensor_form: str = "guarded", unit: str = "    ") -> None:
        self.source = source
        self.tree = tree
        self.dtensor_form = dtensor_form
        self.unit = unit
        self._cache: Dict[Tuple[str, str], Tuple[str, bool]] = {}
        self._words: Optional[Set[str]] = None

    def get(self, module: str, name: str) -> Tuple[str, bool]:
        """(local name, already imported)."""
        key = (module, name)
        if key not in self._cache:
            self._cache[key] = self._decide(module, name)
        return self._cache[key]

    def temp(self, target: str, index: int) -> str:
        """The name of the ``index``-th (from 1) temporary that holds an operand of a write to ``target``
        (``_logits_operand``, ``_logits_operand2``): a name the file never uses, the same in every path."""
        if self._words is None:
            self._words = set(re.findall(r"\w+", self.source))
        base = f"_{target}_operand"
        candidates = [base + (str(index) if index > 1 else "")] + [f"{base}{index}_{i}" for i in range(2, 100)]
        return next(c for c in candidates if c not in self._words)

    def _top_level_imports(self):
        for stmt in self.tree.body:
            if isinstance(stmt, ast.ImportFrom):
                yield stmt
            elif isinstance(stmt, ast.Try):
                for inner in stmt.body + [s for h in stmt.handlers for s in h.body]:
                    if isinstance(inner, ast.ImportFrom):
                        yield inner

    def _decide(self, module: str, name: str) -> Tuple[str, bool]:
        modules = DTENSOR_MODULES if module == DTENSOR_MODULE else (module,)
        bound: Dict[str, int] = {}
        found: Optional[str] = None
        for stmt in self._top_level_imports():
            if stmt.module in modules and stmt.level == 0:
                for alias in stmt.names:
                    if alias.name == name:
                        found = alias.asname or alias.name
        if found is not None:
            for node in ast.walk(self.tree):
                if isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)) and node.id == found:
                    bound[found] = bound.get(found, 0) + 1
                elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and node.name == found:
                    bound[found] = bound.get(found, 0) + 1
                elif isinstance(node, ast.arg) and node.arg == found:
                    bound[found] = bound.get(found, 0) + 1
                elif isinstance(node, (ast.Import, ast.ImportFrom)):
                    for alias in node.names:
                        if (alias.asname or alias.name.split(".")[0]) == found and not (
                                isinstance(node, ast.ImportFrom) and node.module in modules and alias.name == name):
                            bound[found] = bound.get(found, 0) + 1
            if not bound.get(found):
                return found, True
        candidates = [name] + [f"_{name}"] + [f"_{name}{i}" for i in range(2, 100)]
        for candidate in candidates:
            if not re.search(rf"\b{re.escape(candidate)}\b", self.source):
                return candidate, False
        return f"_{name}_inplace_lint", False  # pragma: no cover


class Imports:
    """Import insertions, placed as libcst's ``AddImportsVisitor`` places them: after the first block
    of imports at the top (after the docstring), with a blank line before the next statement."""

    def __init__(self, tree: ast.Module, lines: List[str], newline: str, names: ImportNames) -> None:
        self.newline = newline
        self.names = names
        body = tree.body
        start = 1 if body and _is_docstring_or_strict(body[0]) else 0
        index = start
        while index < len(body) and isinstance(body[index], (ast.Import, ast.ImportFrom)) and \
                not _shares_line(body, index):
            index += 1
        torch_at = next((i for i, stmt in enumerate(body) if _imports_torch(stmt)), None)
        if torch_at is not None and torch_at >= index:
            # `import os; os.environ["OMP_NUM_THREADS"] = "1"; import torch`: what runs before the module's own
            # `import torch` must still run first (the inserted imports import torch)
            index = torch_at + 1
            while index < len(body) and isinstance(body[index], (ast.Import, ast.ImportFrom)) and \
                    not _shares_line(body, index):
                index += 1
        self.lead = ""
        if index == 0:
            self.line = _first_line(body[0]) if body else len(lines) + 1
            self.sep = newline if body else ""
        else:
            self.line = (body[index - 1].end_lineno or body[index - 1].lineno) + 1
            if index < len(body):
                next_line = textpos.line_text(lines, self.line)
                starts_next = _first_line(body[index]) == self.line
                self.sep = newline if starts_next or next_line.lstrip().startswith("#") else ""
            else:
                self.sep = ""
        self.col = 0
        if self.line > len(lines) and lines and not lines[-1].endswith(("\n", "\r")):
            self.line, self.col = len(lines), len(textpos.line_text(lines, len(lines)))
            self.lead = newline

    def edit(self, needed: Set[Tuple[str, str]]) -> Optional[Edit]:
        statements = []
        for module, name in sorted(needed):
            local, present = self.names.get(module, name)
            if present:
                continue
            alias = f" as {local}" if local != name else ""
            if module == DTENSOR_MODULE and self.names.dtensor_form == "guarded":
                # torch 2.0 to 2.4 keep DTensor in torch.distributed._tensor (docs/pytorch-facts.md#dtensor-module)
                unit, nl = self.names.unit, self.newline
                statements.append(f"try:{nl}{unit}from {DTENSOR_MODULE} import {name}{alias}{nl}"
                                  f"except ImportError:  # torch < 2.5{nl}"
                                  f"{unit}from {DTENSOR_OLD_MODULE} import {name}{alias}")
                continue
            statements.append(f"from {module} import {name}{alias}")
        if not statements:
            return None
        content = self.lead + self.newline.join(join_from_imports(statements)) + ("" if self.lead else self.newline) + self.sep
        return Edit(self.line, self.col, self.line, self.col, content)


def _imports_torch(stmt: ast.stmt) -> bool:
    """A top-level statement that imports torch (``import torch``, ``from torch import nn``, in a ``try`` too)."""
    return any(isinstance(n, ast.Import) and any(a.name == "torch" or a.name.startswith("torch.") for a in n.names)
               or isinstance(n, ast.ImportFrom) and not n.level and n.module is not None
               and (n.module == "torch" or n.module.startswith("torch.")) for n in ast.walk(stmt)
               if isinstance(n, (ast.Import, ast.ImportFrom)))


def _is_docstring_or_strict(stmt: ast.stmt) -> bool:
    if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant) and isinstance(stmt.value.value, str):
        return True
    return isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and \
        isinstance(stmt.targets[0], ast.Name) and stmt.targets[0].id == "__strict__"


def _shares_line(body: List[ast.stmt], index: int) -> bool:
    stmt = body[index]
    prev = body[index - 1] if index else None
    nxt = body[index + 1] if index + 1 < len(body) else None
    return (prev is not None and (prev.end_lineno or prev.lineno) == stmt.lineno) or \
        (nxt is not None and nxt.lineno == (stmt.end_lineno or stmt.lineno))


def _first_line(stmt: ast.stmt) -> int:
    decorators = getattr(stmt, "decorator_list", None) or []
    return min([stmt.lineno] + [d.lineno for d in decorators])



def imports_runtime(source: str) -> bool:
    return re.search(rf"^\s*from\s+{re.escape(RUNTIME_MODULE)}\s+import\b", source, re.MULTILINE) is not None

