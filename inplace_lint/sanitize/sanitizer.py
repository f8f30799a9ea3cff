"""The sanitizer: a torch function mode that looks at every in-place write made with grad on.

How each hazard is seen (what PyTorch does is summarised, with sources, in ``docs/sanitizer.md``):

- **which writes**: a :class:`torch.overrides.TorchFunctionMode` sees each torch call made from
  Python *above* autograd, so it sees a write before autograd's own checks can raise. Written
  arguments come from the aten schemas (``op._schema.arguments[i].alias_info.is_write``) of the
  ``*_`` op of the same name; ``__setitem__`` and augmented assignment write ``self``; ``out=``
  writes ``out``; ``F.relu(x, inplace=True)`` and friends write ``x``.
- **IPV002 / IPV003 / IPV005**: autograd's view creation metadata
  (``torch._C._autograd._get_creation_meta``, private and guarded, :func:`..runtime.hazard.creation_meta`):
  ``IN_CUSTOM_FUNCTION``, ``MULTI_OUTPUT_NODE``, ``NO_GRAD_MODE`` / ``INFERENCE_MODE``, reported
  when autograd records the write (the target or an operand requires grad), as PyTorch's
  ``check_inplace`` does.
- **IPV004**: ``torch._debug_has_internal_overlap`` (a stride-0 check when it cannot tell). Also
  for ``fill_``/``zero_``/item assignment, which PyTorch lets through on expanded tensors.
- **IPV006**: ``torch.autograd.graph.saved_tensors_hooks`` record the storage of every tensor
  autograd saves; a write into such a storage while its graph is alive is reported at the write.
  With hooks installed PyTorch no longer compares versions at ``backward()``, so the unpack hook
  does that comparison itself and raises as PyTorch would.
- **IPV001**: global module forward hooks find *top-level* module calls (a call made while no other
  module's forward runs); their output tensors (read by a hook of that module, after its own hooks) are
  remembered by weak reference. A write into one
  of them (or a view of one) while the returned output object still holds it is reported.

Nothing here keeps a tensor alive: outputs are weak references, saved tensors are held only by the
object autograd itself keeps (and frees with the graph), findings are plain strings and numbers.
"""
from __future__ import annotations

import contextlib
import os
import threading
import weakref
from typing import Any, Dict, List, Optional, Sequence, TextIO, Tuple, Union

import torch
from torch.nn.modules import module as _nn_module
from torch.overrides import TorchFunctionMode

from ..findings import WriteKind
from .results import CODE_ORDER, InplaceHazardError, RuntimeFinding, message_for
from .sites import Site, source_text, user_site
from .tracking import HOOKS, SAVED, OutputRecord, output_tensors, pack, saved_hooks_allowed, unpack
from ..runtime.hazard import creation_meta, has_internal_overlap
from .writes import FILLS, SILENT_BASE_WRITES, Spec, spec_of, storage_key, written_tensors

__all__ = ["sanitize", "Sanitizer", "RuntimeFinding", "InplaceHazardError"]


class _Mode(TorchFunctionMode):
    def __init__(self, sanitizer: "Sanitizer"):
        super().__init__()
        self.sanitizer = sanitizer

    def __torch_function__(self, func, types, args=(), kwargs=None):
        if kwargs is None:
            kwargs = {}
        spec = spec_of(func)
        if (spec is not None or kwargs.get("out") is not None) and torch.is_grad_enabled():
            try:
                targets = written_tensors(spec, args, kwargs)
                if targets:
                    self.sanitizer._check(spec, targets, args, kwargs)
            except InplaceHazardError:
                raise
            except Exception as exc:  # a bug of ours must not change what the program does
                self.sanitizer.internal_errors.append(f"{getattr(func, '__name__', func)}: {exc!r}")
        return func(*args, **kwargs)


Output = Union[None, str, os.PathLike, TextIO]


class Sanitizer(contextlib.ContextDecorator):
    """Watches in-place writes made with grad on and records the hazardous ones (see the module doc).

    Use as a context manager or a decorator; it may be entered again (nested or later): findings add up.
    ``output``: where to write the report when the outermost ``with`` exits (a path, a text stream;
    None: nowhere, read :attr:`findings`). ``format``: ``text``, ``json`` (``check``'s JSON) or ``sarif``.
    ``raise_on_finding``: raise :class:`InplaceHazardError` before the first hazardous write instead of
    letting it run. ``saved_tensors``: install saved-tensor hooks to see IPV006; ``torch.func.grad``/``vjp``/
    ``jacrev`` refuse to run under any saved-tensor hooks, so pass False for code that uses them (the hooks
    are also left out, silently, when entered where PyTorch has disabled them).

    The program's behaviour is unchanged otherwise: every write runs as it would, and PyTorch raises
    where it would raise (at the write, or at ``backward()`` for a saved tensor).
    """

    def __init__(self, *, output: Output = None, format: str = "text", raise_on_finding: bool = False,
                 saved_tensors: bool = True):
        from .report import FORMATS

        if format not in FORMATS:
            raise ValueError(f"format must be one of {', '.join(FORMATS)}, got {format!r}")
        self.output = output
        self.format = format
        self.raise_on_finding = raise_on_finding
        self.saved_tensors = saved_tensors
        self._found: Dict[Tuple[str, int, str], RuntimeFinding] = {}
        #: exceptions raised inside the sanitizer's own checks (a bug: the write ran unchecked)
        self.internal_errors: List[str] = []
        self._outputs: Dict[int, Dict[int, OutputRecord]] = {}  # storage address -> top-level outputs
        self._module_depth = 0
        self._entered = 0
        self._lock = threading.RLock()
        self._stack: Optional[contextlib.ExitStack] = None

    # --- context manager -------------------------------------------------------------------------

    def __enter__(self) -> "Sanitizer":
        with self._lock:
            self._entered += 1
            if self._entered > 1:
                return self
            stack = contextlib.ExitStack()
            try:
                if self.saved_tensors and not getattr(HOOKS, "installed", False) and saved_hooks_allowed():
                    stack.enter_context(torch.autograd.graph.saved_tensors_hooks(pack, unpack))
                    HOOKS.installed = True
                    stack.callback(setattr, HOOKS, "installed", False)
                stack.callback(_nn_module.register_module_forward_pre_hook(self._pre_forward).remove)
                stack.callback(_nn_module.register_module_forward_hook(self._post_forward, always_call=True).remove)
                stack.enter_context(_Mode(self))
            except BaseException:
                stack.close()
                self._entered -= 1
                raise
            self._stack = stack
            self._module_depth = 0
        return self

    def __exit__(self, *exc: Any) -> None:
        with self._lock:
            self._entered -= 1
            if self._entered:
                return
            stack, self._stack = self._stack, None
        if stack is not None:
            stack.close()
        if self.output is not None:
            self.write_report(self.output, self.format)

    # --- results ---------------------------------------------------------------------------------

    @property
    def findings(self) -> List[RuntimeFinding]:
        """What was seen so far, by path, line, column and code."""
        return sorted(self._found.values(), key=lambda f: (f.path, f.line, f.col, f.code))

    def write_report(self, output: Output = None, format: Optional[str] = None) -> None:
        """Write the report (``output``: a path, a stream, None for stderr) in ``format`` (default: this
        sanitizer's)."""
        from .report import write_report

        write_report(self.findings, output, format or self.format)

    def clear(self) -> None:
        self._found.clear()

    # --- hooks -----------------------------------------------------------------------------------

    def _pre_forward(self, module: torch.nn.Module, args: Any) -> None:
        if self._module_depth == 0 and torch.is_grad_enabled():
            # a top-level call: read its output after the module's own forward hooks, which may replace it
            # (tensor parallelism wraps it in a DTensor or unwraps it with to_local()), so with a hook of
            # this module registered now, after those; global hooks would run before them
            handle: List[Any] = []

            def top_level_output(module: torch.nn.Module, args: Any, output: Any) -> None:
                handle.pop().remove()
                if torch.is_grad_enabled():
                    self._record_output(module, output)

            handle.append(module.register_forward_hook(top_level_output, always_call=True))
        self._module_depth += 1

    def _post_forward(self, module: torch.nn.Module, args: Any, output: Any) -> None:
        self._module_depth = max(0, self._module_depth - 1)

    def _record_output(self, module: torch.nn.Module, output: Any) -> None:
        tensors = list(output_tensors(output))
        if not tensors:
            return
        holder = None
        if not isinstance(output, torch.Tensor):
            try:
                holder = weakref.ref(output)
            except TypeError:  # tuple, list, dict: holding is judged by the tensor being alive
                holder = None
        name = type(module).__name__
        for where, t in tensors:
            key = storage_key(t)
            if not key:
                continue
            records = self._outputs.setdefault(key, {})
            for rid in [rid for rid, rec in records.items() if rec.tensor() is t]:
                del records[rid]  # the same tensor returned again (a cached buffer): keep one record, the newest

            def forget(_ref: Any, key: int = key, records: Dict[int, OutputRecord] = records) -> None:
                for rid in [rid for rid, rec in records.items() if rec.tensor is _ref]:
                    del records[rid]
                if not records and self._outputs.get(key) is records:
                    del self._outputs[key]

            record = OutputRecord(weakref.ref(t, forget), holder, name, t is not output, where)
            records[id(record)] = record

    # --- the check at each write -------------------------------------------------------------------

    def _held_output(self, target: torch.Tensor, key: int) -> Optional[Tuple[OutputRecord, bool]]:
        """The live top-level output that ``target`` writes into, and whether ``target`` is that tensor."""
        for record in list(self._outputs.get(key, {}).values()):
            tensor = record.tensor()
            if tensor is None:
                continue
            if record.holder is not None:
                holder = record.holder()
                if holder is None or not any(t is tensor for _, t in output_tensors(holder)):
                    continue
            if tensor is target and not record.container:
                continue  # ``h = layer(x); h.relu_()``: the output object is the tensor written, no other reader
            return record, tensor is target
        return None

    def _hazards(self, spec: Optional[Spec], op: str, target: torch.Tensor, recorded: bool,
                 point_index: bool) -> List[Tuple[str, str]]:
        found: List[Tuple[str, str]] = []
        recorded = recorded or target.requires_grad
        if recorded and target._is_view():
            meta = creation_meta(target)
            if meta == "IN_CUSTOM_FUNCTION":
                found.append(("IPV002", message_for("IPV002", op, "")))
            elif meta == "MULTI_OUTPUT_NODE":
                found.append(("IPV003", message_for("IPV003", op, "")))
            elif meta in ("NO_GRAD_MODE", "INFERENCE_MODE"):
                found.append(("IPV005", message_for("IPV005", op, "")))
        name = spec.op if spec is not None else ""
        if name not in FILLS and has_internal_overlap(target):
            silent = name in SILENT_BASE_WRITES or point_index
            detail = (": PyTorch lets it through and silently writes the base; every element that shares the "
                      "memory changes" if silent else ": PyTorch raises; clone() first or use an out-of-place op")
            found.append(("IPV004", message_for("IPV004", op, detail)))
        if SAVED or self._outputs:
            key = storage_key(target)
            if key and key in SAVED:
                found.append(("IPV006", message_for("IPV006", op, " (or, through `.data`, compute wrong gradients)")))
            if key and key in self._outputs:
                held = self._held_output(target, key)
                if held is not None:
                    record, itself = held
                    what = f"`output{record.where}` of a top-level `{record.module}` call"
                    if not itself:
                        what = "a view of " + what
                    found.append(("IPV001", message_for("IPV001", op, what)))
        return found

    def _check(self, spec: Optional[Spec], targets: List[torch.Tensor], args: Sequence[Any],
               kwargs: Dict[str, Any]) -> None:
        recorded = any(a.requires_grad for a in args if isinstance(a, torch.Tensor)) or any(
            a.requires_grad for a in kwargs.values() if isinstance(a, torch.Tensor))
        site: Optional[Site] = None
        point_index = False  # x[0] = v, x[mask] = v: no slice, so an overlapping x is written silently
        if spec is not None and spec.kind is WriteKind.SUBSCRIPT and len(args) > 1:
            index = args[1] if isinstance(args[1], tuple) else (args[1],)
            point_index = not any(isinstance(i, slice) or i is Ellipsis or i is None for i in index)
        for target in targets:
            op = spec.op if spec is not None else "out="
            hazards = self._hazards(spec, op, target, recorded, point_index)
            if not hazards:
                continue
            if site is None:
                site = user_site()
                if site is None:
                    return
            kind = spec.kind if spec is not None else WriteKind.OUT_KWARG
            if site.augmented and kind is WriteKind.METHOD:  # ``x /= t`` reaches torch as ``div_``
                kind, op = WriteKind.AUGMENTED, site.augmented
                hazards = [(code, message.replace(f"`{spec.op}`", f"`{op}`", 1)) for code, message in hazards]
            code, message = min(hazards, key=lambda h: CODE_ORDER.get(h[0], 99))  # one code per write, as `check`
            self._record(site, code, message, op, kind)
            if self.raise_on_finding:
                raise InplaceHazardError(f"{site.path}:{site.line}: {code} {message}")

    def _record(self, site: Site, code: str, message: str, op: str, kind: WriteKind) -> None:
        key = (site.path, site.line, code)  # one finding per line and code, as `check` (x[i] += v writes twice)
        with self._lock:
            found = self._found.get(key)
            if found is not None:
                found.count += 1
                return
            self._found[key] = RuntimeFinding(code, site.path, site.line, site.col, site.end_line, site.end_col,
                                              message, op, kind, source_text(site))


def sanitize(*, output: Output = None, format: str = "text", raise_on_finding: bool = False,
             saved_tensors: bool = True) -> Sanitizer:
    """A :class:`Sanitizer`: ``with sanitize() as s: train_step(); print(s.findings)``, or ``@sanitize(output=...)``.

    Raises ``ValueError`` for an unknown ``format``. Inside, writes raise what PyTorch raises; with
    ``raise_on_finding=True`` the first hazardous write raises :class:`InplaceHazardError` instead.
    """
    return Sanitizer(output=output, format=format, raise_on_finding=raise_on_finding, saved_tensors=saved_tensors)
