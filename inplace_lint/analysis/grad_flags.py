"""Flags true only with grad off, across calls (issue 20, "grad mode that the code sets"): OpenFold-style
code computes ``inplace_safe = not (self.training or torch.is_grad_enabled())`` once and passes it down
through submodule ``forward``s to branches that write in place. Within a function the walk follows such
a flag itself (:func:`.grad.grad_off_arms`); here a parameter is decided by every in-project call of its
function (:class:`~.summaries.CallSite`'s ``grad_off_args``, ``constants``, ``passed``, ``guards``)."""
from __future__ import annotations

from typing import Dict

from . import conditions
from .summaries import CallSite


def flag_guards(when, flag_args) -> bool:
    """A path that needs parameter ``i`` true (``when``: :mod:`.conditions`), where the call passes a flag true
    only with grad off for ``i`` (``flag_args``): the write on it runs with grad off."""
    return bool(when) and bool(flag_args) and any(i in flag_args for i, _ in conditions.needs_true(when))


def flag_args(calls_to, grad_off: Dict[str, bool], exported, site: CallSite) -> frozenset:
    """The parameters ``site`` passes a flag true only with grad off: a local one (``grad_off_args``), or the
    caller's own parameter that is one at every call of the caller (``_add(y, x, inplace_safe)``)."""
    return site.grad_off_args | frozenset(i for i, j, d in site.passed
                                          if flag_grad_off(calls_to, grad_off, exported, site.caller, j, d))


def enclosing_off(grad_off: Dict[str, bool], qual: str) -> bool:
    """A function, or a function it is nested in, runs with grad off."""
    while qual:
        if grad_off.get(qual):
            return True
        qual = qual.rpartition(".")[0]
    return False


def guarded_off(calls_to, grad_off: Dict[str, bool], exported, site: CallSite) -> bool:
    """``site`` runs only when one of its caller's parameters is true (``if inplace_safe: self.block(z)``),
    and that one is true only with grad off at every call of the caller."""
    return any(flag_grad_off(calls_to, grad_off, exported, site.caller, g, d) for g, d in site.guards)


def flag_grad_off(calls_to, grad_off: Dict[str, bool], exported, qual: str, index: int, default: tuple,
                  depth: int = 0) -> bool:
    """Parameter ``index`` of ``qual`` (literal default ``default``: ``(value,)`` or ``()``) is true only with
    grad off: every in-project call passes a flag true only with grad off (``not torch.is_grad_enabled()``
    or a name bound to one), a false literal, or its own such parameter; leaves it at a false default; or
    runs with grad off itself. ``if inplace_safe:`` then runs its body with grad off. With no in-project
    call, or for a function of the package's API (``exported``), its callers are unknown: False. ``~index``:
    the parameter is *false* only with grad off or in eval mode (``train_mode=False`` passed only from the
    ``else`` of ``if self.training:``, a call recorded as grad-off: :attr:`.summaries.CallSite.no_grad`)."""
    negated = index < 0
    index = ~index if negated else index
    sites = calls_to.get(qual, [])
    if not sites or depth > 8 or qual in exported or qual.rpartition(".")[0] in exported:
        return False  # (a method of an exported class: the package's users call it too)
    for site in sites:
        if site.bound is not None and not site.bound and not site.args:
            return False  # handed to other code (`map(f, xs)`, a registry): its calls are unknown
        if site.no_grad or enclosing_off(grad_off, site.caller) or index in site.grad_off_args and not negated:
            continue
        if site.guards and any(flag_grad_off(calls_to, grad_off, exported, site.caller, g, d, depth + 1)
                               for g, d in site.guards):
            continue
        constants = dict(site.constants)
        passed = {i: (j, d) for i, j, d in site.passed}
        if index in constants:
            if bool(constants[index]) != negated:
                return False
        elif index in passed:
            j, d = passed[index]
            if not flag_grad_off(calls_to, grad_off, exported, site.caller, ~j if negated else j, d, depth + 1):
                return False
        elif site.bound is None or index in site.bound or not default or bool(default[0]) != negated:
            return False  # unknown, or left at a default that is not false (not true, ``~index``)
    return True


def only_own_calls(qual: str, sites) -> bool:
    """``qual`` is a ``forward`` whose in-project calls all come from its own class's methods (``predict`` runs
    ``self.forward(x)`` under ``torch.no_grad()``): ``nn.Module.__call__`` runs it wherever the module is called, by
    code no call site shows, so those calls do not make it grad-off (proteinnpt's ``forward_with_uncertainty``)."""
    if not qual.endswith(".forward"):
        return False
    cls = qual[: -len(".forward")] + "."
    return all(s.caller.startswith(cls) for s in sites)
