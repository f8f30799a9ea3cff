"""Grad mode: which contexts and decorators turn autograd off, and which code is not PyTorch code at all.

Within a function the interpreter tracks ``with torch.no_grad():`` blocks and
grad-off decorators; across functions the project pass marks a function grad-off
when every in-project call of it runs with grad off (:mod:`.project`).
"""
from __future__ import annotations

import ast
from typing import Optional, Tuple

from ..torch_facts import ops
from .astutil import dotted_name, is_false, is_true, kw, last_name, walk_ast

#: ``triton`` kernels are not PyTorch code (``x *= s`` there is a block value)
_TRITON_DECORATORS = frozenset({"jit", "autotune", "heuristics"})
#: methods autograd runs with grad off in a ``torch.autograd.Function`` subclass
AUTOGRAD_FUNCTION_METHODS = frozenset({"forward", "backward", "setup_context", "jvp", "vjp"})


def training_test(test: ast.expr) -> Optional[bool]:
    """True for ``self.training`` (any ``X.training``), False for ``not X.training``, else None: a branch a
    module takes only in eval mode chose its in-place op for inference (``x.log1p() if self.training
    else x.log1p_()``)."""
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        inner = training_test(test.operand)
        return None if inner is None else not inner
    if isinstance(test, ast.Attribute) and test.attr == "training":
        return True
    return None


def training_arms(test: ast.expr) -> Tuple[Optional[bool], Optional[bool]]:
    """What ``if test:`` says of the mode in each arm: (body, else), each True (training only), False (eval
    mode only) or None. ``not self.training and prefilter`` runs its body in eval mode only (its else in
    either); ``self.training or force`` runs its else in eval mode only."""
    plain = training_test(test)
    if plain is not None:
        return plain, not plain
    if isinstance(test, ast.BoolOp):
        parts = [training_test(v) for v in test.values]
        if isinstance(test.op, ast.And):
            return (False if False in parts else True if True in parts else None), None
        return None, (False if True in parts else True if False in parts else None)
    return None, None


#: how torch is imported (`import torch`, `import torch as th`): a grad-mode test is called through one
_TORCH_HEADS = frozenset({"torch", "th", "pt"})


def grad_enabled_test(test: ast.expr) -> Optional[bool]:
    """True for ``torch.is_grad_enabled()`` (any alias, also ``torch.is_inference_mode_enabled()`` negated),
    False for its negation, else None: the branch where it is false runs with grad off."""
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        inner = grad_enabled_test(test.operand)
        return None if inner is None else not inner
    if isinstance(test, ast.Call) and not test.args and (
            isinstance(test.func, ast.Name) or (dotted_name(test.func) or "").split(".")[0] in _TORCH_HEADS):
        # (`cfg.is_grad_enabled()` is the project's own method, not torch's)
        name = last_name(test.func)
        if name == "is_grad_enabled":
            return True
        if name == "is_inference_mode_enabled":
            return False
    return None


def grad_off_arms(test: ast.expr, flags=frozenset()) -> Tuple[bool, bool]:
    """Whether each arm of ``if test:`` runs with grad off: (body, else). ``flags`` are local names true only
    with grad off (:func:`is_grad_off_flag`). ``not torch.is_grad_enabled()`` and ``not (self.training or
    torch.is_grad_enabled())`` turn the body off; ``torch.is_grad_enabled() or force`` the else; ``flag and
    x`` the body (docs/pytorch-facts.md#grad-off)."""
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        body, orelse = grad_off_arms(test.operand, flags)
        return orelse, body
    if isinstance(test, ast.Name):
        return test.id in flags, False
    if isinstance(test, ast.BoolOp):
        parts = [grad_off_arms(v, flags) for v in test.values]
        if isinstance(test.op, ast.And):  # the body needs every part true; the else, one part false
            return any(b for b, _ in parts), all(e for _, e in parts)
        return all(b for b, _ in parts), any(e for _, e in parts)
    enabled = grad_enabled_test(test)
    return enabled is False, enabled is True


def is_grad_off_flag(value: ast.expr, flags=frozenset()) -> bool:
    """``value`` is true only with grad off (or is ``False``): a name bound to it may stand in the test of a
    branch, here or in a function it is passed to, whose body then runs with grad off. protenix's
    ``inplace_safe = not (self.training or torch.is_grad_enabled()) and not disable_inplace``."""
    if isinstance(value, ast.Constant):
        return value.value is False
    return grad_off_arms(value, flags)[0]


def requires_grad_test(test: ast.expr) -> Optional[tuple]:
    """(``"x"``, True) for ``x.requires_grad`` (a name or dotted name), (``"x"``, False) for its negation,
    else None: in the branch where it is false, ``x`` needs no grad (docs/pytorch-facts.md#grad-off)."""
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        inner = requires_grad_test(test.operand)
        return None if inner is None else (inner[0], not inner[1])
    if isinstance(test, ast.Attribute) and test.attr == "requires_grad":
        key = dotted_name(test.value)
        if key is not None:
            return key, True
    return None


def requires_grad_arms(test: ast.expr) -> Tuple[Optional[tuple], Optional[tuple]]:
    """What ``if test:`` says of ``x.requires_grad`` in each arm: (body, else), each ``(key, flag)`` from
    :func:`requires_grad_test` where ``key`` needs no grad in that arm, or None. ``use_cache and not
    h.requires_grad`` runs its body with ``h`` needing no grad (its else says nothing)."""
    plain = requires_grad_test(test)
    if plain is not None:
        return (plain if not plain[1] else None), (plain if plain[1] else None)
    if isinstance(test, ast.BoolOp):
        parts = [requires_grad_test(v) for v in test.values]
        if isinstance(test.op, ast.And):
            return next((p for p in parts if p is not None and not p[1]), None), None
        return None, next((p for p in parts if p is not None and p[1]), None)
    return None, None


def ends_flow(body) -> bool:
    """The block always leaves (``return``/``raise``/``continue``/``break`` last): what follows an ``if`` with
    such a body and no ``else`` runs only when the test is false."""
    return bool(body) and isinstance(body[-1], (ast.Return, ast.Raise, ast.Continue, ast.Break))


def leaves_function(body) -> bool:
    """The block always leaves the function (``return``/``raise`` last): what follows runs only when the test
    is false, for the rest of the function (a ``break``/``continue`` leaves only the loop, whose later
    statements, and what follows the loop, run either way)."""
    return bool(body) and isinstance(body[-1], (ast.Return, ast.Raise))


#: every method some framework runs with grad off (``ops.FRAMEWORK_NO_GRAD_METHODS``' values)
_FRAMEWORK_METHODS = frozenset().union(*ops.FRAMEWORK_NO_GRAD_METHODS.values())


def framework_no_grad(ctx, cls_qual: str, func: ast.AST, self_called) -> bool:
    """Method ``func`` of class ``cls_qual`` runs with grad off by its framework's contract
    (:meth:`~.resolve.Resolver.framework_runs_without_grad`), and nothing here says otherwise: it does not turn
    grad on itself, and the class's own code (``self_called``: outside ``forward``) does not call it too."""
    return func.name not in self_called and ctx.framework_runs_without_grad(cls_qual, func.name) \
        and not turns_grad_on(func)


def methods_called_on_self(cls: ast.ClassDef, ctx, cls_qual: str) -> frozenset:
    """The names of the methods the class's own methods other than ``forward`` call as ``self.<name>(...)``
    (``loss()`` calling ``self.predict(...)`` runs ``predict`` in training, with grad on); asked only of a class
    a framework runs (:func:`framework_no_grad`), empty for any other."""
    if ctx is None or not any(ctx.framework_runs_without_grad(cls_qual, m) for m in _FRAMEWORK_METHODS):
        return frozenset()
    out = set()
    for item in cls.body:
        if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)) and item.name != "forward" and item.args.args:
            me = item.args.args[0].arg
            for n in walk_ast(item):
                if not isinstance(n, ast.Call):
                    continue
                if isinstance(n.func, ast.Attribute) and isinstance(n.func.value, ast.Name) \
                        and n.func.value.id == me and n.func.attr != item.name:
                    out.add(n.func.attr)
                if _calls_self(n, me) and any(k.arg == "mode" and isinstance(k.value, ast.Constant)
                                              and k.value.value == "predict" for k in n.keywords):
                    out.add("predict")  # `self(inputs, mode='predict')` in a `train_step` runs that arm with grad
    return frozenset(out)


def _calls_self(call: ast.Call, me: str) -> bool:
    """``self(...)`` or ``self.forward(...)``."""
    func = call.func
    return (isinstance(func, ast.Name) and func.id == me) or (
        isinstance(func, ast.Attribute) and func.attr == "forward" and isinstance(func.value, ast.Name)
        and func.value.id == me)


def turns_grad_on(func: ast.AST) -> bool:
    """The function's body may turn grad on itself (``with torch.enable_grad():``, ``torch.set_grad_enabled(True)``,
    test-time adaptation inside ``predict``): a grad-off mode it is run in does not hold throughout."""
    return any(isinstance(n, ast.Call) and last_name(n.func) in ("enable_grad", "set_grad_enabled")
               for n in walk_ast(func))


#: context managers that set the grad mode inside them (the names :func:`grad_mode_of` reads, whatever their
#: arguments): a flag made outside says nothing of the grad inside
GRAD_CONTEXTS = ops.NO_GRAD_CONTEXTS | {ops.SET_GRAD_CONTEXT, ops.ENABLE_GRAD_CONTEXT}
#: calls that, as statements, set the grad mode for what follows (a flag made before says nothing after them)
GRAD_MODE_SETTERS = frozenset({ops.SET_GRAD_CONTEXT, "_set_grad_enabled", "set_inference_mode"})


def grad_mode_of(node: ast.expr) -> Optional[bool]:
    """False for ``torch.no_grad()``-like contexts/decorators, True for ``enable_grad()``, None otherwise."""
    call = node if isinstance(node, ast.Call) else None
    name = last_name(call.func if call else node)
    if name in ops.NO_GRAD_CONTEXTS:
        if call and (call.args and is_false(call.args[0]) or is_false(kw(call, "mode"))):
            return None  # inference_mode(False)
        return False
    if name == ops.SET_GRAD_CONTEXT and call and call.args:
        if is_false(call.args[0]):
            return False
        if is_true(call.args[0]):
            return True
    if name == ops.ENABLE_GRAD_CONTEXT:
        return True
    return None


def is_triton_kernel(fn: ast.AST) -> bool:
    for dec in getattr(fn, "decorator_list", ()):
        target = dec.func if isinstance(dec, ast.Call) else dec
        name = dotted_name(target) or ""
        if name.split(".")[0] in ("triton", "tl") or name in _TRITON_DECORATORS:
            return True
    return False


def class_runs_without_grad(cls: ast.ClassDef) -> bool:
    """A custom autograd ``Function`` (forward/backward run with grad off) or an optimizer.

    Optimizers update parameters under ``torch.no_grad()`` (``torch.optim``'s own ``step``
    methods are wrapped so); their state (``exp_avg_sq``) never requires grad.
    """
    return any(last_name(b) in ("Function", "Optimizer") or (last_name(b) or "").endswith("Optimizer")
               for b in cls.bases)


def is_autograd_function(cls: ast.ClassDef) -> bool:
    return any(last_name(b) == "Function" for b in cls.bases)
