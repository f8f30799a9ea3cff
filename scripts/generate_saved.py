"""Regenerate ``inplace_lint/torch_facts/_saved_generated.py``: what each op's backward reads.

Run ``python scripts/generate_saved.py`` after a torch upgrade and commit the result. Linting never
imports torch: the engine reads the generated module.

Source of the facts: torch's own derivative formulas, ``torchgen/packaged/autograd/derivatives.yaml``,
read with torchgen's loader (``load_derivatives``): for each autograd node (``ExpBackward0``,
``LinalgVectorNormBackward0``, ...) the tensors its backward formulas read, as ``result`` (the op's
output) or by input name (``self``, ``other``, ``x1``, ...). See docs/pytorch-facts.md#saved-output
and #saved-input.

The Python surface (``Tensor.exp``, ``torch.cdist``, ``F.normalize``, ``torch.linalg.norm``, ...) does
not name its aten op (``torch.linalg.norm`` is ``linalg_vector_norm``, ``torch.cdist`` is
``_cdist_forward``, ``F.normalize`` is a Python composite of a norm and a division), so each public
function of ``torch``, ``torch.nn.functional``, ``torch.linalg``, ``torch.special`` and each
``Tensor`` method is called once on tensors that require grad, with the argument patterns ``(x)``,
``(x, y)`` and ``(x, -1)``. The graph it builds is walked back to the inputs; for each node that
derivatives.yaml describes, each tensor the formulas read is compared (by storage, shape and strides)
with the call's output and inputs. An entry says what holds for *every* pattern that ran (``x.pow(2)``
saves ``x`` but not its output; ``x.pow(y)`` also saves its output: so ``pow`` saves input 0 only).
"""
from __future__ import annotations

import contextlib
import inspect
import io
import os
import pathlib
import sys
import warnings

# Names never called (they change global state, touch files or are not tensor ops).
_SKIP_PREFIXES = (
    "_", "set_", "save", "load", "manual_seed", "seed", "use_deterministic", "compile", "export", "register",
    "backward", "retain", "pin_memory", "share_memory", "numpy", "tolist", "storage", "untyped_storage",
    "data_ptr", "record_stream", "cuda", "module_load", "dump", "print", "apply_", "map_", "new_",
    "requires_grad", "detach", "vmap", "cond", "func", "jit", "is_", "get_", "sym_", "empty", "from_",
    "frombuffer", "lobpcg",
)
#: argument patterns after the first tensor: none, a second tensor, a number (``-1``: also a dim)
PATTERNS = ((), ("y",), (-1,))
#: tried only for an op none of PATTERNS runs: ``x.topk(2)``, ``x.kthvalue(2)``, which need a count (adding it
#: to PATTERNS would narrow the entries of ops it also runs, as each entry is what every pattern agrees on)
FALLBACK_PATTERNS = ((2,),)
NAMESPACES = ("torch", "torch.nn.functional", "torch.linalg", "torch.special", "Tensor")


def _derivative_facts():
    """Autograd node name -> (tensor inputs its backward reads, outputs it reads), from derivatives.yaml."""
    import torchgen
    from torchgen.packaged.autograd.load_derivatives import load_derivatives

    root = os.path.dirname(torchgen.__file__)
    infos = load_derivatives(f"{root}/packaged/autograd/derivatives.yaml",
                             f"{root}/packaged/ATen/native/native_functions.yaml",
                             f"{root}/packaged/ATen/native/tags.yaml")[0]
    facts = {}
    for group in infos.values():
        for info in group.values():
            if info.op:
                inputs = frozenset(s.nctype.name for s in info.all_saved_inputs if "Tensor" in str(s.nctype.type))
                facts[info.op] = (inputs, frozenset(s.nctype.name for s in info.all_saved_outputs))
    return facts


def _same(a, b) -> bool:
    try:
        return a.data_ptr() == b.data_ptr() and a.shape == b.shape and a.stride() == b.stride()
    except Exception:  # a tensor without storage (a sparse or meta tensor) is neither
        return False


#: the shapes of the two tensors: 4x4 matrices first (every linalg op accepts them); an op none of the patterns
#: runs on those is tried on each of the others in turn, and the first that runs decides (``torch.mv``: a matrix
#: and a vector; ``torch.dot``, ``torch.outer``: two vectors; ``torch.bmm``: two batches of matrices)
SHAPES = (((4, 4), (4, 4)), ((4, 4), (4,)), ((4,), (4,)), ((2, 4, 4), (2, 4, 4)))


def inputs(only=None, shapes=SHAPES[0]):
    """Two float64 leaves of ``shapes`` (a square matrix symmetric positive definite; a vector or a batch of
    matrices made the same way, row by row); both require grad, or only the one at position ``only``."""
    import torch

    out = []
    for seed, shape in zip((0, 1), shapes):
        g = torch.Generator().manual_seed(seed)
        m = torch.rand(*shape[:-2], 4, 4, dtype=torch.float64, generator=g)
        value = m @ m.transpose(-1, -2) + 4 * torch.eye(4, dtype=torch.float64)
        value = value[..., 0] if len(shape) == 1 else value
        out.append(value if only is not None and seed != only else value.requires_grad_())
    return out


def call(namespace: str, name: str, pattern, x, y):
    """Call ``namespace.name`` on ``x`` with ``pattern`` (``"y"`` stands for the second tensor)."""
    return call_with(namespace, name, ("x", *pattern), {"x": x, "y": y})


def _probe(facts, namespace, name, pattern, only=None, shapes=SHAPES[0]):
    """(nodes, output saved, input positions saved, output positions saved) for one call, or None when it does
    not run or builds no graph; ``only``: the position of the one input that requires grad (None: all do). The
    output positions are those of an op that returns a tuple of tensors (``torch.linalg.qr``: Q and R)."""
    import torch

    x, y = inputs(only, shapes)
    given = [x] + ([y] if "y" in pattern else [])
    try:
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            out = call(namespace, name, pattern, x, y)
    except Exception:
        return None
    outs = [out] if isinstance(out, torch.Tensor) else (
        [t for t in out] if isinstance(out, tuple) and out and all(isinstance(t, torch.Tensor) for t in out) else [])
    grads = [t.grad_fn for t in outs if t.grad_fn is not None]
    if not grads:
        return None
    seen, stack, nodes, out_saved, saved, saved_outs = set(), grads, set(), False, set(), set()
    while stack:
        node = stack.pop()
        if node is None or id(node) in seen:
            continue
        seen.add(id(node))
        kind = type(node).__name__
        if kind in facts:
            read_inputs, read_outputs = facts[kind]
            for attr in read_outputs:
                value = getattr(node, f"_saved_{attr}", None)
                for position, tensor in enumerate(outs):
                    if isinstance(value, torch.Tensor) and _same(value, tensor):
                        if len(outs) == 1 and tensor is out:
                            out_saved = True
                        else:
                            saved_outs.add(position)
                        nodes.add(kind)
            for attr in read_inputs:
                try:
                    value = getattr(node, f"_saved_{attr}")
                except Exception:
                    continue
                for value in value if isinstance(value, (tuple, list)) else (value,):
                    for position, tensor in enumerate(given):
                        if isinstance(value, torch.Tensor) and _same(value, tensor):
                            saved.add(position)
                            nodes.add(kind)
        stack.extend(f for f, _ in node.next_functions)
    return tuple(sorted(nodes)), out_saved, tuple(sorted(saved)), tuple(sorted(saved_outs)), len(outs) > 1


def table():
    """``"torch.cdist"`` / ``"Tensor.exp"`` -> (nodes, backward reads the output, input positions it reads for
    their own gradient, input positions it reads for the other input's gradient)."""
    import torch

    warnings.filterwarnings("ignore")
    facts = _derivative_facts()
    out = {}
    for namespace, name in _probed_names():
        probed, shapes = [], SHAPES[0]
        for shapes in SHAPES:
            probed = [(p, r) for p, r in ((p, _probe(facts, namespace, name, p, shapes=shapes)) for p in PATTERNS)
                      if r is not None]
            if not probed and shapes == SHAPES[0]:
                probed = [(p, r) for p, r in ((p, _probe(facts, namespace, name, p)) for p in FALLBACK_PATTERNS)
                          if r is not None]
            if probed:
                break
        # the patterns that return one tensor decide the first three facts; those that return a tuple of
        # tensors (``x.max(-1)``: values and indices) only which outputs are saved
        runs = [(p, r) for p, r in probed if not r[4]]
        tuples = [r for _, r in probed if r[4]]
        if not probed:
            continue
        out_saved = bool(runs) and all(r[1] for _, r in runs)
        # an input is a hazard to write when it alone requiring grad makes the backward read it
        # (``x @ w`` saves ``x`` only for ``w``'s gradient: writing ``x`` is legal when ``w`` needs none)
        saved = set(range(2)) if runs else set()
        for pattern, _ in runs:
            for position in range(1 + ("y" in pattern)):
                alone = _probe(facts, namespace, name, pattern, only=position, shapes=shapes)
                if alone is None or position not in alone[2]:
                    saved.discard(position)
            if "y" not in pattern:
                saved.discard(1)
        saved = sorted(saved)
        # an input the backward reads when only the *other* input requires grad (``x`` in ``x * w``,
        # ``x @ w``, ``F.linear(x, w)``): writing it is a hazard whatever it is, once the other needs grad
        two = [pattern for pattern, _ in runs if "y" in pattern]
        other = set(range(2)) if two else set()
        for pattern in two:
            for position in range(2):
                alone = _probe(facts, namespace, name, pattern, only=1 - position, shapes=shapes)
                if alone is None or position not in alone[2]:
                    other.discard(position)
        other = sorted(other)
        # the outputs of a tuple-returning op its backward reads, in every such pattern that ran
        outputs = sorted(set.intersection(*(set(r[3]) for r in tuples))) if tuples else []
        if out_saved or saved or other or outputs:
            nodes = sorted(set().union(*(r[0] for r in (runs and [r for _, r in runs] or tuples))))
            key = f"{namespace}.{name}" if namespace != "Tensor" else f"Tensor.{name}"
            out[key] = (tuple(nodes), out_saved, tuple(saved), tuple(other), tuple(outputs))
    return out


#: argument lists that give an op an index or mask tensor: ``"x"``/``"y"`` the float tensors (4x4, requiring grad),
#: ``"i"`` a 4x4 long index, ``"i1"`` a long vector of 4 indices, ``"m"`` a 4x4 bool mask; for a ``Tensor``
#: method the first is the receiver. ``x.gather(1, i)``, ``x.index_select(0, i1)``, ``F.cross_entropy(x, i1)``,
#: ``x.masked_fill(m, 0.0)``, ``torch.where(m, x, y)``, ``F.embedding(i1, x)``, ``x.scatter_add(1, i, y)``, ...
INDEX_PATTERNS = (
    ("x", 1, "i"), ("x", 0, "i1"), ("x", "i1"), ("x", "i"), ("x", "m"), ("x", "m", 0.0), ("m", "x", "y"),
    ("i1", "x"), ("x", 1, "i", "y"), ("x", 0, "i1", "y"), ("x", "i", 1),
)
_INDEX_PLACEHOLDERS = ("i", "i1", "m")


def _index_inputs(only=None):
    """The two float leaves and the three index tensors of :data:`INDEX_PATTERNS` (fresh: each probe writes one);
    ``only``: ``"x"`` or ``"y"``, the one float leaf that requires grad (None: both)."""
    import torch

    x, y = inputs(None if only is None else ("x", "y").index(only))
    g = torch.Generator().manual_seed(2)
    return {"x": x, "y": y, "i": torch.randint(0, 4, (4, 4), generator=g), "i1": torch.randint(0, 4, (4,), generator=g),
            "m": torch.rand(4, 4, generator=g) > 0.5}


def call_with(namespace: str, name: str, pattern, given):
    """``namespace.name(*pattern)`` with each placeholder of ``pattern`` replaced by ``given[placeholder]``."""
    import torch
    import torch.nn.functional as F  # noqa: F401
    import torch.linalg  # noqa: F401
    import torch.special  # noqa: F401

    args = [given[a] if isinstance(a, str) else a for a in pattern]
    if namespace == "Tensor":
        return getattr(args[0], name)(*args[1:])
    module = {"torch": torch, "torch.nn.functional": torch.nn.functional, "torch.linalg": torch.linalg,
              "torch.special": torch.special}[namespace]
    return getattr(module, name)(*args)


def _float_sum(out):
    """The sum of what an op returned that requires grad (a tensor or a tuple of them), None when nothing does."""
    import torch

    outs = [out] if isinstance(out, torch.Tensor) else list(out) if isinstance(out, (tuple, list)) else []
    parts = [t.sum() for t in outs if isinstance(t, torch.Tensor) and t.requires_grad]
    return sum(parts) if parts else None


def index_probe(namespace: str, name: str, pattern, position: int, only=None) -> "bool | None":
    """Whether writing the index or mask at ``position`` of ``pattern`` after the call (``idx.add_(0)``: its version
    moves, its values do not) makes the backward raise torch's "modified by an inplace operation"; None when the
    call, or its backward without the write, does not run. ``only``: the one float input that requires grad."""
    import torch

    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        for write in (False, True):
            given = _index_inputs(only)
            try:
                total = _float_sum(call_with(namespace, name, pattern, given))
            except Exception:
                return None
            if total is None:
                return None
            if write:
                index = given[pattern[position]]
                index.logical_and_(index) if index.dtype is torch.bool else index.add_(0)
            try:
                total.backward()
            except RuntimeError as exc:
                return True if write and "modified by an inplace operation" in str(exc) else None
            except Exception:
                return None
    return False


def index_table(names, floats=None):
    """``"Tensor.gather"`` -> ((position of an index or mask input, positions of the float inputs), ...): the index
    inputs whose backward reads them, for the gradient of those float inputs (an integer or bool tensor never
    requires grad itself: writing it after the op ran with grad on raises once a float input requires grad).
    An entry holds the positions found in every argument pattern of :data:`INDEX_PATTERNS` that runs with an index
    there (``x.take_along_dim(i, 1)`` reads a broadcast copy: not saved). ``names``: the ops probed; ``floats``:
    :func:`table`'s entries: an op there is left out (``x * m`` reads ``m`` as it reads any other operand, which the
    float table says already; ``x.addcmul(1, i, y)``, a deprecated overload, would put ``i`` where ``tensor2`` is)."""
    out = {}
    for namespace, name in names:
        found, refused = {}, set()
        for pattern in INDEX_PATTERNS:
            if namespace == "Tensor" and pattern[0] != "x":
                continue  # (a receiver that is an index: `i1.embedding(x)` is no method)
            for position, arg in enumerate(pattern):
                if arg not in _INDEX_PLACEHOLDERS:
                    continue
                saved = index_probe(namespace, name, pattern, position)
                if saved is None:
                    continue
                if saved:
                    # (for which float input's gradient: each alone requiring grad; `x.addcmul(1, i, y)`, a deprecated
                    # overload, reads `i` for `y`'s only)
                    found.setdefault(position, set()).update(
                        p for p, a in enumerate(pattern) if a in ("x", "y") and index_probe(namespace, name, pattern,
                                                                                           position, only=a))
                else:
                    refused.add(position)
        entry = tuple((p, tuple(sorted(f))) for p, f in sorted(found.items()) if p not in refused and f)
        if f"{namespace}.{name}" in (floats or {}):
            # the float table answers for an operand that may be a number (`x * m` reads `m` as it reads `x * 2`'s
            # 2: a name there may hold one); a position that takes only a tensor (`F.cross_entropy(x, target)`) is
            # an index's to mark
            entry = tuple((p, f) for p, f in entry if _takes_only_tensors(namespace, name, p))
        if entry:
            out[f"{namespace}.{name}"] = entry
    return out


def _takes_only_tensors(namespace: str, name: str, position: int) -> bool:
    """No argument pattern of :data:`INDEX_PATTERNS` with an index at ``position`` runs with the number 1 there."""
    for pattern in INDEX_PATTERNS:
        if position < len(pattern) and pattern[position] in _INDEX_PLACEHOLDERS and (
                namespace != "Tensor" or pattern[0] == "x"):
            given = _index_inputs()
            numbered = tuple(1 if i == position else a for i, a in enumerate(pattern))
            try:
                with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
                    call_with(namespace, name, numbered, given)
                return False
            except Exception:
                continue
    return True


def _probed_names():
    """Every (namespace, name) :func:`table` considers calling."""
    import torch

    modules = {"torch": torch, "torch.nn.functional": torch.nn.functional, "torch.linalg": torch.linalg,
               "torch.special": torch.special, "Tensor": torch.Tensor}
    for namespace in NAMESPACES:
        module = modules[namespace]
        for name in sorted(dir(module)):
            if name.startswith(_SKIP_PREFIXES) or name.endswith("_") or name[:1].isupper():
                continue
            obj = getattr(module, name, None)
            if callable(obj) and not inspect.isclass(obj):
                yield namespace, name


def generate() -> str:
    import torch

    floats = table()
    rows = "".join(f"    {k!r}: {v!r},\n" for k, v in sorted(floats.items()))
    index_rows = "".join(f"    {k!r}: {v!r},\n" for k, v in sorted(index_table(_probed_names(), floats).items()))
    return (
        '"""Generated by ``python scripts/generate_saved.py``; do not edit by hand."""\n\n'
        f"TORCH_VERSION = {torch.__version__.split('+')[0]!r}\n\n"
        "# Op (``Tensor.<method>``, ``torch.<fn>``, ``torch.nn.functional.<fn>``, ``torch.linalg.<fn>``,\n"
        "# ``torch.special.<fn>``) -> (autograd nodes, its backward reads the op's output, positions of the\n"
        "# tensor inputs its backward reads when that input requires grad: 0 is the receiver or first\n"
        "# argument), positions of the tensor inputs it reads when only the other input requires grad\n"
        "# (``x`` in ``x * w``), positions of the outputs of a tuple-returning op its backward reads\n"
        "# (``torch.linalg.qr``: Q and R). From derivatives.yaml;\n"
        "# only what holds for every argument pattern tried (see scripts/generate_saved.py).\n"
        "SAVED_FOR_BACKWARD = {\n" + rows + "}\n\n"
        "# Op -> ((position of an integer index or bool mask input its backward reads, positions of the float\n"
        "# inputs whose gradient reads it), ...): ``x.gather(1, i)``, ``F.cross_entropy(x, target)``,\n"
        "# ``torch.where(m, x, y)``. Found by execution: the index written after the call (its version moved,\n"
        "# not its values), the backward raises (see INDEX_PATTERNS in scripts/generate_saved.py).\n"
        "SAVED_INDEX_INPUTS = {\n" + index_rows + "}\n"
    )


def main() -> None:
    target = pathlib.Path(__file__).resolve().parents[1] / "inplace_lint" / "torch_facts" / "_saved_generated.py"
    text = generate()
    if "--check" in sys.argv:
        sys.exit(0 if target.read_text() == text else 1)
    target.write_text(text)
    print(f"wrote {target}")


if __name__ == "__main__":
    main()
