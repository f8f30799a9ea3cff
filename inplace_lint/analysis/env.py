"""Origin sets and environments: the values the interpreter walks with (capped sets, merges of branches).

An environment maps names (and dotted names) to a frozenset of :class:`~inplace_lint.findings.Origin`;
a set is capped at ``_MAX_ORIGINS`` (:func:`cap`), and the environments of branches or loop passes are
merged key by key (:func:`merge`, :func:`merge_touched`). ``contradicted`` tells a return's conditions
on parameters that a call's constant arguments rule out.
"""
from __future__ import annotations

from typing import Dict, Iterable, List, Sequence

from ..findings import Origin
from . import conditions

EMPTY: frozenset = frozenset()
_MAX_ORIGINS = 12


negate = conditions.negate
contradicted = conditions.contradicted


def origin_key(o: Origin):
    # the files last: two origins alike but for the file of a line sort the same in every process
    # (then what tells apart two origins alike in the rest: `self.kernel(...)` with the condition naming each
    # implementation it may run; without it their order, and the one a message shows, followed the hash seed)
    # (and last what tells apart two origins alike but for how a step saved the tensor, `torch.minimum` saving it as
    # its input or for the other's gradient: the message said one or the other by the hash seed)
    return (o.root_line, o.root_text, len(o.steps), tuple(s.text for s in o.steps), o.root.value,
            o.path or "", tuple(s.path or "" for s in o.steps), o.condition or "", o.guess_param,
            tuple(s.kind.value for s in o.steps), tuple(s.no_grad for s in o.steps), o.root_no_grad, o.guessed,
            o.certain_tensor)


def cap(origins) -> frozenset:
    s = frozenset(origins)
    if len(s) <= _MAX_ORIGINS:
        return s
    return frozenset(sorted(s, key=origin_key)[:_MAX_ORIGINS])


def merge(envs: Sequence[Dict[str, frozenset]], big: Iterable[str] = ()) -> Dict[str, frozenset]:
    """The environment after branches (or loop iterations) ``envs``: each name holds the union of what it
    holds in each, capped at ``_MAX_ORIGINS`` (in ``envs`` order: the first value as it is, each later one
    ``cap(union)``).

    The branches of one statement share most of their entries (each started from the same environment),
    so only the entries that are not the same object are joined (a union and a cap each); the rest is kept.
    An entry equal in two branches keeps its value, which is what the fold gives unless the value is over
    the cap: ``big`` names every key that may hold such a value (:meth:`StatementsMixin.bind_name`), and
    those are folded as written above. Key order may differ from the fold's; nothing reads it."""
    if not envs:
        return {}
    out: Dict[str, frozenset] = dict(envs[0])
    for env in envs[1:]:
        get = out.get
        for k, v in [(k, v) for k, v in env.items() if get(k) is not v]:
            out[k] = cap(out[k] | v) if k in out else v
    for k in big:
        folded = None
        for env in envs:
            if k in env:
                folded = env[k] if folded is None else cap(folded | env[k])
        if folded is not None:
            out[k] = folded
    return out


def merge_touched(arms: List[Dict[str, frozenset]], touched: Iterable[str]) -> Dict[str, frozenset]:
    """:func:`merge` of the arms of one ``if``, in the time of what they changed: each arm started from the
    same environment, so a key no arm (nor a test) bound or removed holds the same object in every arm,
    and the fold keeps it (``touched`` includes the keys that may hold more than the cap). The last arm's
    dict (no one else holds it) becomes the result; only the ``touched`` keys are folded into it."""
    out = arms[-1]
    for k in touched:
        folded = None
        for env in arms:
            if k in env:
                folded = env[k] if folded is None else cap(folded | env[k])
        if folded is None:
            out.pop(k, None)
        else:
            out[k] = folded
    return out
