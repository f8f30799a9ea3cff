"""Fix planning at a write (a part of :class:`~.dataflow.Scope`, through :class:`~.reporting.ReportingMixin`):
the function's AST facts (:mod:`.fixplan`) decide whether a rebinding hides the write from another reader; what
the walk knows beyond them (a parameter's tensor the written name may hold, the input of an in-place call that
returned it, a submodule that may return its input, a storage the function did not make) can make a safe fix
unsafe, with the reason."""
from __future__ import annotations

import ast
from dataclasses import replace
from typing import List, Optional, Sequence, Set, Tuple

from ..findings import SAVED_STEPS, Applicability, Origin, RootKind, StepKind, WriteKind
from ..torch_facts import ops
from . import class_facts, fixplan
from .astutil import short, walk_ast
from .summaries import param_index


def _storage_unknown(origin: Origin) -> bool:
    """A tensor written after an op saved it (for its own or another input's gradient) whose storage this
    function may not have made: a name we know nothing about (its root is a guess), what ``.detach()``/``.data``
    returned (the same storage), or something reached through a may-alias step (``.contiguous()``, ``.float()``)."""
    if not any(s.kind in SAVED_STEPS for s in origin.steps):
        return False
    called = origin.root_text.split("(", 1)[0].rsplit(".", 1)[-1]
    return origin.guessed or origin.root_text in ("detach()", "data") or origin.has(StepKind.MAY_ALIAS) or (
        origin.root is RootKind.FRESH and called in ops.SHARING_FACTORIES)


def _storage_phrase(origin: Origin) -> str:
    if origin.root_text in ("detach()", "data"):
        return f"`.{origin.root_text}` shares the storage of what it was called on"
    if origin.has(StepKind.MAY_ALIAS):
        return "a call that may return its input itself"
    if origin.root is RootKind.FRESH:
        return f"`{origin.root_text}` shares the storage of what it is given"
    return f"where `{origin.root_text}` comes from is not known here"


#: why a write the project may compile with TorchScript gets no fix (:attr:`.findings.Finding.no_fix`)
TORCHSCRIPT = ("the project compiles TorchScript (`torch.jit.script`), which may compile this code and compiles "
               "neither the DTensor guard nor the runtime call")


class FixPlanningMixin:
    """The fix a write gets, and why a safe-looking one is not (a part of :class:`~.dataflow.Scope`)."""

    def facts(self):
        facts = self.facts_cache.get(id(self.func))
        if facts is None:
            facts = self.facts_cache[id(self.func)] = fixplan.FunctionFacts(self.func)
        # (the walk's own sets: they grow as it goes on)
        facts.untracked, facts.tracked, facts.unresolved = \
            self.untracked_values, self.tracked_values, self.unresolved_calls
        return facts

    def plan_fix(self, node: ast.AST, kind: WriteKind, target: ast.expr, op_name: Optional[str],
                 origins: Sequence[Origin], callers_checked: bool = False):
        if self.func is None or (self.ctx is not None and not self.ctx.plan_fixes):
            return None  # class bodies; a surface that shows findings only
        if self.scripted or (self.ctx is not None and self.ctx.compiles_torchscript()):
            self.withheld = TORCHSCRIPT  # (the finding says why it has no fix: :attr:`.findings.Finding.no_fix`)
            return None  # compiled by `torch.jit.script`: TorchScript compiles neither the DTensor guard nor the runtime
        if not self.no_grad and fixplan.raises_at_write(node, kind, target, origins):
            return None  # the original raises at the write itself: a rewrite that runs on would hide that
        stmt = self.stmt_stack[-1] if self.stmt_stack else None
        project = self.ctx.class_facts() if self.ctx is not None else class_facts.NO_PROJECT_FACTS
        if class_facts.scripted_elsewhere(project):
            self.withheld = TORCHSCRIPT
            return None  # `torch.jit.script(Net())` in another file may compile this code too
        fix = fixplan.plan(self.facts(), self.params, kind, node, target, op_name, origins, self.env, stmt,
                           self.loop_stack, callers_checked, self.kept_roots, holders=self.holders(origins),
                           shared_fields=project[1])
        if fix is not None and fix.applicability is Applicability.SAFE:
            hidden = (None if callers_checked else self._parameter_held(kind, target)) or \
                self._unseen_holder(node, kind, target, origins) or class_facts.unseen_in_project(project, origins)
            if hidden is not None:
                fix = replace(fix, applicability=Applicability.UNSAFE, reason=hidden)
        return fix

    def _held_parameters(self, kind: WriteKind, target: ast.expr, itself: bool = False) -> List[int]:
        """The parameters whose tensor (or a view of it) the written name may hold at the write: a helper that
        returns its argument on some path (``if flag: return x``), a returned function that is an identity
        (``lambda x: x``), a branch that binds it (the walk keeps a parameter's placeholder in every value that
        shares its storage). ``itself``: also the parameter the written name is (``x = F.relu(x, inplace=True)``
        binds ``x`` again to the caller's tensor)."""
        written = fixplan.write_target_name(kind, target)
        held = sorted({param_index(o) for o in self.env.get(written, ()) if param_index(o) is not None})
        return [i for i in held if i < len(self.params) and (itself or self.params[i] != written)]

    def _parameter_held(self, kind: WriteKind, target: ast.expr) -> Optional[str]:
        """Why a rebinding would hide the write from a caller whose tensor the written name may hold, or None. (A
        fix is safe for a written parameter only where its name was bound again first: :func:`fixplan.plan`.)"""
        held = self._held_parameters(kind, target, itself=True)
        if not held:
            return None
        return (f"`{short(target)}` may hold the tensor passed as `{self.params[held[0]]}` (a call or a branch may "
                "return it): the caller would no longer see the change")

    def _unseen_holder(self, node: ast.AST, kind: WriteKind, target: ast.expr,
                       origins: Sequence[Origin]) -> Optional[str]:
        """Why another holder of the written storage, which the names' alias closure (:func:`fixplan.plan`)
        does not see, would no longer see the change a rebinding makes, or None: the input of the in-place call
        that returned the written tensor (``y = F.relu(h, inplace=True)``), the input of a submodule that may
        return it (``nn.Identity``), or a storage the function did not make (``x = inp.detach()``,
        ``x = self.buf``, ``torch.from_numpy(a)``)."""
        written = fixplan.write_target_name(kind, target)
        inplace = next((self.inplace_inputs[(o.root_text, o.root_line)] for o in origins
                        if (o.root_text, o.root_line) in self.inplace_inputs
                        and self.inplace_inputs[(o.root_text, o.root_line)] != written), None)
        if inplace is not None and (self.loop_stack or not self.facts().is_local(inplace)
                                    or self.facts().loaded_after(inplace, (node.lineno, node.col_offset))):
            # (`F.relu(self.h, inplace=True)`, of a parameter or a global: seen outside the function too)
            return (f"`{short(target)}` is `{inplace}` (the in-place call returned it), which would no longer see "
                    "the change")
        identity = self._identity_input(origins, node) if self.identity_layers else None
        if identity is not None:
            return (f"`{identity[0]}` may be a module that returns its input itself (`nn.Identity`, dropout in eval "
                    f"mode): `{identity[1]}`, read after the write, would no longer see the change")
        shared = next((o for o in origins if _storage_unknown(o)), None)
        if shared is not None:
            return (f"`{short(target)}` may share its storage with another tensor or array "
                    f"({_storage_phrase(shared)}), which would no longer see the change")
        return None

    def _identity_input(self, origins: Sequence[Origin], write: ast.AST) -> Optional[Tuple[str, str]]:
        """(``self.head``, ``h``) when a written origin is ``self.head(h)`` with ``self.head`` possibly a module
        that returns its input (:func:`~.model_outputs.identity_layers`) and ``h`` is read after the write."""
        facts = self.facts()
        for o in origins:
            for attr in self.identity_layers:
                if not o.root_text.startswith(f"{self.self_name}.{attr}("):
                    continue
                for call in walk_ast(self.func):
                    if isinstance(call, ast.Call) and call.lineno == o.root_line and call.args \
                            and short(call.func) == f"{self.self_name}.{attr}":
                        base = fixplan.shared_base(call.args[0])
                        if isinstance(base, ast.Name) and (self.loop_stack or facts.loaded_after(
                                base.id, (write.lineno, write.col_offset))):
                            return f"{self.self_name}.{attr}", base.id
        return None

    def plan_call_remedy(self, call: ast.AST, arg: ast.expr, origins: Sequence[Origin], twin: Optional[str],
                         kept: bool) -> str:
        if self.func is None or isinstance(self.func, ast.Module):
            return f"call `{twin}()`, its out-of-place twin, and use what it returns" if twin else ""
        return fixplan.call_remedy(self.facts(), self.params, arg, call, origins, self.env, self.loop_stack, twin,
                                   kept)

    def holders(self, origins: Sequence[Origin]) -> Set[str]:
        """Plain names that may hold an origin with the same root as one of ``origins`` now: every name
        bound here (or in the environment the scope started with) to such an origin, a superset of those
        that hold one now (a merge of branches or loop iterations unions values bound here). Built on
        the first fix plan of the scope and kept up to date from :attr:`bindings`: each binding is indexed
        once, so a long function costs its length, not its length times its findings."""
        index = self.root_index
        if index is None:
            index = self.root_index = {}
            for key, held in self.initial_env.items():
                for o in held:
                    index.setdefault((o.root, o.root_text, o.root_line), set()).add(key)
        bindings = self.bindings
        for key, held in bindings[self.indexed:]:
            for o in held:
                index.setdefault((o.root, o.root_text, o.root_line), set()).add(key)
        self.indexed = len(bindings)
        out: Set[str] = set()
        for o in origins:
            out |= index.get((o.root, o.root_text, o.root_line), set())
        return out
