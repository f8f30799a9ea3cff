"""What a class's ``__init__`` builds: the class (or factory) each ``self.<attr>`` is made from, and the one
class every element of a ``ModuleList`` attribute is made from. Read without walking function bodies
(:class:`~.summaries.ModuleIndex`), so a call through ``self.<attr>`` or a loop over ``self.blocks``
reaches the project's ``forward`` (issue 20, "submodules by class hierarchy")."""
from __future__ import annotations

import ast
from typing import Dict, List, Optional, Set, Tuple

from ..torch_facts import ops
from . import layer_lists
from .astutil import defaults, dotted_name, is_true, kw, last_name, walk_ast, walk_statements
from .dispatch import dispatch_guards
from .param_containers import init_param_containers


#: ``nn.Module`` methods that return the module itself (PyTorch docs: Module.to, cuda, cpu, float, double, half,
#: bfloat16, train, eval, type, apply, share_memory)
_RETURNS_SELF = frozenset({"to", "cuda", "cpu", "float", "double", "half", "bfloat16", "train", "eval",
                           "type", "apply", "share_memory", "to_empty"})  # (not `requires_grad_(False)`: frozen)


#: marks a builder taken from a top-level table of classes (``NAME[key](...)``): :meth:`.resolve.Resolver.attribute_builder`
#: reads the table's single class (``FC_CLASS_REGISTRY = {"torch": nn.Linear}``)
TABLE_ITEM = "[*]"

#: marks a builder that is an ``__init__`` parameter's default class (``norm_layer=nn.LayerNorm``, then
#: ``self.norm = norm_layer(dim)``): :meth:`.resolve.Resolver.attribute_builder` takes the default where no subclass
#: ``__init__`` stands between (one may pass another class to ``super().__init__``)
DEFAULT_CLASS = "@default:"


def default_builder(builder: str) -> Optional[str]:
    """A qualified builder with its :data:`DEFAULT_CLASS` mark read: the class itself where it is a torch layer (the
    layer a caller who passes nothing gets), None for any other default (a project class, a function: what it builds
    is not followed from a default); an unmarked builder as it is."""
    if not builder.startswith(DEFAULT_CLASS):
        return builder
    builder = builder[len(DEFAULT_CLASS):]
    return builder if builder.startswith("torch.nn.") else None


def _registered_parameter(node: ast.stmt, me: str) -> Optional[ast.Assign]:
    """``self.register_parameter("raw", nn.Parameter(w))`` (or ``name=``, ``param=``/``parameter=``), read as ``self.raw =
    nn.Parameter(w)``: ``nn.Module.register_parameter`` makes the attribute that parameter (gpytorch's idiom for its
    raw hyperparameters); None for any other statement."""
    call = node.value if isinstance(node, ast.Expr) else None
    if not (isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute) and call.func.attr == "register_parameter"
            and isinstance(call.func.value, ast.Name) and call.func.value.id == me):
        return None
    given = dict(zip(("name", "param"), call.args))  # (`param=` for torch's, `parameter=` for gpytorch's Module)
    given.update({"param" if k.arg == "parameter" else k.arg: k.value for k in call.keywords})
    name, value = given.get("name"), given.get("param")
    if not (isinstance(name, ast.Constant) and isinstance(name.value, str) and name.value.isidentifier()
            and value is not None):
        return None
    return ast.Assign(targets=[ast.Attribute(value=ast.Name(id=me, ctx=ast.Load()), attr=name.value, ctx=ast.Store())],
                      value=value, lineno=node.lineno, col_offset=node.col_offset)


def init_attributes(cls: ast.ClassDef) -> Dict[str, str]:
    """``self.x = SomeClass(...)`` (or ``self.x: SomeClass = ...``, or ``self.x = x`` with the parameter
    ``x: SomeClass``) in ``__init__``: x -> "SomeClass"."""
    out: Dict[str, str] = {}
    for item in cls.body:
        if not (isinstance(item, ast.FunctionDef) and item.name == "__init__" and item.args.args):
            continue
        me = item.args.args[0].arg
        every = item.args.posonlyargs + item.args.args + item.args.kwonlyargs
        annotated = {a.arg: dotted_name(a.annotation) for a in every[1:] if a.annotation is not None}
        init_locals = {a.arg for a in every} | {n.id for n in ast.walk(item) if isinstance(n, ast.Name)
                                                and isinstance(n.ctx, ast.Store)}
        classes = default_classes(item)
        nodes = list(item.body)
        for stmt in item.body:  # the top level of __init__ and one level of if/else (every arm of an elif), try, with
            while stmt is not None:
                for field in ("body", "orelse", "finalbody"):
                    nodes.extend(getattr(stmt, field, ()) if not isinstance(stmt, ast.FunctionDef) else ())
                stmt = stmt.orelse[0] if isinstance(stmt, ast.If) and len(stmt.orelse) == 1 and isinstance(
                    stmt.orelse[0], ast.If) else None
        for node in nodes:
            node = _registered_parameter(node, me) or node
            target = value = None
            called = False  # built by a call: a factory function counts too (`aggr_resolver(aggr)`)
            if isinstance(node, ast.Assign) and len(node.targets) == 1:
                target, value = node.targets[0], node.value
                if isinstance(value, ast.Name) and annotated.get(value.id):
                    name = annotated[value.id]  # self.kernel = kernel, with `kernel: Kernel`
                    value = ast.Name(id=name) if "." not in name else ast.parse(name, mode="eval").body
                else:
                    while isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute) and \
                            value.func.attr in _RETURNS_SELF and isinstance(value.func.value, ast.Call):
                        value = value.func.value  # `Cls(...).to(device)`: a module's `to` returns the module itself
                    while isinstance(value, ast.Call) and value.args and \
                            (dotted_name(value.func) or "").rpartition(".")[2] in ops.INIT_FUNCTIONS:
                        value = value.args[0]  # `init.xavier_uniform_(nn.Parameter(...))` returns its argument
                    if isinstance(value, ast.Call) and (any(
                            k.arg == "requires_grad" and not (isinstance(k.value, ast.Constant) and k.value.value is True)
                            for k in value.keywords) or (dotted_name(value.func) or "").rpartition(".")[2] == "Parameter"
                            and len(value.args) > 1
                            and not (isinstance(value.args[1], ast.Constant) and value.args[1].value is True)):
                        # `nn.Parameter(w, requires_grad=False)`, `nn.Parameter(w, False)`, `requires_grad=trainable`:
                        # built, but frozen (or maybe): no evidence of grad
                        continue
                    called, value = isinstance(value, ast.Call), (value.func if isinstance(value, ast.Call) else None)
            elif isinstance(node, ast.AnnAssign):
                target, value = node.target, node.annotation
            if isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name) and target.value.id == me:
                name = dotted_name(value) if value is not None else None
                if called and isinstance(value, ast.Subscript) and isinstance(value.value, ast.Name):
                    # `FC_REGISTRY[fc_type](...)`: the module's table decides (not a local of `__init__` of that name)
                    name = None if value.value.id in init_locals else f"{value.value.id}{TABLE_ITEM}"
                elif called and isinstance(value, ast.Name) and value.id in classes:
                    # `norm_layer(dim)`, the parameter `norm_layer=nn.LayerNorm` (timm's idiom): the default class
                    # is one the instance may hold (what a caller passes instead is another)
                    name = f"{DEFAULT_CLASS}{dotted_name(classes[value.id])}"
                if name and (called or name.rpartition(".")[2][:1].isupper()):
                    out.setdefault(target.attr, name)
        for attr, name in container_elements(item, me).items():
            out.setdefault(f"{attr}{ELEMENTS}", name)
        for attr, name in init_param_containers(item, me).items():
            out.setdefault(attr, name)
    out.update(dispatch_guards(cls))
    return out


def held_by_default(func: ast.AST) -> Tuple[Dict[str, ast.expr], Set[str]]:
    """What each parameter of ``func`` holds where a caller passes nothing, where the code says: its default, for one
    the function does not bind again; for one with no default or a None default that every binding in ``func`` sets
    to one value where it was not given (timm's ``norm_layer = norm_layer or nn.LayerNorm``, ``if act_layer is None:
    act_layer = nn.ReLU``), that value. Also the parameters ``func`` binds again. The one reader of such defaults:
    :func:`default_classes` (the class a layer attribute may be) and :func:`layer_parameters` (a layer class handed in
    for ``inplace=True``)."""
    args = getattr(func, "args", None)
    if not isinstance(args, ast.arguments):
        return {}, set()
    stored: Dict[str, list] = {}
    for stmt in walk_statements(func):
        if isinstance(stmt, (ast.Assign, ast.AnnAssign, ast.AugAssign, ast.For, ast.AsyncFor)):
            for target in _targets(stmt):
                for n in ast.walk(target):
                    if isinstance(n, ast.Name):
                        stored.setdefault(n.id, []).append(stmt)
    names = [a.arg for a in args.posonlyargs + args.args + args.kwonlyargs]
    given = defaults(args)
    out: Dict[str, ast.expr] = {}
    for name in names:
        node = given.get(name)
        if name in stored:
            if node is None or isinstance(node, ast.Constant) and node.value is None:
                held = [_when_none(stmt, name) for stmt in stored[name]]
                if all(h is not None for h in held) and len({ast.dump(h) for h in held}) == 1:
                    out[name] = held[0]
        elif node is not None:
            out[name] = node
    return out, {name for name in names if name in stored}


def default_classes(init: ast.FunctionDef) -> Dict[str, ast.expr]:
    """The parameters of ``init`` that hold a class where a caller passes nothing (:func:`held_by_default`: timm's
    ``norm_layer=nn.LayerNorm``, or ``norm_layer = norm_layer or nn.LayerNorm``): name -> the class as written.
    ``partial(nn.LayerNorm, eps=1e-6)`` is its class; a ``partial`` that sets anything but ``eps`` is left out
    (``elementwise_affine=False`` makes a LayerNorm with other saved tensors), as is any other value (a function, a
    call of something else)."""
    out = {}
    for name, node in held_by_default(init)[0].items():
        if isinstance(node, ast.Call) and (dotted_name(node.func) or "").rpartition(".")[2] == "partial":
            node = node.args[0] if node.args and all(k.arg == "eps" for k in node.keywords) else None
        spelled = dotted_name(node) if node is not None else None
        if spelled and spelled.rpartition(".")[2][:1].isupper():
            out[name] = node
    return out


def _when_none(stmt: ast.stmt, name: str) -> Optional[ast.expr]:
    """What ``stmt`` binds the parameter ``name`` to where it was None: ``X`` of ``name = name or X`` or of a plain
    ``name = X`` (under ``if name is None:``, or anywhere: every binding must agree); None for anything else."""
    if not isinstance(stmt, ast.Assign) or len(stmt.targets) != 1 or not isinstance(stmt.targets[0], ast.Name):
        return None
    value = stmt.value
    if isinstance(value, ast.BoolOp) and isinstance(value.op, ast.Or) and len(value.values) == 2 \
            and isinstance(value.values[0], ast.Name) and value.values[0].id == name:
        value = value.values[1]
    return value if dotted_name(value) or isinstance(value, ast.Call) else None


#: the key of what a container attribute holds (``blocks[]`` for ``self.blocks = nn.ModuleList(...)``)
ELEMENTS = "[]"
#: containers whose call is not their elements' call (an ``nn.Sequential`` is called as a whole)
_MODULE_CONTAINERS = frozenset({"ModuleList", "ModuleDict"})


def container_items(call: ast.Call) -> Optional[List[ast.expr]]:
    """The elements written out in a container's call: the items of ``nn.ModuleList([...])`` (or of a comprehension:
    its element), the values of ``nn.ModuleDict({...})`` (or of a dict comprehension); [] for no argument, None
    when they are not written out (``nn.ModuleList(layers)``)."""
    if not call.args:
        return []
    items = call.args[0] if len(call.args) == 1 else None
    if isinstance(items, (ast.ListComp, ast.GeneratorExp, ast.DictComp)):
        return [items.value if isinstance(items, ast.DictComp) else items.elt]
    if isinstance(items, (ast.List, ast.Tuple)):
        return list(items.elts)
    if isinstance(items, ast.Dict) and None not in items.keys:
        return list(items.values)
    return None


def container_elements(init: ast.FunctionDef, me: str) -> Dict[str, str]:
    """``self.blocks = nn.ModuleList([Block(...) for _ in range(n)])``, ``nn.ModuleList([Block(a), Block(b)])``,
    ``nn.ModuleDict({"a": Head(), "b": Head()})`` (or a dict comprehension), or ``self.blocks.append(Block(...))``
    / ``block = Block(...); self.blocks.append(block)`` / ``self.heads[name] = Head(...)`` anywhere in
    ``__init__``: blocks -> "Block", when every element is built by the one callable; a loop ``for b in
    self.blocks:`` (``self.heads.values()``, ``.items()``) or a call ``self.blocks[i](x)`` then runs that class's
    ``forward`` (issue 20, "submodules by class hierarchy")."""
    built: Dict[str, Set[str]] = {}  # local name -> what built it
    appended: Dict[str, Set[str]] = {}
    made: Dict[str, Set[str]] = {}
    # (`self.a, self.b = nnmd({}), nnmd({})`: each pair an assignment of its own)
    nodes = [p for n in walk_ast(init) if isinstance(n, (ast.Assign, ast.Expr)) for p in _pairs(n)]
    aliases = {}  # `nnmd = nn.ModuleDict`: a local name for a container class
    for node in nodes:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            built.setdefault(node.targets[0].id, set()).add(_builder(node.value) or "")
            if (dotted_name(node.value) or "").rpartition(".")[2] in _MODULE_CONTAINERS:
                aliases[node.targets[0].id] = dotted_name(node.value).rpartition(".")[2]
    assigned: Dict[str, int] = {}
    for node in walk_ast(init):
        targets = node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(
            node, (ast.AugAssign, ast.AnnAssign)) else []
        targets = [e for t in targets for e in (t.elts if isinstance(t, ast.Tuple) else [t])]
        for t in targets:
            if isinstance(t, ast.Subscript):
                index = t.slice
                t = t.value
                # (`self.bos = self.table["<s>"] = BOS`: of a chained assignment, the subscript target's own index)
                if self_attr(t, me) and isinstance(node, ast.Assign) and not isinstance(index, ast.Slice):
                    # `self.heads[name] = Head(...)`, `self.blocks[-1] = Other()`: one more element, of that class
                    appended.setdefault(t.attr, set()).add(_builder(node.value) or "")
                elif self_attr(t, me):
                    assigned[t.attr] = 2
            elif self_attr(t, me):
                assigned[t.attr] = assigned.get(t.attr, 0) + (2 if isinstance(node, ast.AugAssign) else 1)
    for node in nodes:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and self_attr(node.targets[0], me):
            value = node.value
            callee = (dotted_name(value.func) or "") if isinstance(value, ast.Call) else ""
            if isinstance(value, ast.Call) and aliases.get(callee, callee.rpartition(".")[2]) in _MODULE_CONTAINERS:
                elements = container_items(value)
                if elements:
                    made.setdefault(node.targets[0].attr, set()).update(_builder(e) or "" for e in elements)
                elif elements is not None:  # (empty: `nn.ModuleDict()`, `nn.ModuleDict({})`)
                    made.setdefault(node.targets[0].attr, set())
            else:
                made.setdefault(node.targets[0].attr, set()).add("")  # anything else: unknown
        elif isinstance(node, ast.Expr) and isinstance(node.value, ast.Call) \
                and isinstance(node.value.func, ast.Attribute) and node.value.func.attr in ("append", "extend", "insert") \
                and self_attr(node.value.func.value, me) and node.value.args:
            arg = node.value.args[0]
            if node.value.func.attr != "append":
                names = {""}
            elif isinstance(arg, ast.Name):
                names = built.get(arg.id, {""})
            else:
                names = {_builder(arg) or ""}
            appended.setdefault(node.value.func.value.attr, set()).update(names)
    out = {}
    for attr, names in made.items():
        names = names | appended.get(attr, set())
        if len(names) == 1 and "" not in names and assigned.get(attr, 0) == 1:
            out[attr] = next(iter(names))  # (built once, never replaced, item-assigned or extended)
    return out


def _pairs(node: ast.stmt) -> List[ast.stmt]:
    """``a, b = x, y`` as ``a = x`` and ``b = y`` (a tuple of as many values, no starred one); any other statement
    as it is."""
    if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Tuple) \
            and isinstance(node.value, ast.Tuple) and len(node.targets[0].elts) == len(node.value.elts) \
            and not any(isinstance(e, ast.Starred) for e in node.targets[0].elts + node.value.elts):
        return [ast.Assign(targets=[t], value=v, lineno=node.lineno, col_offset=node.col_offset)
                for t, v in zip(node.targets[0].elts, node.value.elts)]
    return [node]


def self_attr(node: ast.expr, me: str) -> bool:
    """``node`` is ``<me>.<attr>``: an attribute of the method's ``self``."""
    return isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == me


def _builder(value: ast.expr) -> Optional[str]:
    """``Block`` for ``Block(...)``: a class-like callable (capitalised), else None."""
    if isinstance(value, ast.Call):
        name = dotted_name(value.func)
        if name and name.rpartition(".")[2][:1].isupper():
            return name
    return None


#: keywords that change what a layer saves (``affine=False``, ``padding_mode="reflect"``): a builder that sets one is
#: left alone (its call sites' constant arguments, not the layer's, are what the class facts read)
_SAVING_KEYWORDS = frozenset({"affine", "elementwise_affine", "padding_mode"})


def layer_builders(tree: ast.Module) -> Dict[str, str]:
    """Top-level functions that build one torch layer and return it: ``def conv3x3(i, o): return nn.Conv2d(i, o, 3,
    padding=1)``, or a name bound once to the layer, initialised, and returned (torchaudio's ``_get_conv1d_layer``).
    Function name -> the layer's dotted name as the module writes it (``nn.Conv2d``), when every return gives the
    same layer of :data:`ops.LAYERS_SAVING_INPUT` or :data:`ops.LAYERS_READING_OWN_INPUT` and no call sets a keyword
    that changes what the layer saves. ``self.conv = conv3x3(...)`` then builds an ``nn.Conv2d``."""
    layers = ops.LAYERS_SAVING_INPUT | ops.LAYERS_READING_OWN_INPUT
    out: Dict[str, str] = {}
    for func in tree.body:
        if not isinstance(func, ast.FunctionDef):
            continue
        # statements first: a walk of every expression of every function cost 4% of a cold check
        given = [s.value for s in walk_statements(func) if isinstance(s, ast.Return)]
        if not given or not all(isinstance(v, ast.Name) or isinstance(v, ast.Call)
                                and (dotted_name(v.func) or "").rpartition(".")[2] in layers for v in given):
            continue
        bound: Dict[str, List[ast.expr]] = {}
        returns: List[Optional[ast.expr]] = []
        for node in walk_ast(func):
            if node is not func and isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef,
                                                      ast.Yield, ast.YieldFrom)):
                returns = []
                break
            if isinstance(node, ast.Assign):
                for target in node.targets:
                    for name in walk_ast(target):
                        if isinstance(name, ast.Name):
                            bound.setdefault(name.id, []).append(node.value)
            elif isinstance(node, ast.Return):
                returns.append(node.value)
        built = set()
        for value in returns:
            if isinstance(value, ast.Name) and len(bound.get(value.id, ())) == 1:
                value = bound[value.id][0]
            if not isinstance(value, ast.Call) or any(k.arg in _SAVING_KEYWORDS or k.arg is None for k in value.keywords):
                built = set()
                break
            built.add(dotted_name(value.func))
        if len(built) == 1 and (name := built.pop()) is not None and name.rpartition(".")[2] in layers:
            out[func.name] = name
    return out


def stack_builders(tree: ast.Module) -> Dict[str, List[List[ast.expr]]]:
    """Top-level functions that build an ``nn.Sequential`` and return it: function name -> for each return, what the
    returned stack may start with. Either the ``Sequential`` call it gives (``return nn.Sequential(nn.ReLU(inplace=True),
    ...)``, or a name bound once to one and returned), or, for a stack built empty and filled with
    ``stack.add_module(name, layer)``, the layers that may come first (:func:`.layer_lists.added_heads`: CAM++'s
    ``get_nonlinear``). ``self.body = make_stack(c)`` then holds that stack (the class facts read its first layer:
    :func:`~.stack_inputs.first_inplace_layers`)."""
    out: Dict[str, List[List[ast.expr]]] = {}
    for func in tree.body:
        if not isinstance(func, ast.FunctionDef):
            continue
        statements = list(walk_statements(func))
        given = [s.value for s in statements if isinstance(s, ast.Return)]
        if not given or not all(isinstance(v, ast.Name) or _sequential_call(v) for v in given):
            continue
        heads: List[List[ast.expr]] = []
        for value in given:
            if isinstance(value, ast.Name):
                # bound once, to the stack itself (a `for` target or a `+=` makes it something else)
                bound = [s for s in statements if isinstance(s, (ast.Assign, ast.AnnAssign, ast.AugAssign, ast.For))
                         and any(isinstance(n, ast.Name) and n.id == value.id for t in _targets(s) for n in ast.walk(t))]
                built = bound[0] if len(bound) == 1 and isinstance(bound[0], (ast.Assign, ast.AnnAssign)) else None
                if built is None or not _only_filled(func, value.id):
                    heads = []
                    break  # (`body.insert(0, ...)`, `del body[0]`, handed to a call: its first layer is not known)
                if _sequential_call(built.value) and not built.value.args and not built.value.keywords:
                    added = layer_lists.added_heads(func, lambda r, n=value.id: isinstance(r, ast.Name) and r.id == n,
                                                    built)
                    if not added:
                        heads = []
                        break
                    heads.append(added)
                    continue
                value = built.value
            if not _sequential_call(value):
                heads = []
                break
            heads.append([value])
        if heads:
            out[func.name] = heads
    return out


def _only_filled(func: ast.FunctionDef, name: str) -> bool:
    """``func`` does nothing with the local ``name`` but add layers at its end (``add_module``, ``append``,
    ``extend``) and return it: a stack whose first layer is the one it was built with, or the first added."""
    nodes = list(walk_ast(func))
    allowed = {id(n.func.value) for n in nodes if layer_lists.adds_layers(n)}
    allowed |= {id(n.value) for n in nodes if isinstance(n, ast.Return)}
    return not any(isinstance(n, ast.Name) and n.id == name and n.ctx.__class__ is not ast.Store and id(n) not in allowed
                   for n in nodes)


def _sequential_call(value: Optional[ast.expr]) -> bool:
    return isinstance(value, ast.Call) and (dotted_name(value.func) or "").rpartition(".")[2] == "Sequential"


def _targets(stmt: ast.stmt) -> List[ast.expr]:
    return stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]  # (`AnnAssign`, `AugAssign`, `For`)


def layer_parameters(func: ast.AST) -> Dict[str, Tuple[Optional[str], bool]]:
    """The parameters of ``func`` that a caller hands a layer class in (timm's ``act_layer=nn.ReLU``): name -> (the
    default as written when it is a torch layer that takes ``inplace``, :data:`ops.INPLACE_KWARG_MODULES`, else
    ``None`` for a parameter with no default, whose caller decides; whether the default already sets the flag,
    ``partial(nn.ReLU, inplace=True)``). Only parameters whose default is such a layer, or with no default and a name
    that ends in ``layer``, ``act`` or ``activation``; not one the function binds again (``act_layer = act_layer or
    nn.Identity``), nor one whose default is something else (``None``, a project class that may ignore the flag, as
    timm's ``GELU(inplace=...)`` does): the default decides the ordinary use."""
    args = getattr(func, "args", None)
    if not isinstance(args, ast.arguments):
        return {}
    held, rebound = held_by_default(func)
    given = defaults(args)
    out: Dict[str, Tuple[Optional[str], bool]] = {}
    for arg in args.posonlyargs + args.args + args.kwonlyargs:
        default = held.get(arg.arg)
        if arg.arg in rebound:
            # `act_layer = act_layer or nn.ReLU`, `if act_layer is None: act_layer = nn.ReLU`: with no default, or
            # `None`, the torch layer every rebinding names is what the ordinary use builds
            spelled = dotted_name(default) if default is not None else None
            if spelled and spelled.rpartition(".")[2] in ops.INPLACE_KWARG_MODULES:
                out[arg.arg] = (spelled, False)
            continue
        preset = False
        if isinstance(default, ast.Call) and last_name(default.func) == "partial" and default.args:
            preset = is_true(kw(default, "inplace"))  # `partial(nn.ReLU, inplace=True)`
            default = default.args[0] if preset or kw(default, "inplace") is None else None
        spelled = dotted_name(default) if default is not None else None
        if spelled and spelled.rpartition(".")[2] in ops.INPLACE_KWARG_MODULES:
            out[arg.arg] = (spelled, preset)
        elif arg.arg not in given and arg.arg.lower().endswith(("layer", "act", "activation")):
            out[arg.arg] = (None, False)
    return out
