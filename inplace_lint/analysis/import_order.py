"""Which project files import which (:func:`imported_files`, :func:`post_order`), and imports written without
their package's name (:func:`suffix_module`)."""
from __future__ import annotations

from typing import Dict, Iterable, List, Optional, Set


def imported_files(targets: Iterable[str], path: str, by_module: Dict[str, str]) -> List[str]:
    """The project files that import targets (``pkg.mod.name``) name, by their longest prefix that is a
    project module, other than ``path`` itself, in the targets' order."""
    out = []
    for target in targets:
        parts = target.split(".")
        for cut in range(len(parts), 0, -1):
            hit = by_module.get(".".join(parts[:cut]))
            if hit is not None:
                if hit != path:
                    out.append(hit)
                break
    return out


def post_order(graph: Dict[str, List[str]]) -> List[str]:
    """Depth-first post-order of ``graph`` (file -> the files it imports), starting from each file in
    sorted order: a file after everything it imports; cycles are cut anywhere."""
    seen: Set[str] = set()
    out: List[str] = []
    for start in sorted(graph):
        if start in seen:
            continue
        seen.add(start)
        stack = [(start, iter(graph[start]))]
        while stack:
            current, children = stack[-1]
            for child in children:
                if child not in seen:
                    seen.add(child)
                    stack.append((child, iter(graph[child])))
                    break
            else:
                stack.pop()
                out.append(current)
    return out


def suffix_module(indexes: Dict[str, object], qual: str) -> Optional[str]:
    """``qual`` (``models.stochastic_model.StochasticModel``) with the in-project module it names by a tail of its
    name put in: ``torchquantlib.models.stochastic_model.StochasticModel``, when exactly one project module's name
    ends with the longest such prefix of ``qual`` (two parts at least: a package run with its own folder on
    ``sys.path`` imports ``from models.stochastic_model import ...``); the module's name less the tail is a top-level
    package (a vendored copy deeper down, ``proj.vendor.models``, is another library's); None when no prefix names
    such a module, or more than one does, or ``qual``'s head is itself a project package or module."""
    parts = qual.split(".")
    if len(parts) < 2:
        return None
    cache = getattr(suffix_module, "_cache", None)
    if cache is None or cache[0] is not indexes or cache[1] != len(indexes):
        tails: Dict[str, Set[str]] = {}
        for module in indexes:
            names = module.split(".")
            if len(names) > 2:  # (a top-level package's folder on `sys.path`, not a vendored copy deeper down)
                tails.setdefault(".".join(names[1:]), set()).add(module)
        heads = {module.split(".")[0] for module in indexes}
        cache = suffix_module._cache = (indexes, len(indexes), tails, heads)  # type: ignore[attr-defined]
    if parts[0] in cache[3]:
        return None
    for cut in range(len(parts), 1, -1):
        found = cache[2].get(".".join(parts[:cut]))
        if found:
            return ".".join([next(iter(found)), *parts[cut:]]) if len(found) == 1 else None
    return None
