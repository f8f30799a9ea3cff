"""Submodules built together: the arms of ``__init__`` that build two submodules one way or another go together.

``if variant == "original": self.conv1 = Block(act="relu"); self.conv2 = Block(act=None)`` / ``else: self.conv1 =
Block(pre=True); self.conv2 = Block(pre=True)``: in ``forward``, ``out = self.conv2(self.conv1(x))`` gives the
second block what the first returned *as built in the same arm*. Each submodule's builds carry the arm they sit in
(:func:`.init_args.builder_facts`); what a call of one returns under each build is remembered by its root
(:attr:`~.dataflow.Scope.arm_origins`), and a later call of a submodule built in the same arms takes it only under
the builds of those arms. So orbit-torch's ``ResBasicBlock`` (set BO) no longer pairs the 'original' ``conv1``'s
ReLU output (saved for backward) with the 'pre_act' ``conv2``, whose activation writes its input in place.

A call site records, per build, the roots of each argument that build may receive (``"@<index>"`` in
:attr:`.summaries.CallSite.built`, read by :func:`.conditions.call_values`); the callee's write is matched against
an argument's origin only under those builds.
"""
from __future__ import annotations

from typing import Dict, FrozenSet, List, Optional, Sequence, Tuple

from ..findings import Origin
from . import conditions

#: the key of a build's items that lists the roots argument ``<index>`` may be under that build: ``"@0"``
TAG = "@"


def _key(kind: str, text: str, line: int) -> str:
    return f"{kind}|{text}|{line}"


def root_key(origin: Origin) -> str:
    """What names an origin's root across views and calls: its kind, text and line."""
    return _key(origin.root.value, origin.root_text, origin.root_line)


def allowed_builds(builds: Sequence[tuple], origin: Origin, index: int) -> Optional[List[tuple]]:
    """Of a call site's ``builds`` (sorted item tuples), those that may receive ``origin`` for parameter ``index``;
    None when no build says (the origin is not one a submodule built in the same arms returned)."""
    tag = f"{TAG}{index}"
    key = root_key(origin)
    tagged = [dict(b).get(tag) for b in builds]
    if not any(t is not None and key in t for t in tagged):
        return None
    return [b for b, t in zip(builds, tagged) if t is not None and key in t]


def site_values(site, origin: Origin, index: int) -> Optional[dict]:
    """:func:`.conditions.call_values` of a call site as seen by ``origin`` passed for parameter ``index``: only the
    builds that may receive it (:func:`allowed_builds`); None when none may."""
    values = conditions.call_values(site)
    if site.built is None or len(site.built) < 2:
        return values
    alts = allowed_builds(site.built, origin, index)
    if alts is None:
        return values
    if not alts:
        return None
    if len(alts) == 1:
        return conditions.under_build(values, alts[0])
    else:
        values[conditions.ALTS] = tuple(alts)
    return values


class BuiltArmsMixin:
    """What ``__init__``'s arms tie together (a part of :class:`~.dataflow.Scope`)."""

    arm_origins: Dict[str, Tuple[FrozenSet[tuple], FrozenSet[tuple]]]

    def arm_builds(self, submodule: Optional[str], builds: tuple) -> Optional[Tuple[tuple, ...]]:
        """The arm of each of ``builds`` (``self.<submodule>``'s builds, :meth:`submodule_builds`), when it was built
        several ways, each in an arm of its own; else None."""
        if submodule is None or len(builds) < 2:
            return None
        arms = self.builder_arms.get(submodule)
        alts = self.builder_alts.get(submodule)
        if not arms or alts is None or len(arms) != len(builds) or tuple(alts) != tuple(builds) \
                or len(set(arms)) != len(arms):
            return None
        if self.ctx is None or not self.cls_qual or len(self.ctx.dispatch(self.cls_qual, "__init__")) != 1:
            return None  # (a subclass's own `__init__` may build them otherwise: `super().__init__(...)`, then more)
        return arms

    def note_arm_returns(self, submodule: Optional[str], builds: tuple, values: dict, summary, line: int) -> None:
        """A call of ``self.<submodule>`` at ``line``, built in several arms: remember, for each origin it returns,
        the arms whose build may return it (its ``returns_when`` paths not ruled out by that build's constant
        arguments)."""
        arms = self.arm_builds(submodule, builds)
        if not arms or summary is None or not summary.returns_when:
            return
        text = f"{self.self_name}.{submodule}(...)"  # (what :meth:`project_call` names the origins it returns)
        group = frozenset(arms)
        for returned, paths in summary.returns_when:
            under = frozenset(arm for arm, build in zip(arms, builds) if any(
                not conditions.contradicted(c, conditions.under_build(values, build)) for c in paths))
            if under and under != group:
                key = _key(returned.root.value, text, line)
                known = self.arm_origins.get(key)
                self.arm_origins[key] = (group, under | known[1] if known else under)

    def arm_filtered(self, w, given: Tuple[frozenset, object], submodule: Optional[str], builds: tuple,
                     values: dict) -> Tuple[frozenset, object]:
        """What a call of ``self.<submodule>`` passes for the parameter helper write ``w`` writes (``given``: origins,
        argument), less the origins that reach the call only under builds whose constants rule the write's path
        out."""
        origins, arg = given
        arms = self.arm_builds(submodule, builds) if w.when else None
        if not arms:
            return given
        open_arms = {arm for arm, build in zip(arms, builds)
                     if not conditions.contradicted(w.when, conditions.under_build(values, build))}
        group = frozenset(arms)
        kept = frozenset(o for o in origins if not (
            (found := self.arm_origins.get(root_key(o))) is not None and found[0] == group and not found[1] & open_arms))
        return kept, arg

    def built_record(self, builds: tuple, submodule: Optional[str], binding) -> Optional[tuple]:
        """:attr:`.summaries.CallSite.built`: each build's constant arguments, with the roots each argument may
        hold under it (:meth:`arm_tags`) where ``self.<submodule>`` was built in arms."""
        if not builds:
            return None
        arms = self.arm_builds(submodule, builds)
        tags = self.arm_tags(arms, binding) if arms else [{} for _ in builds]
        return tuple(tuple(sorted({**b, **t}.items())) for b, t in zip(builds, tags))

    def arm_tags(self, arms: Tuple[tuple, ...], binding: Dict[int, Tuple[frozenset, object]]) -> List[dict]:
        """Per build (in ``arms``' order), ``{"@<index>": roots}``: for each argument, the roots of what it holds
        that a submodule built in the same arms returned under that build's arm."""
        group = frozenset(arms)
        tags: List[dict] = [{} for _ in arms]
        for index, (origins, _) in binding.items():
            for origin in origins:
                found = self.arm_origins.get(root_key(origin))
                if found is None or found[0] != group:
                    continue
                for k, arm in enumerate(arms):
                    if arm in found[1]:
                        tags[k].setdefault(f"{TAG}{index}", set()).add(root_key(origin))
        return [{k: tuple(sorted(v)) for k, v in tag.items()} for tag in tags]
