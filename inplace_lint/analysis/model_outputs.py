"""Model-output heuristics: which values are a model's output, and which modules write in place.

Proved: the result of a call whose callee's last name matches a configured pattern
(``model(...)``, ``self.actor_module(...)``), the result of an in-project function
that returns one (function summaries), and their tensor fields/items.

Guessed, and so kept narrow: a parameter *named* like an output object (``output``)
holds a model's output only for reading its configured tensor fields
(``output.logits``); the name alone never makes ``output.view(...)`` or
``output.data`` a model output (a caller-allocated out-buffer, a dataclass), and a
parameter annotated with another type (``output: QAct``) is never guessed. Inside a module's own
``forward``, what a submodule returns (``outputs = self.backbone(x)``, ``self.decoder(...)``: callees
that do not match the model-call patterns) is an intermediate activation, not a model output, whatever
the variable is called: writing it in place is the module's own business (a memory saving), and the
runtime sanitizer likewise counts only top-level module calls.
"""
from __future__ import annotations

import ast
from typing import Callable, Dict, FrozenSet, List, Optional, Sequence, Set, Tuple

from ..torch_facts import ops
from ..findings import Origin, RootKind, Step, StepKind, WriteKind
from .astutil import defaults, dotted_name, expr_base, is_false, is_str_constant, is_true, is_zero, kw, last_name, \
    walk_ast, walk_statements
from . import layer_lists
from .init_builds import ELEMENTS, container_items, default_classes, layer_parameters


def is_guessed_object(origin: Origin) -> bool:
    """A model output object known only by a parameter's name (no call made it)."""
    return origin.root is RootKind.MODEL_OUTPUT_OBJECT and not origin.root_text.endswith(")")


def annotation_allows_guess(annotation: Optional[ast.expr]) -> bool:
    """``output`` with no annotation, or annotated as some ``...Output``/dict, may be a model output."""
    if annotation is None:
        return True
    text = ast.unparse(annotation)
    return "Output" in text or "dict" in text.lower() or "Any" in text


#: methods of a list that no model output has (a ``ModelOutput`` is an ordered dict, a tuple has none)
_LIST_METHODS = frozenset({"append", "extend", "insert", "sort", "reverse", "remove"})


def used_as_list(func: Optional[ast.AST], name: str) -> bool:
    """``name`` has a list's own method called on it in ``func`` (``outputs.append(x)``): it is a list the
    function fills, not a model output, whatever it is called."""
    for node in walk_ast(func) if func is not None else ():
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
                and node.func.attr in _LIST_METHODS and isinstance(node.func.value, ast.Name) \
                and node.func.value.id == name:
            return True
    return False


def is_tensor_annotation(annotation: Optional[ast.expr]) -> bool:
    """``torch.Tensor``, ``Tensor``, ``nn.Parameter`` (alone; ``Optional[Tensor]`` is not proof enough)."""
    if annotation is None:
        return False
    name = dotted_name(annotation)
    if name is None and isinstance(annotation, ast.Constant) and isinstance(annotation.value, str):
        name = annotation.value
    return name in ("torch.Tensor", "Tensor", "nn.Parameter", "torch.nn.Parameter", "Parameter",
                    "torch.FloatTensor", "FloatTensor")


def inplace_module(call: ast.AST, layer_params: Optional[Dict[str, Tuple[Optional[str], bool]]] = None) -> Optional[str]:
    """``nn.ReLU(inplace=True)`` -> ``nn.ReLU``; also with the flag given by position, as pix2pix and DCGAN write
    it (``nn.ReLU(True)``, ``nn.LeakyReLU(0.2, True)``: :data:`INPLACE_MODULE_POSITION`).

    ``layer_params`` (:func:`layer_parameters` of the method the call is in): ``act_layer(inplace=True)``, where
    ``act_layer`` is a parameter whose default is ``nn.ReLU``, builds that layer (``nn.ReLU``), and so does
    ``activation()`` with ``activation=partial(nn.ReLU, inplace=True)``; a parameter with no such default builds an
    unknown layer that a literal ``inplace=True`` keyword still makes write its input in place (every torch layer
    that takes the flag does: ``act_layer``)."""
    if not isinstance(call, ast.Call):
        return None
    if layer_params and isinstance(call.func, ast.Name) and call.func.id in layer_params:
        default, preset = layer_params[call.func.id]
        if preset and kw(call, "inplace") is None or is_true(kw(call, "inplace")):
            return default or call.func.id  # (`activation=partial(nn.ReLU, inplace=True)`, then `activation()`)
        if default is None:
            return None
        spelled, layer = default, default.rpartition(".")[2]
    elif last_name(call.func) in ops.INPLACE_KWARG_MODULES:
        spelled, layer = ast.unparse(call.func), last_name(call.func)
    else:
        return None
    if is_true(kw(call, "inplace")) or kw(call, "inplace") is None and len(call.args) == \
            INPLACE_MODULE_POSITION.get(layer, 0) + 1 and is_true(call.args[-1]):
        return spelled
    return None


def saves_output_inplace(name: str) -> bool:
    """``relu_``, ``sigmoid_``, ``nn.ReLU(inplace=True)``, ``F.leaky_relu(x, inplace=True)``: the op's backward
    reads the output it wrote (:data:`~inplace_lint.torch_facts.ops.SAVES_OUTPUT_WHEN_INPLACE`)."""
    base = name.rsplit(".", 1)[-1].rstrip("_")
    return ops.ACTIVATION_FUNCTIONS.get(base, base.lower()) in ops.SAVES_OUTPUT_WHEN_INPLACE


def class_members(cls: ast.ClassDef) -> Dict[str, object]:
    """What ``__init__`` (and other methods' top level) set up on ``self``.

    - ``self.act = nn.ReLU(inplace=True)`` -> ``{"self.act": "nn.ReLU"}`` (a str: an in-place module; of several
      built for one attribute, one whose backward reads its output, :func:`saves_output_inplace`, when there is one);
    - ``self.register_buffer("w", x.expand(...))`` -> ``{"self.w": Origin(... expanded view ...)}``.

    Only statements directly in a method's body are scanned, ``__init__`` whole (modules built
    under an ``if``): a full walk of every class would cost more than the rest of the analysis.
    """
    found: Dict[str, object] = {}
    for item in cls.body:
        if not isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        nodes = walk_statements(item) if item.name == "__init__" else item.body
        params = layer_parameters(item)
        for node in nodes:
            if isinstance(node, ast.Assign) and isinstance(node.value, ast.Call):
                module = inplace_module(node.value, params)
                if module:
                    for t in node.targets:
                        key = dotted_name(t)
                        if key and key.startswith("self.") and not (
                                isinstance(found.get(key), str) and saves_output_inplace(found[key])
                                and not saves_output_inplace(module)):
                            # (built as one of several: `nn.ReLU(inplace=True)` for "relu", `nn.SiLU(inplace=True)`
                            # for "silu"; the one whose backward reads what it wrote decides what a later write
                            # to its output may break)
                            found[key] = module
            elif isinstance(node, ast.Expr) and isinstance(node.value, ast.Call):
                call = node.value
                if last_name(call.func) == "register_buffer" and len(call.args) >= 2 \
                        and is_str_constant(call.args[0]) and _is_expand_chain(call.args[1]):
                    value = call.args[1]
                    root = Origin(RootKind.TENSOR, f"self.{call.args[0].value}", node.lineno)
                    found[f"self.{call.args[0].value}"] = root.extend(
                        Step(StepKind.EXPAND, f".{value.func.attr}(...)", value.lineno))
    return found


def _is_expand_chain(node: ast.AST) -> bool:
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
        and node.func.attr in ops.EXPAND_METHODS and not isinstance(expr_base(node), ast.Constant)


#: the statements and calls the class facts below read (one walk of a class gives them all: :func:`class_nodes`)
_CLASS_FACT_NODES = (ast.Assign, ast.AnnAssign, ast.AugAssign, ast.Delete, ast.Call, ast.For)


def class_nodes(cls: ast.ClassDef) -> list:
    """The nodes of ``cls`` the class facts read, from one walk (each fact takes them as ``nodes``)."""
    return [n for n in walk_ast(cls) if isinstance(n, _CLASS_FACT_NODES)]


def layers_not_saving(cls: ast.ClassDef, nodes: Optional[Sequence[ast.AST]] = None,
                      frozen: Optional[FrozenSet[str]] = None) -> FrozenSet[str]:
    """The attributes a class's ``self.<attr>(x)`` or ``self.<attr>`` weight may not make a saved input of ``x``
    (docs/pytorch-facts.md#saved-for-other): built without weights (``affine=False``,
    ``elementwise_affine=False``) or padding first (``padding_mode="reflect"``: the padded copy is saved), built
    by more than one call, or frozen anywhere in the class (``self.proj.requires_grad_(False)``,
    ``self.scale.requires_grad = False``, ``for p in self.proj.parameters(): p.requires_grad = False``:
    :func:`frozen_layers`, given as ``frozen`` when already known)."""
    nodes = list(walk_ast(cls)) if nodes is None else nodes
    builders: Dict[str, Set[str]] = {}
    out: Set[str] = set(frozen_layers(cls, nodes) if frozen is None else frozen)
    for node in nodes:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and _self_attr(node.targets[0]):
            attr = node.targets[0].attr
            if isinstance(node.value, ast.Call):
                builders.setdefault(attr, set()).add(dotted_name(node.value.func) or "")
                if _builds_unsaved(node.value):
                    out.add(attr)
            else:
                builders.setdefault(attr, set()).add("")
    out.update(a for a, names in builders.items() if len(names) > 1)
    return frozenset(out)


#: in :func:`layers_not_saving`: the class freezes every parameter it has (``self.requires_grad_(False)``)
ALL_LAYERS = "*"


def frozen_layers(cls: ast.ClassDef, nodes: Optional[Sequence[ast.AST]] = None) -> FrozenSet[str]:
    """The attributes the class freezes (``self.proj.requires_grad_(False)``, ``self.emb.weight.requires_grad =
    False``, a loop over ``self.proj.parameters()``), and :data:`ALL_LAYERS` when it freezes all its parameters:
    their output requires grad only when their input does."""
    out: Set[str] = set()
    for node in (walk_ast(cls) if nodes is None else nodes):
        frozen = _frozen_target(node)
        while isinstance(frozen, ast.Attribute) and not _self_attr(frozen):
            frozen = frozen.value  # self.proj.weight.requires_grad = False
        if frozen is not None and _self_attr(frozen):
            out.add(frozen.attr)
        elif isinstance(frozen, ast.Name) and frozen.id == "self":
            out.add(ALL_LAYERS)  # `for p in self.parameters(): p.requires_grad = False`
    return frozenset(out)


def _builds_unsaved(call: ast.Call) -> bool:
    """A layer built without weights (``affine=False``, ``elementwise_affine=False``) or padding first
    (``padding_mode="reflect"``: the padded copy is saved, not the input)."""
    return any((k.arg in ("affine", "elementwise_affine") and is_false(k.value)) or (
        k.arg == "padding_mode" and not (is_str_constant(k.value) and k.value.value == "zeros")) for k in call.keywords)


def _frozen_target(node: ast.AST) -> Optional[ast.expr]:
    """What ``node`` freezes: ``x`` in ``x.requires_grad_(False)``, ``x.requires_grad = False`` and ``for p in
    x.parameters(): p.requires_grad = False``; None for anything else."""
    if _freezes(node):
        return node.func.value if isinstance(node, ast.Call) else node.targets[0].value
    if isinstance(node, ast.For) and isinstance(node.iter, ast.Call) and isinstance(node.iter.func, ast.Attribute) \
            and node.iter.func.attr in ("parameters", "named_parameters") and any(map(_freezes, walk_ast(node))):
        return node.iter.func.value
    return None


def _freezes(node: ast.AST) -> bool:
    """``x.requires_grad_(False)`` or ``x.requires_grad = False`` (any value but a literal true)."""
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "requires_grad_":
        return bool(node.args) and not is_true(node.args[0])
    return isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Attribute) \
        and node.targets[0].attr == "requires_grad" and not is_true(node.value)


def inherited_weights_unknown(cls: ast.ClassDef, nodes: Optional[Sequence[ast.AST]] = None) -> bool:
    """A torch layer's subclass whose inherited ``self.weight``/``self.bias`` the class's own code may have made
    something other than parameters that require grad: it assigns, registers or deletes them
    (``self.weight = nn.Parameter(w, requires_grad=False)``, ``del self.weight; self.register_buffer("weight",
    w)``), or freezes itself or its weight (``self.requires_grad_(False)``, ``for p in self.parameters():
    p.requires_grad = False``, ``self.weight.requires_grad_(False)``)."""
    for node in (walk_ast(cls) if nodes is None else nodes):
        targets = node.targets if isinstance(node, (ast.Assign, ast.Delete)) else [node.target] if isinstance(
            node, (ast.AnnAssign, ast.AugAssign)) else []
        if any(_self_attr(t) and t.attr in ("weight", "bias") for t in targets):
            return True
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in (
                "register_buffer", "register_parameter") and node.args and is_str_constant(node.args[0]) \
                and node.args[0].value in ("weight", "bias"):
            return True
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "__init__" \
                and _builds_unsaved(node):
            return True  # super().__init__(d, elementwise_affine=False): no weight reads the input
        frozen = _frozen_target(node)
        if isinstance(frozen, ast.Name) and frozen.id == "self" and not isinstance(node, ast.Assign):
            return True  # self.requires_grad_(False), for p in self.parameters(): p.requires_grad = False
        if _self_attr(frozen) and frozen.attr == "weight":
            return True  # self.weight.requires_grad_(False): the input is saved for the weight's gradient only
    return False


def _self_attr(node: ast.AST) -> bool:
    return isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "self"


def _init(cls: ast.ClassDef):
    return next((item for item in cls.body if isinstance(item, ast.FunctionDef) and item.name == "__init__"
                 and item.args.args), None)


def assignment_counts(cls: ast.ClassDef, nodes: Optional[Sequence[ast.AST]] = None) -> Dict[str, int]:
    """How many assignments to each ``self.<attr>`` the class's code makes."""
    counts: Dict[str, int] = {}
    for node in (walk_ast(cls) if nodes is None else nodes):
        targets = node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(
            node, (ast.AugAssign, ast.AnnAssign)) else []
        for t in targets:
            if _self_attr(t):
                counts[t.attr] = counts.get(t.attr, 0) + 1
    return counts


def torch_stacks(cls: ast.ClassDef, qualify: Callable[[str], str], counts: Optional[Dict[str, int]] = None,
                 nodes: Optional[Sequence[ast.AST]] = None) -> Dict[str, str]:
    """``self.<attr>`` built as a torch activation (``nn.Sigmoid()``) or an ``nn.Sequential(...)`` of ``torch.nn``
    layers written out, once or alike in every assignment (each arm of an ``if``), ``qualify`` resolving names through
    the module's imports: the ``torch.nn.functional`` op its output comes from (``"sigmoid"``:
    :data:`ops.MODULE_FUNCTIONALS`), or ``""`` for a stack whose last layer is another torch layer (``nn.Linear``).
    A layer built from an ``__init__`` parameter whose default is a torch activation (``act_layer=nn.ReLU``, then
    ``self.act = act_layer()``: :func:`.init_builds.default_classes`) counts as that activation; a default of another
    layer says nothing (a caller may pass a layer whose output a custom Function made)."""
    counts = assignment_counts(cls) if counts is None else counts
    init = _init(cls)
    classes = default_classes(init) if init is not None else {}
    zeros = frozenset(n for n, v in defaults(init.args).items() if is_zero(v)) if init is not None else frozenset()
    in_init = {id(n) for n in walk_ast(init)} if classes or zeros else set()
    found: Dict[str, List[Optional[str]]] = {}  # (built in each arm of an `if`: every arm must agree)
    for node in (walk_ast(cls) if nodes is None else nodes):
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and _self_attr(node.targets[0]):
            used: List[str] = []
            op = _stack_output(node.value, qualify, 0, classes if id(node) in in_init else {}, used,
                               zeros if id(node) in in_init else frozenset())
            if op is None and counts.get(node.targets[0].attr) == 1:
                op = _listed_stack_output(cls, node, qualify)
            if used and op in ("", "Identity") or not (op or isinstance(node.value, ast.Call) and (
                    dotted_name(node.value.func) or "").endswith("Sequential")):
                op = None  # (`self.norm = norm_layer(d)`: another class a caller passes decides)
            found.setdefault(node.targets[0].attr, []).append(op)  # (a single layer other than an activation: "")
    out = {a: o[0] for a, o in found.items() if len(o) == counts.get(a) and len(set(o)) == 1 and o[0] is not None}
    for attr, elements in _module_list_elements(cls, qualify, counts, nodes).items():
        found = {_stack_output(e, qualify, 0) for e in elements}
        if len(found) == 1 and next(iter(found)) not in (None, "", "Identity"):
            out[attr + ELEMENTS] = found.pop()  # `self.us[i](x)`, `for up in self.us: up(x)`: each element ends in `op`
    return out


def _module_list_elements(cls: ast.ClassDef, qualify: Callable[[str], str], counts: Dict[str, int],
                          nodes: Optional[Sequence[ast.AST]]) -> Dict[str, List[ast.expr]]:
    """``self.<attr> = nn.ModuleList(...)`` built once, and each element the class puts in it (its items, what
    ``.append``/``.extend([...])``/``.insert`` add); left out when one is not written out or one is changed."""
    lists: Dict[str, List[ast.expr]] = {}
    unknown: Set[str] = set()
    nodes = list(walk_ast(cls)) if nodes is None else nodes
    for node in nodes if any(isinstance(n, ast.Call) and (dotted_name(n.func) or "").endswith("ModuleList")
                             for n in nodes) else ():  # (most classes build none)
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and _self_attr(node.targets[0]) \
                and counts.get(node.targets[0].attr) == 1 and isinstance(node.value, ast.Call) \
                and qualify(dotted_name(node.value.func) or "") == "torch.nn.ModuleList":
            items = container_items(node.value)
            if items is None:  # (`nn.ModuleList(layers)`: not written out)
                unknown.add(node.targets[0].attr)
            lists[node.targets[0].attr] = items or []
        elif isinstance(node, (ast.Assign, ast.AugAssign, ast.Delete)):
            for t in node.targets if isinstance(node, (ast.Assign, ast.Delete)) else [node.target]:
                if isinstance(node, ast.AugAssign) and _self_attr(t):
                    unknown.add(t.attr)
                elif not _self_attr(t) and _list_root(t):  # `self.us[0] = ...`, `del self.us[-1][-1]`
                    unknown.add(_list_root(t))
    for node in nodes:
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and not _self_attr(node.func.value) \
                and _list_root(node.func.value) and node.func.attr not in _READ_METHODS:
            unknown.add(_list_root(node.func.value))  # `self.us[-1].append(nn.Conv2d(...))`: an element changed
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and _self_attr(node.func.value) \
                and node.func.value.attr in lists:
            attr, method = node.func.value.attr, node.func.attr
            if method == "append" and len(node.args) == 1 and isinstance(node.args[0], ast.Call):
                lists[attr].append(node.args[0])
            elif method in ("insert", "extend") and node.args and isinstance(
                    node.args[-1], (ast.List, ast.Tuple) if method == "extend" else ast.Call):
                lists[attr].extend(node.args[-1].elts if method == "extend" else [node.args[-1]])
            elif method not in _READ_METHODS:
                unknown.add(attr)
    return {a: e for a, e in lists.items() if e and a not in unknown}


#: methods of a module list (or of its elements) that leave its layers as they are
_READ_METHODS = frozenset({"parameters", "named_parameters", "children", "modules", "named_children", "named_modules", "to",
                           "train", "eval", "requires_grad_", "apply", "state_dict", "buffers", "named_buffers"})


def _list_root(node: ast.AST) -> Optional[str]:
    """``x`` of the ``self.x`` at the bottom of a chain of items and attributes (``self.us[-1][0].weight``)."""
    while isinstance(node, (ast.Subscript, ast.Attribute)) and not _self_attr(node):
        node = node.value
    return node.attr if _self_attr(node) else None


def _stack_output(node: ast.expr, qualify: Callable[[str], str], depth: int,
                  classes: Optional[Dict[str, ast.expr]] = None, used: Optional[List[str]] = None,
                  zeros: FrozenSet[str] = frozenset()) -> Optional[str]:
    """``classes``: the ``__init__`` parameters whose default class a call of them builds; ``used`` collects those
    met. ``zeros``: those whose default is 0: a dropout of such a rate (or 0) in a stack returns its input itself
    (``nn.Dropout3d(dropout_p)``, ``dropout_p=0``; torch 2.13), the layer's before it (ctunet's residual block, set CT)."""
    if depth > 4 or not isinstance(node, ast.Call):
        return None
    func = node.func
    if classes and isinstance(func, ast.Name) and func.id in classes and used is not None:
        used.append(func.id)
        func = classes[func.id]
    name = qualify(dotted_name(func) or "")
    if not name.startswith("torch.nn.") or name.startswith(("torch.nn.parallel.", "torch.nn.utils.")):
        return None
    layer = name.rsplit(".", 1)[-1]
    if layer == "Sequential":
        items = node.args
        if not items or node.keywords or any(isinstance(a, ast.Starred) for a in items):
            return None
        inner = [_stack_output(a, qualify, depth + 1, classes, used, zeros) for a in items]
        inner = [i for i in inner if i != "Identity"]  # (`nn.Identity()` passes the previous layer's output on)
        return None if not inner or any(i is None for i in inner) else inner[-1]
    if layer == "Identity" or depth and layer in RETURN_INPUT_LAYERS and _zero_rate(node, zeros):
        return "Identity" if depth else None
    if layer in ("ModuleList", "ModuleDict") or not layer[:1].isupper():
        return None
    return ops.MODULE_FUNCTIONALS.get(layer, "")


def _zero_rate(call: ast.Call, zeros: FrozenSet[str]) -> bool:
    """A dropout call's rate (``p=`` or its first argument) is a literal 0 or a parameter in ``zeros``."""
    rate = kw(call, "p") or (call.args[0] if call.args else None)
    return is_zero(rate) or isinstance(rate, ast.Name) and rate.id in zeros


def _listed_stack_output(cls: ast.ClassDef, node: ast.Assign, qualify: Callable[[str], str]) -> Optional[str]:
    """:func:`_stack_output` of ``self.net = nn.Sequential(*layers)``, from the layers the list may end with on
    every path through the method that builds it (:func:`.layer_lists.list_tail`): the last one that does not
    return its input, when each path agrees and it is one of torch's own layers."""
    value = node.value
    if not (isinstance(value, ast.Call) and len(value.args) == 1 and isinstance(value.args[0], ast.Starred)
            and isinstance(value.args[0].value, ast.Name) and not value.keywords
            and qualify(dotted_name(value.func) or "") == "torch.nn.Sequential"):
        return None
    method = next((item for item in cls.body if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef))
                   and item.lineno <= node.lineno <= (item.end_lineno or item.lineno)), None)
    tails = layer_lists.list_tail(method, value.args[0].value.id, node) if method is not None else None
    outputs = set()
    for elements in tails or ():
        output = None
        for element in reversed(elements):
            output = _stack_output(element, qualify, 1)
            if output is None or (output != "Identity" and last_name(element.func) not in RETURN_INPUT_LAYERS):
                break
            output = None  # (it may return what the layer before it made)
        outputs.add(output)
    return outputs.pop() if len(outputs) == 1 else None


#: torch modules whose call may return its input itself: ``nn.Identity``, dropout in eval mode
RETURN_INPUT_LAYERS = frozenset({"Identity", "Dropout", "Dropout1d", "Dropout2d", "Dropout3d", "AlphaDropout",
                                  "FeatureAlphaDropout"})


def zero_rate_dropouts(identity: FrozenSet[str], built: Dict[str, Dict[str, tuple]]) -> FrozenSet[str]:
    """Of the layers that may return their input (``identity``: :func:`identity_layers`), those built once as a
    dropout with a literal rate of 0 (``built``: :func:`.init_args.builder_facts`; ``nn.Dropout(0.0)``,
    ``nn.Dropout(p=0)``):
    such a module returns its input itself (torch 2.13), so ``self.drop(h)`` is ``h``."""
    def zero(value: tuple) -> bool:
        return bool(value) and isinstance(value[0], (int, float)) and not isinstance(value[0], bool) and value[0] == 0
    return frozenset(a for a in identity if a in built and zero(built[a].get("=p", built[a].get("#0", ()))))


def identity_layers(cls: ast.ClassDef, nodes: Optional[Sequence[ast.AST]] = None) -> FrozenSet[str]:
    """The attributes a class may build as a module that returns its input (``self.head = nn.Linear(d, d) if
    project else nn.Identity()``, ``self.drop = nn.Dropout(p)``): ``self.head(h)`` may be ``h`` itself."""
    out: Set[str] = set()
    for node in (walk_ast(cls) if nodes is None else nodes):
        if isinstance(node, ast.Assign) and any(_self_attr(t) for t in node.targets) and _may_return_input(node.value):
            out.update(t.attr for t in node.targets if _self_attr(t))
        elif isinstance(node, ast.Assign):  # `self.act.inplace = flag` after building it
            out.update(t.value.attr for t in node.targets if isinstance(t, ast.Attribute) and t.attr == "inplace"
                       and _self_attr(t.value) and not is_false(node.value))
    return frozenset(out)


def _may_return_input(node: ast.expr) -> bool:
    """An arm of ``node`` (through ``a if c else b`` and ``a or b``) builds a module that returns its input: a
    layer of :data:`RETURN_INPUT_LAYERS`, an ``nn.Sequential`` of nothing else, or ``lambda x: x``."""
    if isinstance(node, ast.IfExp):
        return _may_return_input(node.body) or _may_return_input(node.orelse)
    if isinstance(node, ast.BoolOp):
        return any(_may_return_input(v) for v in node.values)
    if isinstance(node, ast.Lambda):  # `self.norm = lambda x: x` (where a flag turns the norm off)
        first = (node.args.posonlyargs + node.args.args)[:1]
        return bool(first) and isinstance(node.body, ast.Name) and node.body.id == first[0].arg
    if not isinstance(node, ast.Call):
        return False
    layer = (dotted_name(node.func) or "").rpartition(".")[2]
    if layer == "Sequential":
        return all(_may_return_input(a) for a in node.args)
    if layer in ops.INPLACE_KWARG_MODULES:
        # `nn.ReLU(inplace=inplace)`, `nn.ReLU(True)`: in place unless the flag is literally false (it is the
        # constructor's last parameter, so a positional one is the last of a full list)
        flag = kw(node, "inplace") if kw(node, "inplace") is not None else \
            node.args[-1] if len(node.args) == INPLACE_MODULE_POSITION.get(layer, 0) + 1 else None
        if flag is not None and not is_false(flag) or any(k.arg is None for k in node.keywords):
            return True  # (`nn.ReLU(**kw)`: `kw` may hold `inplace=True`)
    return layer in RETURN_INPUT_LAYERS


#: where ``inplace`` stands among a torch activation module's positional parameters
INPLACE_MODULE_POSITION = {"LeakyReLU": 1, "ELU": 1, "CELU": 1, "Hardtanh": 2, "RReLU": 2, "Threshold": 2,
                            "Dropout": 1, "Dropout1d": 1, "Dropout2d": 1, "Dropout3d": 1, "AlphaDropout": 1,
                            "FeatureAlphaDropout": 1}


def as_written_tensor(origin: Origin, kind: WriteKind) -> Origin:
    """A ``*_`` method proves its receiver a tensor: a bare model-call result written so is the output itself."""
    if kind is WriteKind.METHOD and origin.root is RootKind.MODEL_OUTPUT_OBJECT and not origin.steps \
            and not is_guessed_object(origin):
        return Origin(RootKind.MODEL_OUTPUT, origin.root_text, origin.root_line, (), origin.root_no_grad,
                      path=origin.path)
    return origin


def written_tensors(origins: Sequence[Origin], kind: WriteKind) -> List[Origin]:
    """The origins of a write's target that are tensors: a model call's bare result, or a view of it, only where
    a ``*_`` method proves it a tensor."""
    tensors = [o for o in (as_written_tensor(o, kind) for o in origins) if o.is_tensor]
    if kind in (WriteKind.AUGMENTED, WriteKind.SUBSCRIPT):
        # what a model call returned may be a dict or a TensorDict (which has unsqueeze, view, ... too):
        # `td[key] = v` or `td += x` on it, or on a view of it, does not prove a tensor; a `*_` method does.
        # (Tried and withdrawn: taking `-=` on a view of it, `model(x)[:, 0]`, for a tensor's write. nflows'
        # spline transforms divide a slice of `self.transform_net(x)`, a project MADE whose output nothing
        # saves: 38 false findings in two flow libraries.)
        tensors = [o for o in tensors if o.certain_tensor and o.root is not RootKind.MODEL_OUTPUT_OBJECT]
    return tensors
