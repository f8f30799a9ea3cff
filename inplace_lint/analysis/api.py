"""Analyze one module or one source text: the single-file entry point (a module is a project of one file)."""
from __future__ import annotations

import ast
import pathlib
from typing import List, Optional

from ..config import DEFAULT_SETTINGS, Settings
from ..findings import Finding
from .project import Project
from .relevance import no_finding_possible, scan


def analyze(tree: ast.Module, settings: Settings = DEFAULT_SETTINGS, path: Optional[str] = None,
            plan_fixes: bool = True, source: Optional[str] = None, bodies_on_demand: bool = False) -> List[Finding]:
    """Return the findings in ``tree``, sorted by position.

    ``tree`` is what ``ast.parse`` returns (flake8 hands plugins the same). Calls between the
    functions of this one module are followed (a module is a project of one file); for the
    rest of the project see :class:`inplace_lint.analysis.project.Project`. Positions are
    ``ast``'s: 1-based lines, 0-based columns. ``plan_fixes=False``: the same findings, each with
    ``fix=None`` (a surface that shows no fixes, such as flake8, skips their planning). ``source``: the text
    ``tree`` was parsed from, when the caller has it (it lets the index test the text before walking the tree).
    ``bodies_on_demand``: walk only the function bodies a finding can come from, the others when a caller asks for
    their summary (:mod:`.relevance`; the same findings, measured on every file of the labelled sets).
    """
    return analyze_single(tree, settings, path or "<unknown>", plan_fixes, source, bodies_on_demand)


def analyze_source(source: str, settings: Settings = DEFAULT_SETTINGS, filename: str = "<unknown>") -> List[Finding]:
    """Parse ``source`` and analyze it. Raises ``SyntaxError`` (or ``ValueError`` for NUL bytes)."""
    return analyze(ast.parse(source, filename=filename), settings, filename)


def analyze_single(tree: ast.Module, settings: Settings, path: str, plan_fixes: bool = True,
                   source: Optional[str] = None, bodies_on_demand: bool = False) -> List[Finding]:
    """One module as a project of its own: calls between its functions are followed. With ``bodies_on_demand``, a
    file with no write syntax where a finding could stand is not walked at all (:func:`.relevance.no_finding_possible`)."""
    needed, top_writes = scan(tree) if bodies_on_demand else (None, True)
    if no_finding_possible(needed, top_writes):
        return []
    project = Project(settings)
    project.plan_fixes = plan_fixes
    project.bodies_on_demand = bodies_on_demand
    if bodies_on_demand:
        project.needed[path] = needed
    project.lean = False  # the caller holds the tree: never parse it again
    module = pathlib.Path(path).stem if path and not path.startswith("<") else "__main__"
    project.add_file(path, source=source, tree=tree, module=module.replace("-", "_") or "__main__", digest="")
    project.build()
    return project.findings(path)
