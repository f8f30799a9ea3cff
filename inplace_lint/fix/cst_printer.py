"""The libcst printer: rewrite the statements that carry fixes where the text printer does not cover them.

Imported only when a file has a fix :mod:`.text_printer` does not cover (libcst's native parser costs a
noticeable start-up time); see :mod:`.attach`.
"""
from __future__ import annotations

from typing import Dict, List, Optional, Sequence, Set, Tuple

import libcst as cst

from ..torch_facts import ops
from ..findings import Finding, FixKind, RewriteForm, WriteKind
from .forms import guard_condition, scale_call
from ..analysis.fixplan.facts import module_names
from .imports import DTENSOR_MODULE, RUNTIME_MODULE, ImportNames
from .statements import Group, terminated


def render(groups: List[Group], newline: str, unit: str, style: str, memory_aware: bool,
           names: ImportNames) -> None:
    """Parse every group's statement (one libcst module for all indented ones), rewrite, and store
    each group's rebuilt lines in ``group.text``."""
    wrapped = [g for g in groups if g.indent]
    alone = [g for g in groups if not g.indent]
    if wrapped:
        code = "".join(f"if True:{newline}{g.indent}{terminated(g.snippet, newline)}" for g in wrapped)
        try:
            module = cst.parse_module(code)
            if len(module.body) != len(wrapped):
                raise ValueError("statement count")
            _rewrite(module, wrapped, newline, unit, style, memory_aware, names, wrapper=True)
        except (cst.ParserSyntaxError, ValueError, RecursionError):
            for group in wrapped:
                group.text, group.done = None, set()
            alone += wrapped  # parse them one by one, so one odd statement costs only its own fix
    for group in alone:
        prefix = f"if True:{newline}" if group.indent else ""
        try:
            module = cst.parse_module(prefix + group.indent + terminated(group.snippet, newline))
            _rewrite(module, [group], newline, unit, style, memory_aware, names, wrapper=bool(group.indent))
        except (cst.ParserSyntaxError, RecursionError):
            # never reached for a statement within fixplan.MAX_REWRITE_DEPTH (the fix is withdrawn before
            # any surface sees it); here only so that a bug costs one fix, not the file
            group.text, group.done = None, set()


def _rewrite(module: cst.Module, groups: List[Group], newline: str, unit: str, style: str,
             memory_aware: bool, names: ImportNames, wrapper: bool) -> None:
    if wrapper:  # a block whose indentation equals the parsed default has indent None: pin it
        module = module.with_changes(body=[
            w.with_changes(body=w.body.with_changes(indent=module.default_indent if w.body.indent is None
                                                    else w.body.indent))
            if isinstance(w, cst.If) and isinstance(w.body, cst.IndentedBlock) else w for w in module.body])
    module = module.with_changes(default_indent=unit, default_newline=newline)
    rewriter = _Rewriter(module, groups, style, memory_aware, names, wrapper)
    new = module.visit(rewriter)
    if wrapper:
        for group, node in zip(groups, new.body):
            if not group.done:
                continue
            code = new.code_for_node(node)
            body = code.split(newline, 1)[1] if newline in code else ""
            group.text = (group.prefix + newline if group.prefix else "") + body
    elif groups and groups[0].done:
        groups[0].text = new.code


# --------------------------------------------------------------------------- syntax

_LITERALS = (cst.Integer, cst.Float, cst.Imaginary, cst.SimpleString, cst.ConcatenatedString)


def _is_literal(node: cst.BaseExpression) -> bool:
    return isinstance(node, _LITERALS) or (isinstance(node, cst.Name) and node.value in ("True", "False", "None"))


def _constant(node: cst.BaseExpression) -> bool:
    """A literal, ``...`` or a unary operator on a literal (``-1``): never a tensor, never held
    (:func:`inplace_lint.fix.text_printer._ast_constant` on ``ast``)."""
    return _is_literal(node) or isinstance(node, cst.Ellipsis) or (
        isinstance(node, cst.UnaryOperation) and _is_literal(node.expression))


def _comma() -> cst.Comma:
    return cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))


def _without(args: Sequence[cst.Arg], index: int) -> List[cst.Arg]:
    """``args`` minus the one at ``index``; the new last argument takes over the removed one's comma."""
    kept = [a for i, a in enumerate(args) if i != index]
    if kept and index == len(args) - 1:
        kept[-1] = kept[-1].with_changes(comma=args[index].comma)
    return kept


def _assign(name: str, value: cst.BaseExpression) -> cst.SimpleStatementLine:
    return cst.SimpleStatementLine(body=[cst.Assign(targets=[cst.AssignTarget(cst.Name(name))], value=value)])


def _clone(name: str) -> cst.Call:
    return cst.Call(func=cst.Attribute(value=cst.Name(name), attr=cst.Name("clone")))


def _dotted(node: cst.BaseExpression) -> Optional[str]:
    if isinstance(node, cst.Name):
        return node.value
    if isinstance(node, cst.Attribute):
        head = _dotted(node.value)
        return None if head is None else f"{head}.{node.attr.value}"
    return None


def _operand_roots(node: cst.BaseExpression, skip: Set[str]) -> List[str]:
    """The names (or attribute chains) whose being a DTensor makes operand ``node`` a DTensor:
    ``temperature`` for ``temperature.clamp(min=1e-8).unsqueeze(-1)``, both sides of ``a + b``.
    Literals, free-function results (``torch.ones(3)``) and module attributes (``math.pi``) have none."""
    if isinstance(node, _LITERALS) or (isinstance(node, cst.Name) and node.value in ("True", "False", "None")):
        return []
    if isinstance(node, (cst.BinaryOperation, cst.BooleanOperation)):
        return _operand_roots(node.left, skip) + _operand_roots(node.right, skip)
    if isinstance(node, cst.UnaryOperation):
        return _operand_roots(node.expression, skip)
    if isinstance(node, cst.Comparison):
        return _operand_roots(node.left, skip)
    while True:
        if isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) and _dotted(node.func.value) is None:
            node = node.func.value  # a method chain on an expression
        elif isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) and \
                (_dotted(node.func.value) or "").split(".")[0] not in skip:
            node = node.func.value  # temperature.clamp(...): a method of a tensor name
        elif isinstance(node, cst.Subscript):
            node = node.value
        else:
            break
    dotted = _dotted(node)
    if dotted is None or dotted.split(".")[0] in skip:
        return []
    return [dotted]


class _Rewriter(cst.CSTTransformer):
    """Rewrites the planned writes of each group; the original argument nodes (with their comments
    and line breaks) are reused, never re-typed."""

    def __init__(self, module: cst.Module, groups: List[Group], style: str, memory_aware: bool,
                 names: ImportNames, wrapper: bool) -> None:
        super().__init__()
        self.module = module
        self.style = style
        self.memory_aware = memory_aware
        self.names = names
        self.by_node: Dict[int, Group] = {}
        top = module.body
        for group, node in zip(groups, top):
            self.by_node[id(node)] = group
        self.wrapper = wrapper
        self.group: Optional[Group] = groups[0] if not wrapper and groups else None
        self.finding: Optional[Finding] = None
        self._hoisted: List[Tuple[bool, List[cst.BaseStatement]]] = []
        self._modules = module_names(names.tree)

    # ---- helpers

    def code(self, node: cst.CSTNode) -> str:
        return self.module.code_for_node(node)

    def use(self, module: str, name: str) -> str:
        local, _ = self.names.get(module, name)
        if self.group is not None and self.finding is not None:
            self.group.imports.setdefault(id(self.finding), set()).add((module, name))
        return local

    def hold(self, name: str, values: Sequence[cst.BaseExpression]) -> Tuple[List[cst.BaseStatement], List[cst.BaseExpression]]:
        """Each operand expression that is neither a literal nor a name, evaluated once into a temporary
        (``_x_operand = rw.sum(-1, keepdim=True)``), in order, so the guard can test what it is at run time
        and a gather of ``name`` cannot change an operand computed from it. Returns the statements and
        the operands to use instead (names and literals are kept)."""
        held: List[cst.BaseStatement] = []
        out: List[cst.BaseExpression] = []
        for value in values:
            if _constant(value) or isinstance(value, cst.Name):
                out.append(value)
                continue
            temp = self.names.temp(name, len(held) + 1)
            if ("\n" in self.code(value) or isinstance(value, cst.NamedExpr)) and not value.lpar:
                # (continuation lines need brackets of their own, and so does a walrus: `_x_operand = (s := t)`)
                value = value.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()])
            held.append(_assign(temp, value))
            out.append(cst.Name(temp))
        return held, out

    def guard(self, name: str, operands: Sequence[cst.BaseExpression] = ()) -> List[cst.BaseStatement]:
        """The DTensor guard: gather the target before a mixed op, deciding on the operands at run time
        (:func:`inplace_lint.fix.forms.guard_condition`); none when every operand is a literal or the
        target itself (the op works on a DTensor as it is), or when the project's torch has no DTensor."""
        if self.names.dtensor_form == "none" and self.style != "runtime":
            return []
        loose = [o for o in operands if not _constant(o)]
        if operands and not loose:
            return []
        bare = [o.value for o in loose] if all(isinstance(o, cst.Name) for o in loose) else None
        if bare is not None:
            bare = list(dict.fromkeys(b for b in bare if b != name))
            if loose and not bare:
                return []  # x.mul_(x): both sides are the same tensor
        # runtime style: the guard's class comes from the runtime (a stand-in on a torch without DTensor),
        # so the rewritten module imports nothing torch may lack; an existing real import is reused
        local, imported = self.names.get(DTENSOR_MODULE, "DTensor")
        if self.style == "runtime" and not imported:
            dt = self.use(RUNTIME_MODULE, "DTensor")
        else:
            dt = self.use(DTENSOR_MODULE, "DTensor")
        roots: List[str] = []
        if bare is None:  # an operand that could not be held in a name: test what it is computed from
            for operand in operands:
                for root in _operand_roots(operand, self._modules | {dt}):
                    if root != name and root not in roots:
                        roots.append(root)
        condition = guard_condition(name, dt, roots, bare)
        unit = self.module.default_indent
        return [cst.parse_statement(f"if {condition}:\n{unit}{name} = {name}.full_tensor()\n",
                                    config=self.module.config_for_parsing)]

    def method_statements(self, name: str, method: str, call: Optional[cst.Call], args: Sequence[cst.Arg],
                          original: Optional[cst.BaseStatement]) -> Optional[List[cst.BaseStatement]]:
        """Statements equivalent to ``name.<method>(args)`` that rebind ``name`` instead of writing it."""
        ws_before_args = call.whitespace_before_args if call is not None else cst.SimpleWhitespace("")
        if self.style == "runtime":
            func = self.use(RUNTIME_MODULE, "out_of_place")
            head = [cst.Arg(cst.Name(name), comma=_comma()),
                    cst.Arg(cst.SimpleString(f'"{method}"'), comma=_comma() if args else cst.MaybeSentinel.DEFAULT)]
            rest = list(args)
            if self.memory_aware:
                if rest and rest[-1].comma == cst.MaybeSentinel.DEFAULT:
                    rest[-1] = rest[-1].with_changes(comma=_comma())
                elif not rest:
                    head[-1] = head[-1].with_changes(comma=_comma())
                no_space = cst.AssignEqual(whitespace_before=cst.SimpleWhitespace(""),
                                           whitespace_after=cst.SimpleWhitespace(""))
                rest.append(cst.Arg(cst.SimpleString('"auto"'), keyword=cst.Name("inplace"), equal=no_space))
            value = cst.Call(func=cst.Name(func), args=head + rest, whitespace_before_args=ws_before_args)
            return [_assign(name, value)]
        operands = [a.value for a in args]
        held: List[cst.BaseStatement] = []
        if self.names.dtensor_form != "none" and not any(a.star for a in args):
            held, operands = self.hold(name, operands)
            args = [a.with_changes(value=v) for a, v in zip(args, operands)]
        needs_guard = any(not _constant(a) for a in operands)
        guard = held + (self.guard(name, operands) if needs_guard else [])
        if self.finding.fix.recipe.form is RewriteForm.CLONE_FIRST and original is not None:
            if held:  # the original statement, with its operands read from the temporaries
                call = original.body[0].value if isinstance(original.body[0], cst.Expr) else None
                if not isinstance(call, cst.Call):
                    return None
                original = original.with_changes(body=[original.body[0].with_changes(
                    value=call.with_changes(args=[a.with_changes(value=v) for a, v in
                                                  zip(call.args, ([call.args[0].value] if self._is_unbound_method(call) else []) + operands)]))])
            return guard + [cst.parse_statement(f"{name} = {name}.clone()\n", config=self.module.config_for_parsing),
                            original]
        # the op itself, on a copy: same values, dtype and errors as the in-place original
        value = cst.Call(func=cst.Attribute(value=_clone(name), attr=cst.Name(method)), args=list(args),
                         whitespace_before_args=ws_before_args)
        return guard + [_assign(name, value)]

    def statements_for(self, finding: Finding, node: cst.CSTNode,
                       original: Optional[cst.BaseStatement]) -> Optional[List[cst.BaseStatement]]:
        """Statements replacing the write (``node`` is the Call, AugAssign or Subscript target);
        ``original`` is the whole statement (None when the write is used as a value)."""
        self.finding = finding
        name = finding.target
        recipe = finding.fix.recipe
        form = recipe.form
        if self.style == "runtime" and recipe.scaling is not None and original is not None:
            # the temperature idiom (planned by the analysis): the corrected scaling routine
            call = scale_call(self.use(RUNTIME_MODULE, "scale_logits"), name, finding.fix, self.memory_aware,
                              self.group.scalings[id(finding)])
            return [_assign(name, cst.parse_expression(call))]
        if recipe.method and isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute):
            args = list(node.args)
            if self._is_unbound_method(node):  # torch.Tensor.div_(x, t)
                args = args[1:]
            return self.method_statements(name, recipe.method, node, args, original)
        if recipe.method and isinstance(node, cst.AugAssign):
            return self.method_statements(name, recipe.method, None, [cst.Arg(node.value)], original)
        if form is RewriteForm.CLONE_FIRST and not recipe.method and original is not None:  # item assignment
            operands: List[cst.BaseExpression] = []
            held: List[cst.BaseStatement] = []
            small = original.body[0] if isinstance(original, cst.SimpleStatementLine) else None
            if isinstance(small, (cst.Assign, cst.AugAssign)):
                target = small.targets[0].target if isinstance(small, cst.Assign) else small.target
                if not isinstance(target, cst.Subscript):
                    return None
                index = [i for i, e in enumerate(target.slice) if isinstance(e.slice, cst.Index)]
                keys = [target.slice[i].slice.value for i in index]
                # `x[i] = v` evaluates v first, `x[i] += v` the index first: the temporaries keep that order
                augmented = isinstance(small, cst.AugAssign)
                operands = keys + [small.value] if augmented else [small.value] + keys
                if self.names.dtensor_form != "none" or self.style == "runtime":
                    held, operands = self.hold(name, operands)
                    value, keys = (operands[-1], operands[:-1]) if augmented else (operands[0], operands[1:])
                    elements = list(target.slice)
                    for i, key in zip(index, keys):
                        elements[i] = elements[i].with_changes(slice=elements[i].slice.with_changes(value=key))
                    target = target.with_changes(slice=elements)
                    small = small.with_changes(value=value, **(
                        {"targets": [small.targets[0].with_changes(target=target)]} if isinstance(small, cst.Assign)
                        else {"target": target}))
                    original = original.with_changes(body=[small])
            return held + self.guard(name, operands) + [
                cst.parse_statement(f"{name} = {name}.clone()\n", config=self.module.config_for_parsing), original]
        if form is RewriteForm.FUNCTION_ON_COPY and isinstance(node, cst.Call) and node.args:
            # torch.relu_(x) -> torch.relu_(x.clone()): the same function on a copy
            first = node.args[0].with_changes(value=_clone(name))
            return [_assign(name, node.with_changes(args=[first] + list(node.args[1:])))]
        if form is RewriteForm.DROP_INPLACE_FLAG and isinstance(node, cst.Call):
            func_name = node.func.attr.value if isinstance(node.func, cst.Attribute) else getattr(node.func, "value", "")
            where = ops.inplace_argument(func_name, sum(1 for a in node.args if a.keyword is None and not a.star),
                                         [a.keyword.value for a in node.args if a.keyword is not None])
            if where is None:
                return None
            index = where if isinstance(where, int) else next(
                i for i, a in enumerate(node.args) if a.keyword is not None and a.keyword.value == "inplace")
            return [_assign(name, node.with_changes(args=_without(node.args, index)))]
        if form is RewriteForm.FRESH_OUT and isinstance(node, cst.Call):
            index = next((i for i, a in enumerate(node.args) if a.keyword is not None and a.keyword.value == "out"), None)
            if index is None:
                return None
            # out= a fresh tensor like the target: the same dtype check and resize rules as the original
            # (the plan withdrew the fix where the module does not import `torch`: fixplan.withdraw_unwritable)
            empty = cst.parse_expression(f"torch.empty_like({name})")
            args = list(node.args)
            args[index] = args[index].with_changes(value=empty)
            return [_assign(name, node.with_changes(args=args))]
        return None

    @staticmethod
    def _is_unbound_method(call: cst.Call) -> bool:
        func = call.func
        if not isinstance(func, cst.Attribute):
            return False
        value = func.value
        if isinstance(value, cst.Name):
            return value.value == "Tensor"
        return isinstance(value, cst.Attribute) and value.attr.value == "Tensor" and \
            isinstance(value.value, cst.Name) and value.value.value == "torch"

    # ---- which group

    def visit_If(self, node: cst.If) -> None:
        if self.wrapper and id(node) in self.by_node:
            self.group = self.by_node[id(node)]

    # ---- hoisting (a write used as a value)

    def visit_SimpleStatementLine(self, node: cst.SimpleStatementLine) -> None:
        # hoisting moves statements before the whole line: only when the line holds one statement
        self._hoisted.append((len(node.body) == 1, []))

    def leave_Call(self, original: cst.Call, updated: cst.Call) -> cst.BaseExpression:
        group = self.group
        if group is None or not self._hoisted or not self._hoisted[-1][0]:
            return updated
        hoists = [f for f in group.findings if f.fix.kind is FixKind.HOIST and id(f) not in group.done]
        if not hoists:
            return updated
        text = self.code(original.with_changes(lpar=(), rpar=()))
        finding = next((f for f in hoists if group.segments.get(id(f)) == text), None)
        if finding is None:
            return updated
        statements = self.statements_for(finding, updated, None)
        if not statements:
            return updated
        self._hoisted[-1][1].extend(statements)
        group.done.add(id(finding))
        return cst.Name(finding.target)

    # ---- whole-statement writes

    def leave_SimpleStatementLine(self, original: cst.SimpleStatementLine, updated: cst.SimpleStatementLine):
        hoisted = self._hoisted.pop()[1] if self._hoisted else []
        group = self.group
        replacement: Optional[List[cst.BaseStatement]] = None
        statement = [f for f in group.findings if f.fix.kind is FixKind.STATEMENT and id(f) not in group.done] \
            if group is not None else []
        if statement and len(original.body) == 1 and self._hoisted == []:
            finding = statement[0]
            small = updated.body[0]
            node: Optional[cst.CSTNode] = None
            if isinstance(small, cst.Expr) and isinstance(small.value, cst.Call):
                node = small.value
            elif isinstance(small, cst.AugAssign):
                node = small
            elif isinstance(small, cst.Assign) and len(small.targets) == 1:
                node = small.targets[0].target if finding.write_kind is WriteKind.SUBSCRIPT else small.value
            if node is not None:
                bare = updated.with_changes(leading_lines=(), trailing_whitespace=cst.TrailingWhitespace())
                replacement = self.statements_for(finding, node, bare)
                if replacement:
                    group.done.add(id(finding))
                else:
                    replacement = None
        if replacement is None:
            if not hoisted:
                return updated
            replacement = [updated.with_changes(leading_lines=())]
        replacement = hoisted + replacement
        replacement[0] = replacement[0].with_changes(leading_lines=original.leading_lines)
        if isinstance(replacement[-1], cst.SimpleStatementLine):
            replacement[-1] = replacement[-1].with_changes(trailing_whitespace=original.trailing_whitespace)
        return cst.FlattenSentinel(replacement)
