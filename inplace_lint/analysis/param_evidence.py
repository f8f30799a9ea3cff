"""Which parameters a function uses as torch tensors, where no annotation says so (:func:`tensor_used`).

A parameter annotated ``torch.Tensor`` may be a tensor that requires grad: the callers decide
(``Origin.guess_param``; docs/analysis.md, *Callers decide over a parameter's guess*). An unannotated parameter is
the same guess when the function's own code can only run if it is a tensor: a method that ``torch.Tensor`` has and
a NumPy array, a list, a string or an ``nn.Module`` lack (``v.exp()``, ``v.unsqueeze(0)``, ``v.masked_fill(m,
0)``), or a torch operator given it (``torch.cos(f0 * t)``, ``F.softmax(x, -1)``, ``torch.stack([a, b])``). A
parameter used only in ways a NumPy array or a number also allows (``g.max()``, ``g - g.min()``, ``x[..., k]``,
``x.reshape(...)``) is no such guess: a visualisation helper's ``gradient /= gradient.max()`` runs on an array. A
slice of the parameter (``mat[:i].t()``, ``x[..., :k].unsqueeze(0)``) is used as it is: a list's slice is a list.
"""
from __future__ import annotations

import ast
from typing import Callable, FrozenSet, Iterator, Optional

from .astutil import dotted_name, sliced_name

#: annotations of a mutable container (``typing``'s and the builtins' names): ``x[k] = v`` on a parameter so
#: annotated stores a reference in the container; it writes no tensor
CONTAINER_ANNOTATIONS = frozenset({"dict", "Dict", "list", "List", "Mapping", "MutableMapping", "Sequence",
                                   "MutableSequence", "OrderedDict", "DefaultDict", "defaultdict"})


def container_annotation(annotation: Optional[ast.expr]) -> bool:
    """``annotation`` names a list or a mapping: ``dict[str, Tensor]``, ``typing.List[Tensor]``, ``Mapping``, a
    quoted one, or ``Optional[...]``/``... | None`` of one (a ``dict[str, Tensor]`` of feature maps that a submodule's
    ``forward`` updates by key, nugraph's planes: its caller's later reads see the new entries, as meant)."""
    if isinstance(annotation, ast.Constant) and isinstance(annotation.value, str):
        try:
            annotation = ast.parse(annotation.value, mode="eval").body
        except SyntaxError:
            return False
    if isinstance(annotation, ast.BinOp) and isinstance(annotation.op, ast.BitOr):
        sides = [annotation.left, annotation.right]
        return any(container_annotation(s) for s in sides) and all(
            container_annotation(s) or isinstance(s, ast.Constant) and s.value is None for s in sides)
    if isinstance(annotation, ast.Subscript):
        head = dotted_name(annotation.value)
        if head is not None and head.rpartition(".")[2] == "Optional":
            return container_annotation(annotation.slice)
        annotation = annotation.value
    name = dotted_name(annotation)
    return name is not None and name.rpartition(".")[2] in CONTAINER_ANNOTATIONS


#: methods of ``torch.Tensor`` that ``numpy.ndarray``, ``list``, ``str``, ``dict`` and ``nn.Module`` do not have
#: (``to``, ``float``, ``cuda``, ``requires_grad_`` are a module's too; ``sum``, ``max``, ``reshape``, ``squeeze``,
#: ``transpose``, ``view``, ``cumsum``, ``clip``, ``split`` an array's or a string's; ``abs``, ``pow`` a pandas
#: Series')
TENSOR_METHODS = frozenset("""
    view_as unsqueeze permute expand expand_as exp exp2 expm1 log log1p log2 log10 sigmoid tanh softmax
    log_softmax sqrt rsqrt neg norm matmul mm bmm mv detach contiguous t chunk unbind narrow masked_fill
    masked_scatter masked_select index_select index_add index_fill index_copy gather scatter scatter_add sin cos tan
    asin acos atan atan2 sinh cosh relu clamp clamp_min clamp_max new_zeros new_ones new_empty new_full new_tensor
    numel dim size square erf erfinv reciprocal addmm addmv baddbmm flip roll logsumexp softplus lerp sign tril triu
    diag_embed unfold movedim amax amin cdist outer cross logdet slogdet inverse cholesky det addcmul addcdiv frac
    floor_divide remainder type_as is_floating_point element_size storage_offset
""".split())

#: ``torch.<name>(...)`` whose first argument is not a tensor (a size, data, a seed, a dtype) or that takes anything
FACTORIES = frozenset("""
    tensor as_tensor from_numpy asarray zeros ones empty full arange range linspace logspace eye rand randn randint
    randperm manual_seed seed Size device dtype is_tensor is_storage set_grad_enabled no_grad enable_grad
    inference_mode get_default_dtype set_default_dtype compile save load cat concat concatenate stack hstack vstack
    dstack block_diag broadcast_shapes tensordot einsum meshgrid cartesian_prod
""".split())
#: of those, the ones whose tensors come in a list (``torch.stack([a, b])``): its items are tensors
LIST_OPS = frozenset("cat concat concatenate stack hstack vstack dstack block_diag meshgrid cartesian_prod".split())

#: attributes only a tensor has
TENSOR_ATTRIBUTES = frozenset({"requires_grad", "grad_fn", "is_leaf", "is_cuda"})


def _operands(node: ast.expr) -> Iterator[str]:
    """Names ``node`` is, or is arithmetic of one level deep (``f0 * t``, ``-x``)."""
    if isinstance(node, ast.Name):
        yield node.id
    elif isinstance(node, ast.BinOp) and not isinstance(node.op, ast.Mod):
        for side in (node.left, node.right):
            if isinstance(side, ast.Name):
                yield side.id
    elif isinstance(node, ast.UnaryOp) and isinstance(node.operand, ast.Name):
        yield node.operand.id


def tensor_used(func: ast.AST, names: FrozenSet[str], qualify: Callable[[str], Optional[str]]) -> FrozenSet[str]:
    """Of ``names`` (a function's unannotated parameters never bound again in it), those ``func``'s own body uses
    as torch tensors (see the module's docstring). ``qualify`` gives a dotted callee's qualified name through the
    module's imports (``F.softmax`` -> ``torch.nn.functional.softmax``), None when it is no import. Nested
    functions and classes are not looked into (their parameters shadow)."""
    found = set()
    alias = _aliases(func, names)
    names = names | frozenset(alias)
    todo = list(getattr(func, "body", ()))
    while todo and len(found) < len(names):
        node = todo.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            continue
        todo.extend(ast.iter_child_nodes(node))
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in names \
                and node.attr in TENSOR_ATTRIBUTES:
            found.add(node.value.id)
        if not isinstance(node, ast.Call):
            continue
        callee = node.func
        receiver = callee.value.value if isinstance(callee, ast.Attribute) and sliced_name(callee.value) \
            else getattr(callee, "value", None)  # (`mat[:i].t()`: a list's or a tuple's slice has no tensor methods)
        if isinstance(callee, ast.Attribute) and isinstance(receiver, ast.Name) and receiver.id in names \
                and callee.attr in TENSOR_METHODS:
            found.add(receiver.id)
            continue
        dotted = dotted_name(callee)
        qual = qualify(dotted) if dotted else None
        if not qual or not qual.startswith("torch.") or qual.startswith(("torch.jit.", "torch.distributed.")):
            continue
        op = qual.rpartition(".")[2]
        if op in LIST_OPS:
            items = [e for a in node.args[:1] if isinstance(a, (ast.List, ast.Tuple)) for e in a.elts]
        elif op in FACTORIES:
            continue
        else:
            items = node.args[:1]
        for item in items:
            found.update(n for n in _operands(item) if n in names)
    return frozenset(alias.get(n, n) for n in found)


def _aliases(func: ast.AST, names: FrozenSet[str]) -> dict:
    """Local names bound once, to one of ``names`` itself (``A = dictionary``) -> that parameter."""
    bound: dict = {}
    for node in ast.walk(func):
        for target in getattr(node, "targets", ()) if isinstance(node, ast.Assign) else \
                ((node.target,) if isinstance(node, (ast.AnnAssign, ast.AugAssign, ast.For)) else ()):
            for t in ast.walk(target):
                if isinstance(t, ast.Name):
                    bound.setdefault(t.id, []).append(node)
    return {local: n.value.id for local, nodes in bound.items() if len(nodes) == 1 and local not in names
            for n in nodes if isinstance(n, ast.Assign) and isinstance(n.value, ast.Name) and n.value.id in names}
