"""The sanitizer: a torch function mode that looks at every in-place write made with grad on.

How each hazard is seen (what PyTorch does is summarised, with sources, in ``docs/sanitizer.md``):

- **which writes**: a :class:`torch.overrides.TorchFunctionMode` sees each torch call made from
  Python *above* autograd, so it sees a write before autograd's own checks can raise. Written
  arguments come from the aten schemas (``op._schema.arguments[i].alias_info.is_write``) of the
  ``*_`` op of the same name; ``__setitem__`` and augmented assignment write ``self``; ``out=``
  writes ``out``; ``F.relu(x, inplace=True)`` and friends write ``x``.
- **IPV002 / IPV003 / IPV005**: autograd's view creation metadata
  (``torch._C._autograd._get_creation_meta``, private, looked up once and guarded):
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
import dataclasses
import dis
import inspect
import itertools
import linecache
import os
import sys
import threading
import weakref
from typing import Any, Callable, Dict, Iterator, List, Optional, Sequence, TextIO, Tuple, Union

import torch
from torch.nn.modules import module as _nn_module
from torch.overrides import TorchFunctionMode

from ..torch_facts import ops as _ops
from ..findings import Finding, Origin, RootKind, WriteKind
from ..rules import PRIORITY
from ..rules import ipv004_expanded as _ipv004

__all__ = ["sanitize", "Sanitizer", "RuntimeFinding", "InplaceHazardError"]

# --------------------------------------------------------------------------------------------------
# Which torch calls write which arguments
# --------------------------------------------------------------------------------------------------

#: Tensor dunders of augmented assignment -> the operator as written.
_AUGMENTED_DUNDERS = {
    "__iadd__": "+=", "__isub__": "-=", "__imul__": "*=", "__itruediv__": "/=", "__idiv__": "/=",
    "__ifloordiv__": "//=", "__imod__": "%=", "__ipow__": "**=", "__iand__": "&=", "__ior__": "|=",
    "__ixor__": "^=", "__ilshift__": "<<=", "__irshift__": ">>=", "__imatmul__": "@=",
}
#: ``*_`` names that change metadata, storage or autograd state, not values (same tables as the linter).
_NOT_DATA = _ops.METADATA_INPLACE_METHODS | _ops.NON_DATA_INPLACE_METHODS | frozenset(
    {"rename_", "retain_grad_", "module_load_", "_coalesced_"})
#: overlapping memory, as the static rule IPV004 says: ``fill_``/``zero_`` skip PyTorch's overlap check and fill
#: the whole tensor (its base gets the value, usually the intent: not reported); these others also skip it but
#: write some elements, so they silently write the base; the rest raise
_FILLS = _ipv004.FILLS
_SILENT_BASE_WRITES = _ipv004.SILENT_BASE_WRITES


@dataclasses.dataclass(frozen=True)
class _Spec:
    """How one torch callable writes: which positional arguments, as which kind of write."""

    kind: WriteKind
    op: str
    positions: Tuple[int, ...] = (0,)
    inplace_pos: int = -1  # INPLACE_KWARG: index of the ``inplace`` parameter
    training_pos: int = -1  # dropout family: index of ``training`` (nothing is written when False)


def _schema_writes(name: str) -> Optional[Tuple[int, ...]]:
    """Positional indices that some overload of ``aten::<name>`` writes (``Tensor(a!)``), or None when
    aten has no op of that name."""
    try:
        packet = getattr(torch.ops.aten, name)
        overloads = packet.overloads()
    except (AttributeError, RuntimeError):
        return None
    written = set()
    for overload in overloads:
        try:
            arguments = getattr(packet, overload)._schema.arguments
        except (AttributeError, RuntimeError):
            continue
        for i, arg in enumerate(arguments):
            info = arg.alias_info
            if info is not None and info.is_write and not arg.kwarg_only:
                written.add(i)
    return tuple(sorted(written))


def _classify(func: Callable) -> Optional[_Spec]:
    """The write a torch callable makes whatever its arguments, or None (``out=`` is checked per call)."""
    schema = getattr(func, "_schema", None)
    if schema is not None and hasattr(func, "overloadpacket"):  # torch.ops.aten.add_.Tensor: its own schema says
        name = getattr(func.overloadpacket, "__name__", "")
        positions = tuple(i for i, arg in enumerate(schema.arguments)
                          if arg.alias_info is not None and arg.alias_info.is_write and not arg.kwarg_only)
        if not positions or name in _NOT_DATA or name.lstrip("_") in _NOT_DATA:
            return None
        return _Spec(WriteKind.FUNCTION, name, positions)
    name = getattr(func, "__name__", "")
    if not isinstance(name, str) or not name:
        return None
    if name == "__setitem__":
        return _Spec(WriteKind.SUBSCRIPT, "[...] =")
    if name in _AUGMENTED_DUNDERS:
        return _Spec(WriteKind.AUGMENTED, _AUGMENTED_DUNDERS[name])
    if name.endswith("_") and not name.endswith("__"):
        if name in _NOT_DATA or name.lstrip("_") in _NOT_DATA:
            return None
        positions = _schema_writes(name)
        if positions == ():
            return None
        kind = WriteKind.METHOD if hasattr(func, "__objclass__") else WriteKind.FUNCTION
        return _Spec(kind, name, positions if positions is not None else (0,))
    if name in _ops.INPLACE_POSITION and getattr(func, "__module__", "") == "torch.nn.functional":
        training = -1
        try:
            params = list(inspect.signature(func).parameters)
            training = params.index("training") if "training" in params else -1
        except (TypeError, ValueError):
            pass
        return _Spec(WriteKind.INPLACE_KWARG, f"{name}(inplace=True)", (0,), _ops.INPLACE_POSITION[name], training)
    return None


_SPECS: Dict[Any, Optional[_Spec]] = {}


def _spec(func: Callable) -> Optional[_Spec]:
    try:
        return _SPECS[func]
    except KeyError:
        spec = _SPECS[func] = _classify(func)
        return spec
    except TypeError:  # unhashable callable
        return _classify(func)


def _tensors(value: Any) -> Iterator[torch.Tensor]:
    if isinstance(value, torch.Tensor):
        yield value
    elif isinstance(value, (list, tuple)):
        for item in value:
            if isinstance(item, torch.Tensor):
                yield item


def _written(spec: Optional[_Spec], args: Sequence[Any], kwargs: Dict[str, Any]) -> List[torch.Tensor]:
    """The tensors this call writes."""
    out: List[torch.Tensor] = []
    if spec is not None:
        if spec.kind is WriteKind.INPLACE_KWARG:
            pos = spec.inplace_pos
            inplace = args[pos] if len(args) > pos else kwargs.get("inplace", False)
            training = True
            if spec.training_pos >= 0:
                training = args[spec.training_pos] if len(args) > spec.training_pos else kwargs.get("training", True)
            if inplace and training:
                out.extend(_tensors(args[0] if args else kwargs.get("input")))
        else:
            for i in spec.positions:
                if i < len(args):
                    out.extend(_tensors(args[i]))
            if not args and "self" in kwargs:
                out.extend(_tensors(kwargs["self"]))
    target = kwargs.get("out")
    if target is not None:
        out.extend(_tensors(target))
    return out


# --------------------------------------------------------------------------------------------------
# Facts about a tensor
# --------------------------------------------------------------------------------------------------

_GET_CREATION_META = getattr(getattr(torch._C, "_autograd", None), "_get_creation_meta", None)


def _creation_meta(t: torch.Tensor) -> Optional[str]:
    """``IN_CUSTOM_FUNCTION``, ``MULTI_OUTPUT_NODE``, ``NO_GRAD_MODE``, ``INFERENCE_MODE``, ``DEFAULT``,
    or None when torch cannot tell (private API absent, not a differentiable view)."""
    if _GET_CREATION_META is None:
        return None
    try:
        meta = _GET_CREATION_META(t)
    except (RuntimeError, TypeError):
        return None
    return getattr(meta, "name", None) or str(meta).rsplit(".", 1)[-1]


def _overlaps(t: torch.Tensor) -> bool:
    check = getattr(torch, "_debug_has_internal_overlap", None)
    if check is not None:
        try:
            status = int(check(t))  # 0 NO, 1 YES, 2 TOO_HARD
        except Exception:
            status = 2
        if status != 2:
            return status == 1
    try:
        return any(st == 0 and sz > 1 for sz, st in zip(t.shape, t.stride()))
    except Exception:
        return False


def _storage_key(t: torch.Tensor) -> int:
    """The address of ``t``'s storage (shared by all its views and ``.detach()``/``.data`` aliases; a
    DTensor's is its local shard's), or 0."""
    try:
        return t.untyped_storage().data_ptr()
    except Exception:  # wrapper subclasses have no storage of their own; meta tensors have none at all
        local = getattr(t, "_local_tensor", None)  # DTensor
        if isinstance(local, torch.Tensor) and local is not t:
            return _storage_key(local)
        return 0


# --------------------------------------------------------------------------------------------------
# Where: the user's line
# --------------------------------------------------------------------------------------------------

_SKIP_DIRS = (
    os.path.dirname(os.path.abspath(torch.__file__)) + os.sep,
    os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep,  # inplace_lint/
)
_AUG_BINARY_OPS = {i: sym for i, (_, sym) in enumerate(getattr(dis, "_nb_ops", ())) if sym.endswith("=")}
_BINARY_OP = dis.opmap.get("BINARY_OP", -1)
#: Python 3.10: one opcode per augmented operator
_INPLACE_OPCODES = {dis.opmap[name]: sym for name, sym in {
    "INPLACE_ADD": "+=", "INPLACE_SUBTRACT": "-=", "INPLACE_MULTIPLY": "*=", "INPLACE_TRUE_DIVIDE": "/=",
    "INPLACE_FLOOR_DIVIDE": "//=", "INPLACE_MODULO": "%=", "INPLACE_POWER": "**=", "INPLACE_AND": "&=",
    "INPLACE_OR": "|=", "INPLACE_XOR": "^=", "INPLACE_LSHIFT": "<<=", "INPLACE_RSHIFT": ">>=",
    "INPLACE_MATRIX_MULTIPLY": "@="}.items() if name in dis.opmap}


@dataclasses.dataclass(frozen=True)
class _Site:
    path: str
    line: int
    col: int
    end_line: int
    end_col: int
    augmented: str = ""  # the operator, when the instruction is an augmented assignment


_SITES: Dict[Tuple[Any, int], _Site] = {}


def _user_site() -> Optional[_Site]:
    """The first frame outside torch and inplace-lint: its file, and the span of its current instruction."""
    frame = sys._getframe(1)
    while frame is not None and frame.f_code.co_filename.startswith(_SKIP_DIRS):
        frame = frame.f_back
    if frame is None:
        return None
    code, lasti = frame.f_code, frame.f_lasti
    site = _SITES.get((code, lasti))
    if site is None:
        line, end_line, col, end_col = frame.f_lineno, None, None, None
        positions = getattr(code, "co_positions", None)
        if positions is not None and lasti >= 0:
            found = next(itertools.islice(positions(), lasti // 2, None), None)
            if found is not None and found[0] is not None:
                line, end_line, col, end_col = found
        augmented = ""
        if 0 <= lasti < len(code.co_code) - 1:
            opcode = code.co_code[lasti]
            augmented = _AUG_BINARY_OPS.get(code.co_code[lasti + 1], "") if opcode == _BINARY_OP else \
                _INPLACE_OPCODES.get(opcode, "")
        path = code.co_filename if code.co_filename.startswith("<") else os.path.abspath(code.co_filename)
        site = _Site(path, line, col or 0, end_line or line, end_col if end_col is not None else (col or 0),
                     augmented)
        if len(_SITES) < 100_000:
            _SITES[(code, lasti)] = site
    return site


def _source_text(site: _Site) -> str:
    text = linecache.getline(site.path, site.line)
    if not text:
        return ""
    raw = text.encode("utf-8")
    end = site.end_col if site.end_line == site.line and site.end_col > site.col else len(raw)
    snippet = raw[site.col:end].decode("utf-8", errors="replace").strip()
    return snippet if len(snippet) <= 80 else snippet[:77] + "..."


# --------------------------------------------------------------------------------------------------
# Findings
# --------------------------------------------------------------------------------------------------


class InplaceHazardError(RuntimeError):
    """Raised before a hazardous in-place write when the sanitizer runs with ``raise_on_finding=True``."""


@dataclasses.dataclass
class RuntimeFinding:
    """One site the sanitizer saw: a code at the user's ``path:line``, how often it happened.

    ``line`` is 1-based and ``col`` 0-based in UTF-8 bytes, as ``ast`` and :class:`inplace_lint.findings.Finding`.
    """

    code: str
    path: str
    line: int
    col: int
    end_line: int
    end_col: int
    message: str
    op: str
    write_kind: WriteKind
    target: str
    count: int = 1

    @property
    def location(self) -> str:
        return f"{self.path}:{self.line}"

    def to_finding(self) -> Finding:
        """The same :class:`~inplace_lint.findings.Finding` that ``check`` reports (message with the count)."""
        times = "once" if self.count == 1 else f"{self.count} times"
        return Finding(
            code=self.code, line=self.line, col=self.col, end_line=self.end_line, end_col=self.end_col,
            message=f"{self.message} (seen {times} at run time)", op=self.op, write_kind=self.write_kind,
            target=self.target, origin=Origin(RootKind.TENSOR, self.target, self.line),
        )

    def __str__(self) -> str:
        return f"{self.path}:{self.line}:{self.col + 1}: {self.to_finding().text}"


def _message(code: str, op: str, detail: str) -> str:
    write = f"in-place `{op}`"
    return {
        "IPV001": f"{write} on {detail} that its output object still holds: every later reader sees the change",
        "IPV002": f"{write} on a view made inside a custom autograd Function (or an input it returned as-is): "
                  "PyTorch forbids it; clone the Function's output or use an out-of-place op",
        "IPV003": f"{write} on one output of a multi-output view op (split/chunk/unbind): PyTorch forbids it; "
                  "use an out-of-place op",
        "IPV004": f"{write} on a tensor whose elements overlap in memory (e.g. after expand){detail}",
        "IPV005": f"{write}, with grad on, on a view made in no-grad mode: PyTorch forbids it; make the view "
                  "and the write in the same grad mode",
        "IPV006": f"{write} on a tensor that autograd saved for backward, in a graph that is still alive: "
                  f"backward() will fail{detail}",
    }[code]


_PRIORITY = {rule.code: i for i, rule in enumerate(PRIORITY)}


# --------------------------------------------------------------------------------------------------
# Saved tensors and model outputs, by weak reference
# --------------------------------------------------------------------------------------------------


class _Packed:
    """What autograd keeps for one saved tensor while our hooks are on: a detached alias (the same
    storage and version counter, no ``grad_fn``, so no reference cycle) and its version when saved."""

    __slots__ = ("tensor", "version", "key", "registry")

    def __init__(self, tensor: torch.Tensor, version: int, key: int, registry: Dict[int, int]):
        self.tensor = tensor
        self.version = version
        self.key = key
        self.registry = registry
        if key:
            registry[key] = registry.get(key, 0) + 1

    def __del__(self) -> None:
        key, registry = self.key, self.registry
        if key:
            left = registry.get(key, 0) - 1
            if left > 0:
                registry[key] = left
            else:
                registry.pop(key, None)


#: storage address -> how many tensors autograd saved from that storage are still held by a live graph;
#: one table for every sanitizer, so that a sanitizer nested in another (a test's own inside the pytest
#: plugin's) and the outer one both see the saves made while either is active
_SAVED: Dict[int, int] = {}
_HOOKS = threading.local()  # .installed: a sanitizer of this thread has the saved-tensor hooks on


def _pack(t: torch.Tensor) -> _Packed:
    return _Packed(t.detach(), t._version, _storage_key(t), _SAVED)


def _unpack(packed: _Packed) -> torch.Tensor:
    tensor = packed.tensor
    if tensor._version != packed.version:
        # what autograd would raise without hooks (it skips this check when saved-tensor hooks are set)
        raise RuntimeError(
            "one of the variables needed for gradient computation has been modified by an inplace operation: "
            f"[{tensor.type()} {list(tensor.shape)}] is at version {tensor._version}; expected version "
            f"{packed.version} instead. The inplace-lint sanitizer reported the write that did it (IPV006).")
    return tensor


def _saved_hooks_allowed() -> bool:
    """False inside ``torch.autograd.graph.disable_saved_tensors_hooks`` (installing hooks would raise)."""
    get = getattr(torch._C._autograd, "_saved_tensors_hooks_get_disabled_error_message", None)
    try:
        return get is None or get() is None
    except RuntimeError:
        return True


def _output_tensors(value: Any, depth: int = 2, where: str = "") -> Iterator[Tuple[str, torch.Tensor]]:
    """``(where, tensor)`` for the tensors a module's output holds: itself (``where`` empty), or items and
    fields of a tuple, list, mapping or dataclass-like object (``ModelOutput``), ``depth`` levels down;
    ``where`` is ``.logits`` / ``[0]``."""
    if isinstance(value, torch.Tensor):
        yield where, value
        return
    if depth <= 0 or value is None or isinstance(value, (str, bytes, int, float, bool)):
        return
    if isinstance(value, (tuple, list)):
        items = [(f"{where}[{i}]", item) for i, item in enumerate(value)]
    elif isinstance(value, dict):
        items = [(f"{where}.{k}" if isinstance(k, str) and k.isidentifier() else f"{where}[{k!r}]", v)
                 for k, v in list(value.items())]
    else:
        items = [(f"{where}.{k}", v) for k, v in list(getattr(value, "__dict__", {}).items())]
    for sub, item in items:
        yield from _output_tensors(item, depth - 1, sub)


@dataclasses.dataclass(eq=False)
class _OutputRecord:
    tensor: "weakref.ReferenceType[torch.Tensor]"
    holder: Optional[weakref.ReferenceType]  # the output object when it can be weakly referenced
    module: str
    container: bool  # the output object was a container (tuple, dict, ModelOutput), not the tensor itself
    where: str  # ``.logits``, ``[0]``; empty when the output is the tensor


# --------------------------------------------------------------------------------------------------
# The sanitizer
# --------------------------------------------------------------------------------------------------


class _Mode(TorchFunctionMode):
    def __init__(self, sanitizer: "Sanitizer"):
        super().__init__()
        self.sanitizer = sanitizer

    def __torch_function__(self, func, types, args=(), kwargs=None):
        if kwargs is None:
            kwargs = {}
        spec = _spec(func)
        if (spec is not None or kwargs.get("out") is not None) and torch.is_grad_enabled():
            try:
                targets = _written(spec, args, kwargs)
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
        self._outputs: Dict[int, Dict[int, _OutputRecord]] = {}  # storage address -> top-level outputs
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
                if self.saved_tensors and not getattr(_HOOKS, "installed", False) and _saved_hooks_allowed():
                    stack.enter_context(torch.autograd.graph.saved_tensors_hooks(_pack, _unpack))
                    _HOOKS.installed = True
                    stack.callback(setattr, _HOOKS, "installed", False)
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
        tensors = list(_output_tensors(output))
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
            key = _storage_key(t)
            if not key:
                continue
            records = self._outputs.setdefault(key, {})
            for rid in [rid for rid, rec in records.items() if rec.tensor() is t]:
                del records[rid]  # the same tensor returned again (a cached buffer): keep one record, the newest

            def forget(_ref: Any, key: int = key, records: Dict[int, _OutputRecord] = records) -> None:
                for rid in [rid for rid, rec in records.items() if rec.tensor is _ref]:
                    del records[rid]
                if not records and self._outputs.get(key) is records:
                    del self._outputs[key]

            record = _OutputRecord(weakref.ref(t, forget), holder, name, t is not output, where)
            records[id(record)] = record

    # --- the check at each write -------------------------------------------------------------------

    def _held_output(self, target: torch.Tensor, key: int) -> Optional[Tuple[_OutputRecord, bool]]:
        """The live top-level output that ``target`` writes into, and whether ``target`` is that tensor."""
        for record in list(self._outputs.get(key, {}).values()):
            tensor = record.tensor()
            if tensor is None:
                continue
            if record.holder is not None:
                holder = record.holder()
                if holder is None or not any(t is tensor for _, t in _output_tensors(holder)):
                    continue
            if tensor is target and not record.container:
                continue  # ``h = layer(x); h.relu_()``: the output object is the tensor written, no other reader
            return record, tensor is target
        return None

    def _hazards(self, spec: Optional[_Spec], op: str, target: torch.Tensor, recorded: bool,
                 point_index: bool) -> List[Tuple[str, str]]:
        found: List[Tuple[str, str]] = []
        recorded = recorded or target.requires_grad
        if recorded and target._is_view():
            meta = _creation_meta(target)
            if meta == "IN_CUSTOM_FUNCTION":
                found.append(("IPV002", _message("IPV002", op, "")))
            elif meta == "MULTI_OUTPUT_NODE":
                found.append(("IPV003", _message("IPV003", op, "")))
            elif meta in ("NO_GRAD_MODE", "INFERENCE_MODE"):
                found.append(("IPV005", _message("IPV005", op, "")))
        name = spec.op if spec is not None else ""
        if name not in _FILLS and _overlaps(target):
            silent = name in _SILENT_BASE_WRITES or point_index
            detail = (": PyTorch lets it through and silently writes the base; every element that shares the "
                      "memory changes" if silent else ": PyTorch raises; clone() first or use an out-of-place op")
            found.append(("IPV004", _message("IPV004", op, detail)))
        if _SAVED or self._outputs:
            key = _storage_key(target)
            if key and key in _SAVED:
                found.append(("IPV006", _message("IPV006", op, " (or, through `.data`, compute wrong gradients)")))
            if key and key in self._outputs:
                held = self._held_output(target, key)
                if held is not None:
                    record, itself = held
                    what = f"`output{record.where}` of a top-level `{record.module}` call"
                    if not itself:
                        what = "a view of " + what
                    found.append(("IPV001", _message("IPV001", op, what)))
        return found

    def _check(self, spec: Optional[_Spec], targets: List[torch.Tensor], args: Sequence[Any],
               kwargs: Dict[str, Any]) -> None:
        recorded = any(a.requires_grad for a in args if isinstance(a, torch.Tensor)) or any(
            a.requires_grad for a in kwargs.values() if isinstance(a, torch.Tensor))
        site: Optional[_Site] = None
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
                site = _user_site()
                if site is None:
                    return
            kind = spec.kind if spec is not None else WriteKind.OUT_KWARG
            if site.augmented and kind is WriteKind.METHOD:  # ``x /= t`` reaches torch as ``div_``
                kind, op = WriteKind.AUGMENTED, site.augmented
                hazards = [(code, message.replace(f"`{spec.op}`", f"`{op}`", 1)) for code, message in hazards]
            code, message = min(hazards, key=lambda h: _PRIORITY.get(h[0], 99))  # one code per write, as `check`
            self._record(site, code, message, op, kind)
            if self.raise_on_finding:
                raise InplaceHazardError(f"{site.path}:{site.line}: {code} {message}")

    def _record(self, site: _Site, code: str, message: str, op: str, kind: WriteKind) -> None:
        key = (site.path, site.line, code)  # one finding per line and code, as `check` (x[i] += v writes twice)
        with self._lock:
            found = self._found.get(key)
            if found is not None:
                found.count += 1
                return
            self._found[key] = RuntimeFinding(code, site.path, site.line, site.col, site.end_line, site.end_col,
                                              message, op, kind, _source_text(site))


def sanitize(*, output: Output = None, format: str = "text", raise_on_finding: bool = False,
             saved_tensors: bool = True) -> Sanitizer:
    """A :class:`Sanitizer`: ``with sanitize() as s: train_step(); print(s.findings)``, or ``@sanitize(output=...)``.

    Raises ``ValueError`` for an unknown ``format``. Inside, writes raise what PyTorch raises; with
    ``raise_on_finding=True`` the first hazardous write raises :class:`InplaceHazardError` instead.
    """
    return Sanitizer(output=output, format=format, raise_on_finding=raise_on_finding, saved_tensors=saved_tensors)
