"""``with``, ``try`` and ``match`` statements (a part of :class:`~.dataflow.Scope`): the grad mode a ``with``
block sets (``no_grad``, ``enable_grad``, a context a parameter chooses), and what each arm of a ``try`` or
``match`` leaves bound, flags true only with grad off included (:attr:`~.dataflow.Scope.grad_off_flags`)."""
from __future__ import annotations

import ast
from typing import Optional

from . import grad
from .astutil import last_name
from .conditions import negate
from .env import EMPTY, merge
from .local_conds import copy_reach, merge_reach
from .names import import_bindings

#: what a handler catches when the import it guards fails
_IMPORT_FAILURES = frozenset({"ImportError", "ModuleNotFoundError", "Exception", "BaseException"})


class BlocksMixin:
    """``stmt_With``, ``stmt_Try``, ``stmt_Match`` and the grad mode of contexts."""

    def stmt_Try(self, node) -> None:
        before, reach_before = dict(self.env), copy_reach(self.reach_conds)
        # (`if s == "a": raise` in the body states `s != "a"` for the rest of the body only: a handler may catch it)
        conds = (self.path_conds, self.local_conds)
        flags = set(self.grad_off_flags)
        points = self.run_try_body(node.body)  # (where a handler may start: before a statement that may raise)
        flags &= self.grad_off_flags  # a handler may run after any part of the body: flags on every path
        # (with a `finally`, every path runs it first: none is gone from the join it runs on)
        gone = [self.leaves_block(node.body) is not None and not node.finalbody] if not node.orelse else []
        self.run_body(node.orelse)
        if node.orelse:
            gone = [self.leaves_block(node.orelse) is not None and not node.finalbody]
        after = set(flags)
        branches, reaches = [self.env], [self.reach_conds]
        entry = [before] + [env for env, _ in points]
        for handler in node.handlers:
            self.env = merge(entry, self.big)
            self.reach_conds = merge_reach([reach_before] + [reach for _, reach in points], entry)
            self.grad_off_flags = set(flags)
            self.path_conds, self.local_conds = conds
            if handler.name:
                self.env[handler.name] = EMPTY
                self.bindings.append((handler.name, EMPTY))
                self.new_ident(handler.name, None)
            self.run_body(handler.body)
            gone.append(self.leaves_block(handler.body) is not None and not node.finalbody)
            branches.append(self.env)
            reaches.append(self.reach_conds)
            after &= self.grad_off_flags
        live = [i for i, g in enumerate(gone) if not g] or range(len(branches))  # (`break`, `return`: elsewhere)
        self.reach_conds = merge_reach([reaches[i] for i in live], [branches[i] for i in live])
        self.env = merge([branches[i] for i in live], self.big)
        self.grad_off_flags = after
        self.path_conds, self.local_conds = conds  # (`finally` runs on the paths that returned too)
        self._imports_win(node)
        self.run_body(node.finalbody)

    def _imports_win(self, node) -> None:
        """``try: from torch import amin, amax`` / ``except ImportError: def amin(...): ...``: the fallback runs only where
        the import fails (an older torch); the names stay the imported ones, as the module index has them
        (torchflint's ``invert_``, set CA: the fallback ``amin`` hid that ``torch.amin`` saves its input)."""
        if not any(h.type is None or last_name(h.type) in _IMPORT_FAILURES or isinstance(h.type, ast.Tuple) and any(
                last_name(e) in _IMPORT_FAILURES for e in h.type.elts) for h in node.handlers) or node.orelse \
                or not all(isinstance(sub, ast.ImportFrom) and (sub.module or "").split(".")[0] == "torch"
                           and not sub.level for sub in node.body):
            return  # (only a body of imports from torch, which is installed: another import may be what fails, and an
            # `else:` runs after the imports)
        for sub in node.body:
            for name, target in import_bindings(sub, self.package).items():
                self.names[name] = target
                self.local_funcs.pop(name, None)

    stmt_TryStar = stmt_Try

    def stmt_With(self, node) -> None:
        if any(isinstance(i.context_expr, ast.Call) and last_name(i.context_expr.func) in grad.GRAD_CONTEXTS
               for i in node.items):
            # a grad-mode block: a flag made outside says nothing of the grad inside, and one made inside says
            # nothing after it
            flags, mark = self.grad_off_flags, len(self.bindings)
            self.grad_off_flags = set()
            try:
                self._with(node)
            finally:
                self.grad_off_flags = flags - {k for k, _ in self.bindings[mark:]}
            return
        self._with(node)

    def _with(self, node) -> None:
        conds = (self.path_conds, self.local_conds)
        try:
            self._with_body(node)
        finally:
            # (`with suppress(...): if s == "a": raise`: what follows may run with `s == "a"`)
            self.path_conds, self.local_conds = conds

    def _with_body(self, node) -> None:
        mode = None
        grad_cond = None
        for item in node.items:
            self.eval(item.context_expr)
            context = item.context_expr
            if isinstance(context, ast.Name) and context.id in self.grad_contexts:
                context = self.grad_contexts[context.id]  # ctx = torch.no_grad() if no_grad else nullcontext()
            m = self.grad_mode_of(context)
            mode = m if m is not None else mode
            if m is None and isinstance(context, ast.IfExp):
                grad_cond = self._conditional_grad_off(context) or grad_cond
            if item.optional_vars is not None:
                self.assign(item.optional_vars, None, EMPTY)
        if mode is None and grad_cond is not None and self.grad_cond is None:
            # `with torch.no_grad() if no_grad else nullcontext():` on a parameter: walked with grad as it is
            # here; the findings carry the condition, and the project pass drops them where every call makes
            # it hold (Project.findings)
            self.grad_cond = grad_cond
            self.grad_cond_spans.append((node.lineno, node.end_lineno or node.lineno, grad_cond))
            try:
                self.run_body(node.body)
            finally:
                self.grad_cond = None
            return
        if mode is None:
            self.run_body(node.body)
            return
        saved = (self.no_grad, self.nograd_bound, self.eval_branch, self.grad_off_arm)
        self.no_grad = not mode
        self.grad_off_block = self.grad_off_block or not mode
        self.nograd_bound = set() if self.no_grad else self.nograd_bound
        if mode:
            # `with torch.enable_grad():` inside a branch taken with grad off (or in eval mode only): grad is on
            # in the block, whatever the branch said
            self.eval_branch = self.grad_off_arm = False
        try:
            self.run_body(node.body)
        finally:
            self.no_grad, self.nograd_bound, self.eval_branch, self.grad_off_arm = saved

    stmt_AsyncWith = stmt_With

    def stmt_Match(self, node) -> None:
        self.eval(node.subject)
        before, reach_before = dict(self.env), copy_reach(self.reach_conds)
        flags = set(self.grad_off_flags)
        after = set(flags)
        branches, reaches = [], []
        conds = (self.path_conds, self.local_conds)
        for case in node.cases:
            self.env = dict(before)
            self.reach_conds = copy_reach(reach_before)
            self.grad_off_flags = set(flags)
            self.path_conds, self.local_conds = conds
            for captured in _captures(case.pattern):
                self.new_ident(captured, None)  # `case str() as s`, `case {"k": s}`: `s` is bound again
            if case.guard is not None:
                self.eval(case.guard)
            self.run_body(case.body)
            branches.append(self.env)
            reaches.append(self.reach_conds)
            after &= self.grad_off_flags
        self.reach_conds = merge_reach(reaches + [reach_before], branches + [before])
        self.path_conds, self.local_conds = conds
        self.env = merge(branches + [before], self.big)
        self.grad_off_flags = after

    def _conditional_grad_off(self, node: ast.IfExp) -> Optional[tuple]:
        """``torch.no_grad() if flag else nullcontext()`` (either order) on a parameter ``flag``: the condition
        under which grad is off; None otherwise."""
        cond = self.param_condition(node.test)
        if cond is None:
            return None
        body, orelse = self.grad_mode_of(node.body), self.grad_mode_of(node.orelse)
        if body is False and orelse is None:
            return cond
        if orelse is False and body is None:
            return negate(cond)
        return None

    def grad_mode_of(self, node: ast.expr) -> Optional[bool]:
        """The grad mode a context/decorator sets; ``report-in-no-grad`` treats all code as grad-enabled."""
        return None if self.settings.report_in_no_grad else grad.grad_mode_of(node)


def _captures(pattern: ast.AST):
    """The names a ``match`` pattern binds (``case str() as s``, ``case [a, *rest]``, ``case {"k": v, **more}``)."""
    for node in ast.walk(pattern):
        name = getattr(node, "name", None) if isinstance(node, (ast.MatchAs, ast.MatchStar)) else \
            getattr(node, "rest", None) if isinstance(node, ast.MatchMapping) else None
        if name:
            yield name
