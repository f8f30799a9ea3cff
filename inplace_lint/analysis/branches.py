"""What a branch test states about the function's parameters, or about the flags its class's ``__init__``
copied from its own (``if self.relu:``), as a condition (:mod:`.conditions`); and the class facts a method's
walk reads (a part of :class:`~.dataflow.Scope`)."""
from __future__ import annotations

import ast
from typing import Optional

from ..findings import Step, StepKind, WriteKind
from . import conditions, holders, param_evidence
from .astutil import defaults, dotted_name, last_name, walk_ast
from .names import qualify_dotted
from .own_class import OwnClassFacts
from .summaries import param_index, parameters


class ConditionsMixin:
    """The conditions a branch test states (a part of :class:`~.dataflow.Scope`; :mod:`.conditions`)."""

    def framework_predict_arm(self, test: ast.expr) -> bool:
        """``if mode == 'predict':`` in the ``forward`` of a class whose framework runs its ``predict`` with grad
        off: mmengine's ``val_step``/``test_step`` call ``forward(..., mode='predict')`` inside its
        ``@torch.no_grad()`` loops (:data:`~inplace_lint.torch_facts.ops.FRAMEWORK_NO_GRAD_METHODS`), so that
        arm runs with grad off, as ``predict`` does (mmagic's mattors post-process their predictions in place
        there)."""
        if self.ctx is None or not self.cls_qual or not self.qual.endswith(".forward") \
                or "predict" in self.self_called:
            return False
        compared = conditions.comparison(test)
        if compared is None:
            return False
        name, truth, op, constant = compared
        if not (truth and op == "==" and constant == "predict") or name not in self.params \
                or name in self.rebound_params or name in self.assigned:
            return False
        return self.ctx.framework_runs_without_grad(self.cls_qual, "predict")

    def param_condition(self, test: ast.expr) -> Optional[conditions.Cond]:
        """What ``test`` asks of one parameter of this function, not bound again here
        (:mod:`.conditions`): ``flag``, ``not flag``, ``strategy == 'rms'``, ``channels > 1``, ``mode in
        ('a', 'b')``, ``t is None``; None for anything else."""
        truth = True
        while isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
            truth, test = not truth, test.operand
        if isinstance(test, ast.Call) and isinstance(test.func, ast.Name) and test.func.id == "getattr" \
                and len(test.args) in (2, 3) and isinstance(test.args[0], ast.Name) and not test.keywords \
                and isinstance(test.args[1], ast.Constant) and isinstance(test.args[1].value, str):
            # `getattr(self, "sigmoid", False)` is `self.sigmoid` (ultralytics' MLP; its flag is always set)
            test = ast.Attribute(value=test.args[0], attr=test.args[1].value, ctx=ast.Load())
        compared = conditions.comparison(test)
        guarded = self._guarded_attribute(test, truth, compared)
        if guarded is not None:
            return guarded
        if compared is not None:
            name, sense, op, constant = compared
            truth = truth == sense
        elif isinstance(test, (ast.Name, ast.Attribute)):
            name, op, constant = dotted_name(test), "", None
        else:
            return None
        if name is not None and name.startswith(f"{self.self_name}.") and name.count(".") == 1 \
                and name[len(self.self_name) + 1:] in self.init_flags:
            # `if self.relu:` with `self.relu = relu` in `__init__`: decided by what built the instance
            attr = name[len(self.self_name) + 1:]
            param, position, default = self.init_flags[attr]
            return f"{conditions.INIT}{attr}:{param}:{position}", truth, default, op, constant
        if name not in self.params or name in self.rebound_params or name in self.assigned:
            return None
        return list(self.params).index(name), truth, self.param_default(name), op, constant

    def _guarded_attribute(self, test: ast.expr, truth: bool, compared) -> Optional[conditions.Cond]:
        """``if self.act:`` or ``if self.act is not None:`` with ``self.act`` None wherever ``__init__``'s
        ``activation`` is None (:func:`~.init_args.init_guards`): the branch needs ``activation`` not None.
        (Only that way round: ``self.act`` may be None for other values too, so ``not self.act`` says nothing.)"""
        if not self.init_guards or compared is not None:
            return None
        if isinstance(test, ast.Compare):
            compared = conditions.comparison(test, attributes=True)
            if compared is None or compared[2] != "is" or compared[3] is not None or compared[1] == truth:
                return None
            test = test.left
        elif not truth:
            return None
        name = dotted_name(test) if isinstance(test, ast.Attribute) else None
        attr = name[len(self.self_name) + 1:] if name and name.startswith(f"{self.self_name}.") \
            and name.count(".") == 1 else None
        if attr not in self.init_guards:
            return None
        param, position, default = self.init_guards[attr]
        return f"{conditions.INIT}{attr}:{param}:{position}", False, default, "is", None

    def submodule_builds(self, submodule: Optional[str], qual: str) -> tuple:
        """What ``self.<submodule>`` (running ``qual``) was built with: one dict of constant arguments per build in
        ``__init__`` (:func:`~.init_args.builder_facts`); none where
        unknown, or where the attribute is a subclass of the callee's class (``self.head = SigmoidMLP(d, 1)`` running
        MLP's forward: the constants map to the subclass's own ``__init__``, which may set the flag itself)."""
        built = self.builder_args.get(submodule) if submodule is not None else None
        builds = (built,) if built is not None else self.builder_alts.get(submodule, ()) if submodule else ()
        if builds and self.cls_qual \
                and self.ctx.attribute_class(self.cls_qual, submodule) not in (None, qual.rpartition(".")[0]):
            return ()
        return builds

    def implied_conditions(self, test: ast.expr) -> tuple:
        """What the body of ``if out is tensor:`` needs of a parameter beyond the test itself, with ``tensor`` a
        parameter annotated ``torch.Tensor``: ``out`` is no ``None`` there, so a call that leaves ``out=None`` does
        not run it (hf-deepali's ``round_decimals`` scales ``tensor`` in place only when it is the output)."""
        if not (isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], ast.Is)
                and isinstance(test.left, ast.Name) and isinstance(test.comparators[0], ast.Name)):
            return ()
        out = []
        for a, b in ((test.left.id, test.comparators[0].id), (test.comparators[0].id, test.left.id)):
            if a in self.params and b in self.params and a not in self.rebound_params and a not in self.assigned \
                    and b not in self.assigned and self.annotated_tensor(list(self.params).index(b)) \
                    and self.param_default(b) != (None,):  # (`tensor: Tensor = None` may be None)
                out.append((list(self.params).index(a), False, self.param_default(a), "is", None))
        return tuple(out)

    def param_name(self, index: Optional[int]) -> Optional[str]:
        """The name of this function's parameter ``index`` (None for another function's placeholder)."""
        return self.params[index] if index is not None and 0 <= index < len(self.params) else None

    def gated_params(self):
        """This function's parameters the path being walked proved need no grad (``if x.requires_grad: raise``,
        ``assert not x.requires_grad``)."""
        return self.nograd_keys.intersection(self.params) if self.nograd_keys and self.params else ()

    def from_gated_params(self, origins, gated) -> bool:
        """Every origin is one of the ``gated`` parameters, a view of one made since the test, or a guess about one
        (``a, b = x.chunk(2)`` after ``assert not x.requires_grad``): the write needs no autograd rule, whatever a
        caller passes (one passing a tensor that requires grad stops at the test)."""
        return bool(gated) and bool(origins) and all(
            o.root_text in gated or self.param_name(param_index(o)) in gated
            or (o.guess_param >= 0 and self.param_name(o.guess_param) in gated) for o in origins)

    def annotated_tensor(self, index: int) -> bool:
        """Parameter ``index`` of this function is a torch tensor by its annotation (``torch.Tensor``,
        ``th.Tensor``, a bare ``Tensor``; not another library's: ``ep.Tensor``
        of eagerpy, ``tf.Tensor``, whose ``+=`` may make a new object: foolbox's attacks, set AO), or, with no
        annotation, by what the function does with it (:func:`.param_evidence.tensor_used`: ``v.exp()``,
        ``torch.cos(f0 * t)``)."""
        every, annotation = self._param_annotation(index)
        if annotation is None:
            return index < len(every) and every[index].arg in self._tensor_used_params()
        dotted = dotted_name(annotation) if annotation is not None else None
        if dotted is None or dotted.rpartition(".")[2] != "Tensor":
            return False
        # `ep.Tensor` (eagerpy), `tf.Tensor`: another library's tensor, whose `+=` need not write in place
        qual, imported = qualify_dotted(dotted, self.names, lambda _: False)
        if not imported or qual.split(".")[0] == "torch":
            return True
        # `from .types import Tensor`: a project module's name (a re-export of torch's, or the project's own class)
        return self.ctx is not None and self.ctx.resolve(qual.rpartition(".")[0]) is not None

    def annotated_container(self, index: int) -> bool:
        """Parameter ``index`` is annotated as a list or a mapping (:func:`.param_evidence.container_annotation`)."""
        return param_evidence.container_annotation(self._param_annotation(index)[1])

    def plain_store(self, target: ast.expr) -> bool:
        """``target`` is an item assigned by the statement being walked, ``x[k] = v`` (not ``x[k] += v``, which adds
        in place to the stored tensor first), whose value calls no layer built with ``inplace=True`` (``x[k] =
        self.act(x[k])`` writes the stored tensor)."""
        stmt = self.stmt_stack[-1] if self.stmt_stack else None
        if not (isinstance(stmt, ast.Assign) and any(t is target for t in stmt.targets)
                or isinstance(stmt, ast.AnnAssign) and stmt.target is target):
            return False
        return not any(isinstance(n, ast.Call) and self.inplace_modules.get(dotted_name(n.func) or "")
                       for n in walk_ast(stmt.value))

    def container_store(self, write, arg: ast.expr) -> bool:
        """A callee's ``write`` (a :class:`~.summaries.ParamWrite`) stores an item into the container this call
        passes as ``arg``, and writes no tensor: the callee stores by a string key, or into a parameter annotated
        as a container (:attr:`~.summaries.ParamWrite.keyed`), or it assigns an item of the parameter itself
        (``x[p] = v``) and ``arg`` is a local name every binding here makes a list or a dict
        (:func:`.holders.list_or_dict`)."""
        if write.keyed:
            return True
        if write.kind is not WriteKind.SUBSCRIPT or write.op != "item assignment" or write.layer or write.steps \
                or not isinstance(arg, ast.Name):
            return False
        return arg.id not in self.params and holders.list_or_dict(self.facts(), arg.id)

    def _param_annotation(self, index: int):
        """This function's parameters (indexed as ``self.params``: ``*rest`` included) and parameter ``index``'s
        annotation (None without one)."""
        args = getattr(self.func, "args", None)
        every = parameters(args) if args is not None else []
        return every, every[index].annotation if index < len(every) else None

    def _tensor_used_params(self) -> frozenset:
        """This function's unannotated parameters, never bound again in it, that its body uses as tensors."""
        key = ("tensor-used",)
        if key not in self.local_cond_cache:
            args = getattr(self.func, "args", None)
            every = parameters(args) if args is not None else []
            # (a function outside a class taking `self` first is a method attached to a class elsewhere, crypten's
            # `reciprocal(self, ...)` set on its encrypted tensor: its `self` is that class's instance, whose
            # tensor-like methods are the class's own)
            receiver = every[0].arg if every and self.cls_qual is None and every[0].arg == "self" else None
            names = frozenset(a.arg for a in every if a.annotation is None and a.arg != self.self_name
                              and a.arg != receiver and a.arg not in self.rebound_params and a.arg not in self.assigned)
            self.local_cond_cache[key] = param_evidence.tensor_used(
                self.func, names, lambda d: qualify_dotted(d, self.names, self.is_local_name)[0]) if names \
                else frozenset()
        return self.local_cond_cache[key]

    def number_default(self, index: int) -> bool:
        """Parameter ``index`` defaults to a number or a bool literal (``scale=1.0``, ``enable_time=True``), and
        nothing here says it may be a tensor (an annotation naming ``Tensor``, ``Union[float, Tensor]`` too; a use as
        one; ``isinstance(p, torch.Tensor)``, ``torch.is_tensor(p)``): an augmented assignment on it rebinds a number
        unless a caller passes a tensor (:attr:`.summaries.ParamWrite.number`; docs/analysis.md)."""
        if index >= len(self.params) or self.annotated_tensor(index):
            return False
        default = self.param_default(self.params[index])
        name = self.params[index]
        annotation = self._param_annotation(index)[1]
        return bool(default) and type(default[0]) in (bool, int, float, complex) and not (
            annotation is not None and "Tensor" in ast.unparse(annotation)) and not any(
            isinstance(n, ast.Call) and last_name(n.func) in ("isinstance", "is_tensor") and n.args
            and isinstance(n.args[0], ast.Name) and n.args[0].id == name for n in walk_ast(self.func))

    def number_argument(self, node: ast.expr) -> bool:
        """What a call passes as ``node`` is taken as a number (for a callee's :attr:`.summaries.ParamWrite.number`):
        this function's own parameter with a number default (:meth:`number_default`), or a name nothing here knows
        as a tensor (not a bool tensor, not a torch op's result)."""
        if not isinstance(node, ast.Name):
            return False
        if node.id in self.params:
            return self.number_default(list(self.params).index(node.id))
        return node.id not in self.bool_names and not self._is_tensor_argument(node)

    def param_default(self, name: str) -> tuple:
        """``(value,)`` for a parameter's literal default, else ``()``."""
        args = getattr(self.func, "args", None)
        default = defaults(args).get(name) if args is not None else None
        return conditions.literal(default) if default is not None else ()

    def empty_return(self, node: ast.Return, value: frozenset) -> frozenset:
        """What ``return x`` hands back where ``x`` is empty (:meth:`empty_here`): an expanded view made here is
        dropped (no two elements of an empty tensor share memory), and the parameter's placeholder is marked
        (:attr:`StepKind.EMPTY`), so that an expanded view a caller passed is none there. Every other origin
        stays: autograd's checks (a saved output written, a view of a custom Function's output) still raise on
        an empty tensor, executed under torch 2.13 (a review's cases)."""
        if not value or not isinstance(node.value, ast.Name) or not self.empty_here(node.value.id, node):
            return value
        return frozenset(o.extend(Step(StepKind.EMPTY, "numel() == 0", node.lineno)) if param_index(o) is not None
                         else o for o in value if not o.has(StepKind.EXPAND))

    def empty_here(self, name: str, node: ast.stmt) -> bool:
        """``node`` (the statement being walked) runs only where the tensor ``name`` holds is empty: in the body of
        ``if x.numel() == 0:`` (``len(x) == 0``, ``x.shape[0] == 0``, ``x.size(0) == 0``, ``not x.numel()``, an
        operand of ``and``, every operand of ``or``), with no binding of ``name`` in that body before ``node``, in a
        loop around it, or by a nested function (``nonlocal``). A write reaches no element of such a tensor
        (deepvisiontools' box helpers return their argument only when it is empty, set BH)."""
        stack = self.stmt_stack
        for outer, inner in zip(stack, stack[1:]):
            if isinstance(outer, ast.If) and any(inner is s for s in outer.body) and _empty_test(outer.test, name):
                # (bound before it in that body, anywhere in a loop around it, or by a nested function: not empty)
                loops = [s for s in stack if isinstance(s, (ast.For, ast.AsyncFor, ast.While))]
                stores = [n.lineno for s in outer.body + loops for n in ast.walk(s)
                          if isinstance(n, ast.Name) and n.id == name and not isinstance(n.ctx, ast.Load)]
                return not any(line < node.lineno for line in stores) and not (loops and stores) \
                    and not any(isinstance(n, ast.Nonlocal) and name in n.names for n in ast.walk(self.func or outer))
        return False

    def set_class_facts(self, cls: ast.ClassDef) -> None:
        """What a class's own code says, for its methods' walk (:class:`~.own_class.OwnClassFacts`, each fact computed
        when a walk first reads it), with the names as they stand at the ``class`` statement."""
        local = frozenset(self.env) | frozenset(self.params) | frozenset(self.local_funcs) | frozenset(self.assigned)
        # (a copy: an import or binding further down the class body is the class's own, which its methods do not see)
        self.own_class = OwnClassFacts(cls, dict(self.names), local, self.layer_builders, self.stack_builders)


def _empty_test(test: ast.expr, name: str) -> bool:
    """``test`` holds only where ``name`` is empty (:meth:`ConditionsMixin.empty_here`)."""
    if isinstance(test, ast.BoolOp):  # (`a and b`: either says it; `a or b`: both must)
        return (any if isinstance(test.op, ast.And) else all)(_empty_test(v, name) for v in test.values)
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        return _size_of(test.operand, name)
    if isinstance(test, ast.Compare) and len(test.ops) == 1:
        left, op, right = test.left, test.ops[0], test.comparators[0]
        if isinstance(left, ast.Constant) and not isinstance(right, ast.Constant):
            left, right = right, left
            op = {ast.Lt: ast.Gt(), ast.Gt: ast.Lt(), ast.LtE: ast.GtE(), ast.GtE: ast.LtE()}.get(type(op), op)
        if not (isinstance(right, ast.Constant) and type(right.value) is int and _size_of(left, name)):
            return False
        return isinstance(op, ast.Eq) and right.value == 0 or isinstance(op, ast.Lt) and right.value == 1 \
            or isinstance(op, ast.LtE) and right.value == 0
    return False


def _size_of(node: ast.expr, name: str) -> bool:
    """``x.numel()``, ``x.nelement()``, ``len(x)``, ``x.shape[i]`` or ``x.size(i)`` of the name ``name``."""
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and isinstance(node.func.value, ast.Name) \
            and node.func.value.id == name and not node.keywords:
        return node.func.attr in ("numel", "nelement") and not node.args or node.func.attr == "size" \
            and len(node.args) == 1 and _int_index(node.args[0])
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "len" and len(node.args) == 1:
        return isinstance(node.args[0], ast.Name) and node.args[0].id == name
    return isinstance(node, ast.Subscript) and isinstance(node.value, ast.Attribute) and node.value.attr == "shape" \
        and isinstance(node.value.value, ast.Name) and node.value.value.id == name \
        and _int_index(node.slice)


def _int_index(node: ast.expr) -> bool:
    """``0``, ``-1``: a dimension written as an integer literal."""
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        node = node.operand
    return isinstance(node, ast.Constant) and type(node.value) is int
