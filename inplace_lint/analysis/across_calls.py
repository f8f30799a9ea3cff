"""The pass across calls (no walking): grad-off functions, parameter origins, fix safety from callers.

A function runs with grad off when declared so or when every in-project call does; a parameter takes the origins
its call sites pass (transitively); writes to parameters are matched against those and reported in the callee, naming
the call; a fix unsafe only by a parameter is safe when every call site was checked and none reads what it passed.
"""
from __future__ import annotations

import ast
import os
import pathlib
from dataclasses import replace
from typing import Dict, FrozenSet, List, Optional, Tuple

from .. import progress
from ..config import Settings
from ..findings import Finding, Origin, Related, RootKind
from ..rules import PRIORITY, Write
from . import built_arms, conditions, grad_flags, model_outputs
from .env import origin_key
from .expressions import as_tensor
from .out_calls import out_raised_first
from .reporting import match
from .saved_here import SavedHereMixin
from .refs import refers, registered, unreached, value_refs
from .summaries import (CallSite, FileResult, FunctionSummary, ModuleIndex, located, located_steps, param_index,
                        ran_without_grad, with_steps)

_MAX_INCOMING = 12


#: top-level packages that are no library's API (their functions are called by the project itself)
_NOT_AN_API = frozenset({"test", "tests", "testing", "examples", "example", "benchmarks", "benchmark", "docs",
                         "scripts", "tools"})


class AcrossCalls(SavedHereMixin):
    """The project pass over the walks' call sites and summaries (part of :class:`~.project.Project`)."""

    settings: Settings
    root: Optional[pathlib.Path]
    indexes: Dict[str, ModuleIndex]
    results: Dict[str, FileResult]
    summaries: Dict[str, FunctionSummary]
    _trees: Dict[str, ast.Module]
    _final: Optional[tuple]
    _final_memo: Optional[tuple]

    def finalize(self):
        """Grad-off functions, parameter origins and caller checks (cached until the project changes)."""
        if self._final is not None:
            return self._final
        with progress.stage("project pass (across calls)", None, unit="call site"):
            return self._finalize()

    def _finalize(self):
        calls_to: Dict[str, List[CallSite]] = {}
        all_sites: List[CallSite] = []
        for result in self.results.values():
            for site in result.calls:
                calls_to.setdefault(site.callee, []).append(site)
                all_sites.append(site)
        # what the pass reads: the call sites (in order), the functions that start grad-off, and which
        # called functions have a summary; a function nobody calls only gets its own starting value
        calls = [(path, result.calls) for path, result in self.results.items()]
        # functions of files configured to run with grad off (no-grad-paths) start grad-off too
        off_files = {q for p, r in self.results.items() if self.file_no_grad(p) for q in r.functions}
        start = frozenset(q for q, s in self.summaries.items()
                          if s.declared_no_grad or q.endswith(".__init__") or q in off_files)
        known = frozenset(q for q in calls_to if q in self.summaries)
        memo = self._final_memo
        if memo is not None and memo[1] == start and memo[2] == known and len(memo[0]) == len(calls) \
                and all(p == mp and (c is mc or c == mc) for (p, c), (mp, mc) in zip(calls, memo[0])):
            self._final = memo[3]
            self._final_memo = (calls, start, known, memo[3])
            return self._final
        # guess: no backward runs through what a constructor computes (schedules, buffers, masks), so
        # `__init__` and what only `__init__` calls count as grad-off for the autograd rules
        grad_off = {q: q in start for q in self.summaries}
        chains: Dict[str, Tuple[str, ...]] = {}

        def off(qual: str) -> bool:  # _grad_off, with each name's enclosing names split once
            chain = chains.get(qual)
            if chain is None:
                chain = chains[qual] = _enclosing(qual)
            for name in chain:
                if grad_off.get(name):
                    return True
            return False

        # the functions that can still turn grad-off (called, not grad-off yet), in the summaries' order;
        # one is looked at again only when a function its callers are (nested in) turned grad-off since
        candidates = [q for q in self.summaries if not grad_off[q] and calls_to.get(q)]
        readers: Dict[str, List[str]] = {}
        for qual in candidates:
            for s in calls_to[qual]:
                if not s.no_grad:
                    chain = chains.get(s.caller)
                    if chain is None:
                        chain = chains[s.caller] = _enclosing(s.caller)
                    for name in chain:
                        readers.setdefault(name, []).append(qual)
        dirty = set(candidates)
        # a call under `if inplace_safe:` turns grad-off with the callers of its caller, which `readers` does
        # not follow: those callees are looked at in every round
        guarded = {q for q in candidates if any(s.guards for s in calls_to[q])}
        exported = self._exported_now() if guarded else frozenset()
        for _ in range(10):
            dirty |= guarded
            changed = False
            for qual in candidates:
                if grad_off[qual] or qual not in dirty:
                    continue
                dirty.discard(qual)
                if all(s.no_grad or off(s.caller) or grad_flags.guarded_off(calls_to, grad_off, exported, s)
                       for s in calls_to[qual]) and not grad_flags.only_own_calls(qual, calls_to[qual]):
                    grad_off[qual] = changed = True
                    dirty.update(readers.get(qual, ()))
            if not changed:
                break
        #: (callee, parameter) -> origin -> (the call site that passes it, whether every call on the way
        #: from where the origin was made runs with grad off)
        incoming: Dict[Tuple[str, int], Dict[Origin, Tuple[CallSite, bool]]] = {}
        #: the arguments made from the caller's own parameters: after the first round, only they can
        #: bring anything new (an origin made in the caller is added in the first round, or its slot is full)
        derived: List[Tuple[CallSite, Dict[Origin, Tuple[CallSite, bool]], bool, List[Tuple[Origin, int]]]] = []
        for site in progress.counted(all_sites):
            here = site.no_grad or off(site.caller)
            for index, origins in site.args:
                slot = incoming.setdefault((site.callee, index), {})
                from_params = []
                for o in origins:
                    k = param_index(o)
                    if k is None:
                        if model_outputs.is_guessed_object(o):
                            continue
                        new = [(located(o, site.path), here)]  # its lines are in the caller's file
                    else:
                        from_params.append((o, k))
                        new = [(with_steps(o2, located_steps(o.steps, site.path)), here or before)
                               for o2, (_, before) in incoming.get((site.caller, k), {}).items()]
                    for n, flag in new:
                        if n not in slot and len(slot) < _MAX_INCOMING:
                            slot[n] = (site, flag)
                if from_params:
                    derived.append((site, slot, here, from_params))
        for _ in range(3):
            changed = False
            for site, slot, here, from_params in derived:
                for o, k in from_params:
                    new = [(with_steps(o2, located_steps(o.steps, site.path)), here or before)
                           for o2, (_, before) in incoming.get((site.caller, k), {}).items()]
                    for n, flag in new:
                        if n not in slot and len(slot) < _MAX_INCOMING:
                            slot[n] = (site, flag)
                            changed = True
            if not changed:
                break
        self._final = (calls_to, grad_off, incoming)
        self._final_memo = (calls, start, known, self._final)
        return self._final

    def adopt_final(self, other: "AcrossCalls") -> bool:
        """Take the project pass of ``other``, a copy of this project elsewhere (the same files, by
        module, text and result, in the same order, with the same settings; another fork checked in the
        same run), with its call sites replaced by this project's: what :meth:`finalize` would compute,
        without computing it. Returns False (nothing taken) when the two differ anywhere."""
        if other is self or self.settings != other.settings or len(self.results) != len(other.results):
            return False
        site_of: Dict[int, CallSite] = {}
        for mine, theirs in zip(self.results.values(), other.results.values()):
            if mine.module != theirs.module or mine.digest != theirs.digest or mine.deps != theirs.deps \
                    or len(mine.calls) != len(theirs.calls) or self.file_no_grad(mine.path) != other.file_no_grad(theirs.path):
                return False
            for a, b in zip(theirs.calls, mine.calls):
                if a.callee != b.callee or a.line != b.line or a.col != b.col:
                    return False
                site_of[id(a)] = b
        calls_to, grad_off, incoming = other.finalize()
        old_prefix = os.path.join(str(other.root), "") if other.root else None
        new_prefix = os.path.join(str(self.root), "") if self.root else None

        def moved(path: Optional[str]) -> Optional[str]:
            if path is None or old_prefix is None or new_prefix is None or not path.startswith(old_prefix):
                return path
            return new_prefix + path[len(old_prefix):]

        def here(o: Origin) -> Origin:
            """``o`` with the files its root and view steps name moved from ``other``'s tree to this one."""
            if o.path is None and all(st.path is None for st in o.steps):
                return o
            return replace(o, path=moved(o.path), steps=tuple(replace(st, path=moved(st.path)) if st.path else st
                                                             for st in o.steps))
        try:
            self._final = ({q: [site_of[id(s)] for s in sites] for q, sites in calls_to.items()}, grad_off,
                           {k: {here(o): (site_of[id(site)], flag) for o, (site, flag) in slot.items()}
                            for k, slot in incoming.items()})
        except KeyError:  # a call site of other's pass that is not among its results' (it changed since)
            return False
        return True

    def file_no_grad(self, path: str) -> bool:
        """The file matches the ``no-grad-paths`` setting: its code always runs with grad off."""
        from ..config import runs_without_grad

        return runs_without_grad(self.settings, path, self.root)

    _grad_off = staticmethod(grad_flags.enclosing_off)

    def findings(self, path: str) -> List[Finding]:
        """The findings of one file of the project, across calls, sorted by position."""
        result = self.results.get(path)
        if result is None:
            return []
        calls_to, grad_off, incoming = self.finalize()
        out: Dict[Tuple[int, int], Finding] = {}
        file_off = self.file_no_grad(path)
        for lf in result.findings:
            if lf.grad_rule and (file_off or self._grad_off(grad_off, lf.func)) and not self.settings.report_in_no_grad:
                continue
            if lf.grad_rule and lf.grad_cond is not None and conditions.callers_keep(calls_to, lf.func, lf.grad_cond):
                continue  # `with no_grad() if flag else nullcontext():` and every call keeps flag so
            if lf.grad_rule and not self.settings.report_in_no_grad \
                    and any(grad_flags.flag_grad_off(calls_to, grad_off, self._exported(), lf.func, g, d)
                            for g, d in lf.guards):
                continue  # `if inplace_safe:` and every call passes a flag true only with grad off
            if lf.guess_params is not None and not self.settings.report_in_no_grad \
                    and all(self._no_call_passes_grad(calls_to, lf.func, g) for g in lf.guess_params):
                continue  # saved only if one of the parameters requires grad, and no call passes one that does
            if lf.grad_rule and lf.param_rooted is not None \
                    and self._callers_decide(calls_to, incoming, lf.func, lf.param_rooted,
                                             named=lf.finding.origin.root is not RootKind.TENSOR):
                continue  # what the callers pass is known: the parameter's write below is matched against it
            if lf.grad_rule and lf.param_rooted is not None and lf.finding.origin.root is RootKind.TENSOR \
                    and self._guess_unbacked(calls_to, lf.func, lf.param_rooted):
                continue  # a guess about a plain function's parameter that no call backs: unknown, not reported
            if lf.grad_rule and lf.param_rooted is None and self._caller_guess_unbacked(lf.finding.origin, lf.func, calls_to):
                continue  # (what its annotation guesses of a parameter, written through a helper at the call)
            finding = lf.finding
            if lf.fix_if_callers is not None and lf.observed:
                checked = self._callers_checked(calls_to, lf.func, lf.observed)
                if checked:
                    finding = replace(finding, fix=lf.fix_if_callers.checked(checked))
            out[(finding.line, finding.col)] = finding
        for qual, summary in result.functions.items():
            for w in summary.writes:
                if w.via is not None or (w.line, w.col) in out:
                    continue
                given = incoming.get((qual, w.index), {})
                if (found := self._param_finding(path, w, given, grad_off, calls_to) or self.saved_here_finding(
                        path, w, qual, given, grad_off, calls_to)) is not None:
                    out[(w.line, w.col)] = found
        return sorted(out.values(), key=lambda f: (f.line, f.col, f.code))

    def _exported(self) -> FrozenSet[str]:
        """The functions and classes a top-level package's ``__init__`` imports under a public name (``from .volrend import
        render_transmittance_from_density`` in ``nerfacc/__init__.py``): the package's API, called by its users
        where no call site shows. A subpackage's ``__init__`` (``pkg.optimizer.utils``) gathers names for the
        package's own modules, and is not taken for its API."""
        final = self.finalize()
        if getattr(self, "_exported_for", None) is not final:
            self._exported_set, self._exported_for = self._exported_now(), final
        return self._exported_set

    def _exported_now(self) -> FrozenSet[str]:
        out = set()
        for index in self.indexes.values():
            if index.is_package and "." not in index.module and index.module not in _NOT_AN_API:
                for name, target in index.imports.items():
                    found = self.resolve(target) if not name.startswith("_") else None
                    if found and found[0] in ("function", "class"):
                        out.add(found[1])  # (a class: its methods are called by the users too)
        return frozenset(out)

    def _unreached_private(self, qual: str) -> bool:
        """Nothing imports, names or exports ``qual``'s private module (:func:`.refs.unreached`)."""
        return qual not in self._exported() and unreached(qual, self.indexes.values(), self._value_refs)

    def _all_grad_off(self, sites: List[CallSite]) -> bool:
        """Every one of ``sites`` runs with grad off (under ``no_grad``, or in a function that does: an
        optimizer's ``step``): what the package does with its own API is done without grad."""
        grad_off = self.finalize()[1]
        return all(s.no_grad or self._grad_off(grad_off, s.caller) for s in sites)

    def _no_call_passes_grad(self, calls_to, qual: str, index: int, seen=None) -> bool:
        """No in-project call of ``qual`` passes, for parameter ``index``, something that requires grad by
        evidence (``Origin.grad_evidence``): a guess of that parameter's grad is decided by them. A call that
        passes on its own parameter (or a guess made from one) asks that caller's calls in turn. With no
        in-project call (an entry point), or for a function of the package's API (:meth:`_exported`, which its
        users call too) unless the package itself calls it only with grad off, what kind of function it is
        decides (:meth:`runs_on_activations`): a module's ``forward`` or a free function keeps the guess; a plain
        class's method has unknown grad."""
        seen = set() if seen is None else seen
        if (qual, index) in seen or len(seen) > 8:
            return False
        seen.add((qual, index))
        sites = calls_to.get(qual, [])
        if not sites and self._unreached_private(qual):
            return True  # no caller at all, and none can import it as an API: a guess has nothing behind it
        if not sites or (qual in self._exported() and not self._all_grad_off(sites)) or self._registered(qual):
            return not self.runs_on_activations(qual)
        for site in sites:
            if (site.no_grad or self._grad_off(self.finalize()[1], site.caller)) and not site.callback \
                    and site.bound is not None:
                continue  # the callee runs with grad off at this call: it saves nothing there, whatever it is given
            if site.bound is None or site.callback:
                return False
            for i, origins in site.args:
                if i != index:
                    continue
                for o in origins:
                    if any(s.text in (".detach()", ".data") for s in o.steps):
                        continue  # `z.detach()`: kept for the write (the version counter is shared), needs no grad
                    if o.grad_evidence and param_index(o) is None:
                        return False
                    passed = param_index(o) if param_index(o) is not None else (
                        o.guess_param if o.guess_param >= 0 else None)
                    if passed is not None and not self._no_call_passes_grad(calls_to, site.caller, passed, seen):
                        return False
        return True

    def _registered(self, qual: str) -> bool:
        """``qual`` is the ``forward`` (or ``__call__``) of a class its module defines under a registry's decorator
        (``@register_criterion()``, :func:`.refs.registered_classes`): the code that builds the class from a name
        calls its instances where no call site shows, so the calls that do show (a self-test's on
        ``torch.rand(...)``: pixseg's ``DiceLoss``, set CQ) are not all its callers. Its other methods keep theirs."""
        cls, _, method = qual.rpartition(".")
        if method not in ("forward", "__call__"):
            return False
        module, _, name = cls.rpartition(".")
        index = self.indexes.get(module)
        if index is None or self._class(cls) is None:
            return False
        found = self._value_refs(index)
        return found is not None and refers(found, registered(name))

    def _callers_checked(self, calls_to, qual: str, observed) -> int:
        sites = calls_to.get(qual, [])
        if not sites or any(s.callback or not set(observed) <= s.unread for s in sites):
            return 0
        summary = self.summaries.get(qual)
        if summary is not None and summary.decorated:
            return 0  # a registry or wrapper decorator may call it where no call site shows
        name = qual.rsplit(".", 1)[-1]
        for index in self.indexes.values():
            refs = self._value_refs(index)
            if refs is None or refers(refs, name):
                return 0  # handed around as a value: some calls are not visible as call sites
        return len(sites)

    def _callers_decide(self, calls_to, incoming, qual: str, index: int, memo=None, named: bool = False) -> bool:
        """Every in-project call of ``qual`` passes something known for parameter ``index`` (and the
        function is not handed around as a value, where calls are not visible). A caller that passes
        its own parameter on decides only where its own callers do, up to the calls that pass
        something known (a chain that ends in a function nobody calls ends in nothing known)."""
        memo = {} if memo is None else memo
        key = (qual, index)
        if key in memo:
            return memo[key]
        memo[key] = False  # a cycle of calls decides nothing
        memo[key] = decided = self._callers_pass_known(calls_to, incoming, qual, index, memo, named)
        return decided

    def _callers_pass_known(self, calls_to, incoming, qual: str, index: int, memo, named: bool = False) -> bool:
        """``named``: the guess is only the parameter's name (``outputs``), no annotation: the project's own
        calls outweigh it even for a public method (unseen callers are no evidence for a name)."""
        sites = calls_to.get(qual)
        if not sites:
            return False
        for s in sites:
            passed = dict(s.args).get(index)
            if not passed:
                return False
            for o in passed:
                k = param_index(o)
                if k is not None and not self._callers_decide(calls_to, incoming, s.caller, k, memo, named) \
                        and not self._reported_at(s, passed):
                    return False  # the caller's own parameter, whose callers do not decide it
        if len(incoming.get((qual, index), ())) >= _MAX_INCOMING:
            return False  # more than is kept: some origins were dropped
        name = qual.rsplit(".", 1)[-1]
        if name == "forward" or (name.startswith("__") and name.endswith("__")):
            return False  # called by nn.Module.__call__ / the interpreter too, where no call site shows
        if not named and not name.startswith("_") and self._class(qual.rpartition(".")[0]) is not None:
            return False  # a public method: `loader.load(...)` on a local instance is no call site
        for module_index in self.indexes.values():
            refs = self._value_refs(module_index)
            if refs is None or refers(refs, name):
                return False
        return True

    def _reported_at(self, site: CallSite, passed) -> bool:
        """The caller passes something of its own besides its parameter, and its walk reported a write at
        this call (a helper's write through what it passed, its own guess included): the call shows it."""
        if all(param_index(o) is not None for o in passed):
            return False
        result = self.results.get(site.path)
        return result is not None and any(lf.finding.line == site.line and lf.finding.col == site.col
                                          for lf in result.findings)

    def _value_refs(self, index: ModuleIndex) -> Optional[str]:
        """:func:`value_refs` of a module; None when neither its text nor its tree is at hand (then any
        name may be used as a value there)."""
        if index.value_refs is None:
            tree = self._trees.get(index.path)
            if tree is None:
                return None
            index.value_refs = value_refs(tree)
        return index.value_refs

    def _param_finding(self, path: str, w, incoming, grad_off, calls_to) -> Optional[Finding]:
        best = None
        # in a fixed order (the origins came from sets, whose order varies with PYTHONHASHSEED): of the origins
        # that match the best rule, the same one is shown in every run
        for origin, (site, chain_no_grad) in sorted(incoming.items(), key=lambda item: origin_key(item[0])):
            if not (w.kept or site.callback):
                continue  # a mutating helper: reported at the call (by the caller's walk)
            if w.guard and site.bound is not None and any(g not in site.bound for g in w.guard):
                continue  # the call leaves a parameter at the default that skips the write
            if w.when and site.bound is not None and ((values := built_arms.site_values(site, origin, w.index)) is None
                                                      or conditions.contradicted(w.when, values)):
                continue  # the call's constant arguments (the builds that may get this origin) rule out the path
            if origin.guess_param >= 0 and not calls_to.get(site.caller) and self._unreached_private(site.caller):
                continue  # a guess about the parameter of a caller nothing calls or imports
            called_without_grad = chain_no_grad or self._grad_off(grad_off, w.func)
            # `add(m1, m2, inplace_safe)` with `if inplace: m1 += m2`: the flag the call passes is true only with
            # grad off, so the write runs with grad off
            no_grad = w.no_grad or called_without_grad or bool(w.when) and grad_flags.flag_guards(
                w.when, grad_flags.flag_args(calls_to, grad_off, self._exported(), site))
            write = Write(w.op, w.op_name, w.kind, w.target, w.point_index, w.condition)
            # a callee run with grad off saved nothing of its own (its steps on the parameter)
            steps = ran_without_grad(w.steps) if called_without_grad else w.steps
            given = as_tensor(origin) if w.on_tensor else origin  # (a parameter annotated `Tensor`)
            rule, shown = match([with_steps(given, steps)], write, no_grad, self.settings.report_in_no_grad)
            if rule is None or not rule.without_grad and (self._caller_guess_unbacked(origin, site.caller, calls_to)
                                                          or out_raised_first(w, rule, shown, site)):
                continue
            rank = PRIORITY.index(rule)
            if best is None or rank < best[0]:
                best = (rank, rule, shown, site)
        if best is None:
            return None
        _, rule, shown, site = best
        where = self._where(site, path)
        write = Write(w.op, w.op_name, w.kind, w.target, w.point_index, w.condition)
        message = f"{rule.message(write, shown)}, passed by the call at {where}"
        if shown.condition:
            message += f" ({shown.condition})"
        related = (Related(f"call site passing {shown.root.value} `{shown.root_text}`", site.line, site.col,
                           None if site.path == path else site.path),)
        # each location in its own file: the origin's root and steps name theirs (the caller's, a
        # caller's caller's, the write's own)
        related += tuple(replace(r, path=None if r.path in (None, path) else r.path) for r in shown.related())
        fix = w.fix
        if w.fix_if_callers is not None:
            checked = self._callers_checked(calls_to, w.func, {w.index})
            if checked:
                fix = w.fix_if_callers.checked(checked)
        return Finding(code=rule.code, line=w.line, col=w.col, end_line=w.end_line, end_col=w.end_col,
                       message=message, op=w.op, write_kind=w.kind, target=w.target, origin=shown, fix=fix,
                       related=related)

    def _caller_guess_unbacked(self, origin: Origin, caller: str, calls_to) -> bool:
        """The call passes the caller's parameter (a view of it, a guess computed from it), the caller a plain class's
        method its callers pass nothing requiring grad: a write in the caller's test (``pad(x_i.unsqueeze(0))``)."""
        i, summary = param_index(origin), self.summaries.get(caller)
        if i is None and origin.guessed and summary is not None and origin.root_text in summary.params:
            i = summary.params.index(origin.root_text)  # (the tensor a parameter annotated `Tensor` stands for)
        i = origin.guess_param if i is None and origin.guess_param >= 0 else i  # (`U, S, Vt = svd(X)`)
        return i is not None and self._guess_unbacked(calls_to, caller, i)

    def _guess_unbacked(self, calls_to, qual: str, index: int) -> bool:
        """Parameter ``index`` of ``qual``, a plain class's method, is a guess no in-project call backs with grad."""
        return not (self.settings.report_in_no_grad or self.runs_on_activations(qual)) and self._no_call_passes_grad(
            calls_to, qual, index)

    def _where(self, site: CallSite, path: str) -> str:
        if site.path == path:
            return f"line {site.line}"
        try:
            shown = os.path.relpath(site.path, self.root) if self.root is not None else site.path
        except ValueError:  # (another drive)
            shown = site.path
        return f"{shown}:{site.line}"


def _enclosing(qual: str) -> Tuple[str, ...]:
    """``a.b.c``, ``a.b``, ``a``: a function and the functions (classes, module) it is nested in."""
    parts = qual.split(".") if qual else []
    return tuple(".".join(parts[:i]) for i in range(len(parts), 0, -1))
