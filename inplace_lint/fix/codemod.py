"""The codemod: rewrite in-place writes found by the engine to out-of-place form (libcst).

The engine decides which findings have a fix and whether it is safe
(:mod:`inplace_lint.fixplan`); this module only writes the syntax, keeping every
other byte of the file (comments, blank lines, quotes, CRLF, a BOM, an encoding
cookie) as it was. Only files with findings are parsed with libcst.

Two styles (``--style``):

- ``runtime`` (default): one readable line that calls :func:`inplace_lint.runtime.out_of_place`,
  which keeps the in-place op's dtype and gathers a ``DTensor`` operand mix:
  ``x = out_of_place(x, "div_", t)``. Needs this package (and torch) where the code runs.
- ``inline``: plain torch, no dependency, like the upstream verl fix (PR 6935)::

      if isinstance(x, DTensor):
          x = x.full_tensor()
      x = (x / t).to(x.dtype)

  ``.to(x.dtype)`` keeps the in-place op's dtype (``x / t`` promotes bf16 by fp32 to fp32);
  the guard and the out-of-place op go together, since a guard followed by the original
  in-place op still raises (``full_tensor()`` returns a view made in a custom Function).

Ops with no out-of-place twin (``copy_``, ``zero_``, ``fill_``, random fills) and item
assignment get ``x = x.clone()`` first: correct, at the cost of one copy.

Also runnable as ``python -m libcst.tool codemod -x inplace_lint.fix.codemod.InplaceToOutOfPlace PATH``.
"""
from __future__ import annotations

import argparse
import ast
import os
import re
import tempfile
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Sequence, Tuple

import libcst as cst
from libcst.codemod import CodemodContext, VisitorBasedCodemodCommand
from libcst.codemod.visitors import AddImportsVisitor
from libcst.metadata import PositionProvider

from .. import config
from ..analysis import ops
from ..pipeline import check_source
from ..config import DEFAULT_SETTINGS, Settings
from ..adapters.files import decode
from ..findings import Applicability, Finding, FixKind, WriteKind

STYLES = ("runtime", "inline")
RUNTIME_MODULE = "inplace_lint.runtime"
DTENSOR_MODULE = "torch.distributed.tensor"

#: in-place method -> binary operator of its out-of-place twin (one positional argument, no keywords)
_OPERATORS = {
    "add_": "+", "sub_": "-", "mul_": "*", "div_": "/", "true_divide_": "/", "floor_divide_": "//",
    "remainder_": "%", "pow_": "**", "bitwise_and_": "&", "bitwise_or_": "|", "bitwise_xor_": "^",
    "bitwise_left_shift_": "<<", "bitwise_right_shift_": ">>",
}


@dataclass
class FixResult:
    """What ``fix`` did to one file. ``new_source`` is None when nothing changed."""

    path: str
    applied: List[Finding] = field(default_factory=list)
    unsafe_skipped: List[Finding] = field(default_factory=list)
    #: findings with no correct out-of-place form (or one this file's layout does not allow)
    unfixed: List[Finding] = field(default_factory=list)
    new_source: Optional[str] = None
    old_source: Optional[str] = None
    error: Optional[str] = None
    written: bool = False

    @property
    def remaining(self) -> List[Finding]:
        return self.unsafe_skipped + self.unfixed


# --------------------------------------------------------------------------- the libcst command


class InplaceToOutOfPlace(VisitorBasedCodemodCommand):
    """Rewrite in-place writes on views and model outputs to out-of-place form (inplace-lint)."""

    DESCRIPTION = "Rewrite in-place PyTorch ops on views and model outputs to out-of-place form."

    def __init__(self, context: CodemodContext, style: str = "runtime", unsafe_fixes: bool = False,
                 settings: Optional[Settings] = None, select: Sequence[str] = (),
                 ignore: Sequence[str] = (), memory_aware: bool = False,
                 only: Optional[Tuple[int, int]] = None) -> None:
        super().__init__(context)
        self.memory_aware = memory_aware
        #: fix only the finding at this (line, col): one quick fix, one JSON ``fix.edits``
        self.only = only
        if style not in STYLES:
            raise ValueError(f"style must be one of {STYLES}, got {style!r}")
        self.style = style
        self.unsafe_fixes = unsafe_fixes
        self.settings = settings
        self.select, self.ignore = list(select), list(ignore)
        self.result = FixResult(context.filename or "<string>")

    @staticmethod
    def add_args(arg_parser: argparse.ArgumentParser) -> None:
        arg_parser.add_argument("--style", choices=STYLES, default="runtime",
                                help="runtime: call inplace_lint.runtime; inline: plain torch")
        arg_parser.add_argument("--unsafe-fixes", action="store_true", default=False,
                                help="also apply fixes that other readers of the tensor could notice")
        arg_parser.add_argument("--memory-aware", action="store_true", default=False,
                                help='runtime style: pass inplace="auto" (in place wherever PyTorch allows it)')

    def transform_module_impl(self, tree: cst.Module) -> cst.Module:
        settings = self.settings
        if settings is None:  # run by libcst.tool: read the project's configuration
            start = os.path.dirname(os.path.abspath(self.context.filename or ".")) or "."
            import pathlib

            settings, file_cfg, _ = config.load(pathlib.Path(start))
            self.select = self.select or file_cfg.get("select", [])
            self.ignore = self.ignore or file_cfg.get("ignore", [])
        code = tree.code
        checked = check_source(code, self.result.path, settings, self.select, self.ignore)
        if checked.error:
            raise SyntaxError(checked.error)
        todo: List[Finding] = []
        for finding in checked.findings:
            if self.only is not None and (finding.line, finding.col) != self.only:
                continue
            if _applicable(finding, self.unsafe_fixes):
                todo.append(finding)
            else:
                (self.result.unfixed if finding.fix is None else self.result.unsafe_skipped).append(finding)
        if not todo:
            return tree
        rewriter = _Rewriter(tree, code, todo, self.style, self.memory_aware)
        new_tree = cst.MetadataWrapper(tree, unsafe_skip_copy=True).visit(rewriter)
        self.result.applied.extend(f for f in todo if id(f) in rewriter.done)
        self.result.unfixed.extend(f for f in todo if id(f) not in rewriter.done)
        for module, obj in sorted(rewriter.imports):
            AddImportsVisitor.add_needed_import(self.context, module, obj)
        return new_tree


# --------------------------------------------------------------------------- syntax


def _split_lines(code: str) -> List[str]:
    """Lines as ``ast`` numbers them (``\n``, ``\r\n``, ``\r``; not form feeds, unlike ``str.splitlines``)."""
    return re.split(r"\r\n|\r|\n", code)


def _char_col(lines: List[str], line: int, byte_col: int) -> int:
    """ast columns are UTF-8 byte offsets; libcst columns are characters."""
    text = lines[line - 1] if 0 < line <= len(lines) else ""
    return len(text.encode("utf-8")[:byte_col].decode("utf-8", errors="ignore"))


_CST_OPERATORS = {
    "+": cst.Add, "-": cst.Subtract, "*": cst.Multiply, "/": cst.Divide, "//": cst.FloorDivide,
    "%": cst.Modulo, "**": cst.Power, "&": cst.BitAnd, "|": cst.BitOr, "^": cst.BitXor,
    "<<": cst.LeftShift, ">>": cst.RightShift,
}
_ATOMS = (cst.Name, cst.Attribute, cst.Call, cst.Subscript, cst.Integer, cst.Float, cst.Imaginary,
          cst.SimpleString, cst.ConcatenatedString, cst.FormattedString, cst.List, cst.Tuple, cst.Dict, cst.Set)


def _comma() -> cst.Comma:
    return cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))


def _atom(value: cst.BaseExpression) -> cst.BaseExpression:
    """``value``, parenthesized unless it binds tighter than any binary operator."""
    if isinstance(value, _ATOMS) or value.lpar:
        return value
    return value.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()])


def _cast_back(name: str, value: cst.BaseExpression) -> cst.Call:
    """``value.to(name.dtype)``: the in-place op's dtype (``x.div_(y)`` keeps ``x.dtype``)."""
    return cst.Call(func=cst.Attribute(value=_atom(value), attr=cst.Name("to")),
                    args=[cst.Arg(cst.Attribute(value=cst.Name(name), attr=cst.Name("dtype")))])


def _without(args: Sequence[cst.Arg], index: int) -> List[cst.Arg]:
    """``args`` minus the one at ``index``; the new last argument takes over the removed one's comma."""
    kept = [a for i, a in enumerate(args) if i != index]
    if kept and index == len(args) - 1:
        kept[-1] = kept[-1].with_changes(comma=args[index].comma)
    return kept


def _assign(name: str, value: cst.BaseExpression) -> cst.SimpleStatementLine:
    return cst.SimpleStatementLine(body=[cst.Assign(targets=[cst.AssignTarget(cst.Name(name))], value=value)])


class _Rewriter(cst.CSTTransformer):
    """Replaces each planned write by statements that rebind the name; the original argument nodes
    (with their comments and line breaks) are reused, never re-typed."""

    METADATA_DEPENDENCIES = (PositionProvider,)

    def __init__(self, module: cst.Module, code: str, findings: Sequence[Finding], style: str,
                 memory_aware: bool = False) -> None:
        super().__init__()
        self.module = module
        self.style = style
        self.memory_aware = memory_aware
        lines = _split_lines(code)
        self.by_pos: Dict[Tuple[int, int, int, int], Finding] = {
            (f.line, _char_col(lines, f.line, f.col), f.end_line, _char_col(lines, f.end_line, f.end_col)): f
            for f in findings
        }
        self.done: set = set()
        self.imports: set = set()
        self._hoisted: List[Tuple[bool, List[cst.BaseStatement]]] = []

    # ---- helpers

    def code(self, node: cst.CSTNode) -> str:
        return self.module.code_for_node(node)

    def finding_at(self, node: cst.CSTNode) -> Optional[Finding]:
        span = self.get_metadata(PositionProvider, node)
        return self.by_pos.get((span.start.line, span.start.column, span.end.line, span.end.column))

    def guard(self, name: str, any_style: bool = False) -> List[cst.BaseStatement]:
        """The DTensor guard: gather a sharded tensor before a mixed op. Runtime-style calls guard
        inside the runtime, so there it is written out only for item assignment (``any_style``)."""
        if self.style != "inline" and not any_style:
            return []
        self.imports.add((DTENSOR_MODULE, "DTensor"))
        return [cst.parse_statement(f"if isinstance({name}, DTensor):\n    {name} = {name}.full_tensor()\n")]

    def method_statements(self, name: str, method: str, call: Optional[cst.Call], args: Sequence[cst.Arg],
                          original: Optional[cst.BaseStatement]) -> Optional[List[cst.BaseStatement]]:
        """Statements equivalent to ``name.<method>(args)`` that rebind ``name`` instead of writing it."""
        ws_before_args = call.whitespace_before_args if call is not None else cst.SimpleWhitespace("")
        if self.style == "runtime":
            self.imports.add((RUNTIME_MODULE, "out_of_place"))
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
            value = cst.Call(func=cst.Name("out_of_place"), args=head + rest, whitespace_before_args=ws_before_args)
            return [_assign(name, value)]
        operands = [a for a in args if not (isinstance(a.value, (cst.Integer, cst.Float)) or
                                            (isinstance(a.value, cst.Name) and a.value.value in ("True", "False", "None")))]
        guard = self.guard(name) if operands else []
        twin = ops.OUT_OF_PLACE_TWINS.get(method)
        if twin is None:  # no out-of-place twin: write a copy
            if original is None:
                return None
            return guard + [cst.parse_statement(f"{name} = {name}.clone()\n"), original]
        plain = len(args) == 1 and args[0].keyword is None and args[0].star == "" and \
            (call is None or "#" not in self.code(call))
        if method in _OPERATORS and plain:
            op = _CST_OPERATORS[_OPERATORS[method]]()
            value = cst.BinaryOperation(left=cst.Name(name), operator=op, right=_atom(args[0].value))
        else:
            value = cst.Call(func=cst.Attribute(value=cst.Name(name), attr=cst.Name(twin)), args=list(args),
                             whitespace_before_args=ws_before_args)
        return guard + [_assign(name, _cast_back(name, value))]

    def statements_for(self, finding: Finding, node: cst.CSTNode,
                       original: Optional[cst.BaseStatement]) -> Optional[List[cst.BaseStatement]]:
        """Statements replacing the write (``node`` is the Call, AugAssign or Subscript target);
        ``original`` is the whole statement (None when the write is used as a value)."""
        name = finding.target
        kind = finding.write_kind
        if kind is WriteKind.METHOD and isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute):
            args = list(node.args)
            if self._is_unbound_method(node):  # torch.Tensor.div_(x, t)
                args = args[1:]
            return self.method_statements(name, node.func.attr.value, node, args, original)
        if kind is WriteKind.AUGMENTED and isinstance(node, cst.AugAssign):
            method = ops.AUGMENTED_INPLACE[self.code(node.operator).strip()]
            return self.method_statements(name, method, None, [cst.Arg(node.value)], original)
        if kind is WriteKind.SUBSCRIPT and original is not None:
            return self.guard(name, any_style=True) + [cst.parse_statement(f"{name} = {name}.clone()\n"), original]
        if kind is WriteKind.FUNCTION and isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute):
            func = node.func.with_changes(attr=cst.Name(node.func.attr.value[:-1]))
            return [_assign(name, _cast_back(name, node.with_changes(func=func)))]
        if kind is WriteKind.INPLACE_KWARG and isinstance(node, cst.Call):
            index = next((i for i, a in enumerate(node.args) if a.keyword is not None and a.keyword.value == "inplace"),
                         None)
            if index is None:
                func_name = node.func.attr.value if isinstance(node.func, cst.Attribute) else \
                    getattr(node.func, "value", "")
                index = ops.INPLACE_POSITION.get(func_name)
            if index is None or index >= len(node.args):
                return None
            return [_assign(name, node.with_changes(args=_without(node.args, index)))]
        if kind is WriteKind.OUT_KWARG and isinstance(node, cst.Call):
            index = next((i for i, a in enumerate(node.args) if a.keyword is not None and a.keyword.value == "out"), None)
            if index is None:
                return None
            return [_assign(name, _cast_back(name, node.with_changes(args=_without(node.args, index))))]
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

    # ---- hoisting (a write used as a value)

    def visit_SimpleStatementLine(self, node: cst.SimpleStatementLine) -> None:
        # hoisting moves statements before the whole line: only when the line holds one statement
        self._hoisted.append((len(node.body) == 1, []))

    def leave_Call(self, original: cst.Call, updated: cst.Call) -> cst.BaseExpression:
        finding = self.finding_at(original)
        if finding is None or finding.fix.kind is not FixKind.HOIST or not self._hoisted or not self._hoisted[-1][0]:
            return updated
        statements = self.statements_for(finding, updated, None)
        if not statements:
            return updated
        self._hoisted[-1][1].extend(statements)
        self.done.add(id(finding))
        return cst.Name(finding.target)

    # ---- whole-statement writes

    def leave_SimpleStatementLine(self, original: cst.SimpleStatementLine, updated: cst.SimpleStatementLine):
        hoisted = self._hoisted.pop()[1] if self._hoisted else []
        replacement: Optional[List[cst.BaseStatement]] = None
        if len(original.body) == 1:
            small = original.body[0]
            node: Optional[cst.CSTNode] = None
            if isinstance(small, cst.Expr) and isinstance(small.value, cst.Call):
                node = small.value
            elif isinstance(small, cst.AugAssign):
                node = small
            elif isinstance(small, cst.Assign) and len(small.targets) == 1:
                node = small.targets[0].target
            finding = self.finding_at(node) if node is not None else None
            if finding is not None and finding.fix.kind is FixKind.STATEMENT:
                bare = updated.with_changes(leading_lines=(), trailing_whitespace=cst.TrailingWhitespace())
                new_small = updated.body[0]
                write = new_small.value if isinstance(new_small, cst.Expr) else new_small
                replacement = self.statements_for(finding, write, bare)
                if replacement:
                    self.done.add(id(finding))
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


# --------------------------------------------------------------------------- files


def fix_code(source: str, path: str = "<string>", *, settings: Settings = DEFAULT_SETTINGS, style: str = "runtime",
             unsafe_fixes: bool = False, select: Sequence[str] = (), ignore: Sequence[str] = (),
             memory_aware: bool = False) -> FixResult:
    """Fix ``source`` (text); ``result.new_source`` is the rewritten text, or None when unchanged."""
    result = FixResult(path, old_source=source)
    try:
        module = cst.parse_module(source)
    except cst.ParserSyntaxError as exc:
        result.error = f"cannot parse: {exc.message} (line {exc.raw_line}, column {exc.raw_column})"
        return result
    new = _run(module, result, settings, style, unsafe_fixes, select, ignore, memory_aware)
    if new is not None and result.error is None:
        result.new_source = new.code
    return result


def _run(module: cst.Module, result: FixResult, settings, style, unsafe_fixes, select, ignore,
         memory_aware=False, only=None) -> Optional[cst.Module]:
    command = InplaceToOutOfPlace(CodemodContext(filename=result.path), style=style, unsafe_fixes=unsafe_fixes,
                                  settings=settings, select=select, ignore=ignore, memory_aware=memory_aware,
                                  only=only)
    command.result = result
    try:
        new = command.transform_module(module)
    except SyntaxError as exc:
        result.error = str(exc)
        return None
    if not result.applied or new.code == module.code:
        return None
    try:  # a rewrite is re-parsed before anyone sees it
        ast.parse(new.code)
        cst.parse_module(new.bytes)
    except (SyntaxError, cst.ParserSyntaxError) as exc:  # pragma: no cover - a bug in the codemod
        result.error = f"internal error: the rewrite does not parse ({exc}); file left unchanged"
        return None
    return new


def fix_file(path: str, *, settings: Settings = DEFAULT_SETTINGS, style: str = "runtime", unsafe_fixes: bool = False,
             select: Sequence[str] = (), ignore: Sequence[str] = (), write: bool = True,
             memory_aware: bool = False) -> FixResult:
    """Fix one file in place (atomically: temp file + rename); encoding, BOM and newlines are kept.

    A file that cannot be read or parsed is reported in ``result.error`` and left untouched.
    """
    result = FixResult(path)
    try:
        with open(path, "rb") as fh:
            raw = fh.read()
        source = decode(raw)
    except (OSError, UnicodeDecodeError, LookupError, SyntaxError) as exc:
        result.error = f"cannot read: {exc}"
        return result
    # Decide with the engine (stdlib ast) first: files without an applicable fix never pay for libcst.
    checked = check_source(source, path, settings, select, ignore)
    if checked.error:
        result.error = checked.error
        return result
    if not any(_applicable(f, unsafe_fixes) for f in checked.findings):
        for finding in checked.findings:
            (result.unfixed if finding.fix is None else result.unsafe_skipped).append(finding)
        return result
    try:
        module = cst.parse_module(raw)
    except cst.ParserSyntaxError as exc:
        result.error = f"cannot parse: {exc.message} (line {exc.raw_line}, column {exc.raw_column})"
        return result
    result.old_source = module.code
    new = _run(module, result, settings, style, unsafe_fixes, select, ignore, memory_aware)
    if new is None:
        return result
    result.new_source = new.code
    if write:
        _atomic_write(path, new.bytes)
        result.written = True
    return result


def fix_one(source: str, path: str, finding: Finding, *, settings: Settings = DEFAULT_SETTINGS,
            style: str = "runtime", select: Sequence[str] = (), ignore: Sequence[str] = ()) -> Optional[str]:
    """``source`` with ``finding`` alone fixed (safe or not: the caller asked for this one), or None."""
    result = FixResult(path, old_source=source)
    try:
        module = cst.parse_module(source)
    except cst.ParserSyntaxError:
        return None
    new = _run(module, result, settings, style, True, select, ignore, only=(finding.line, finding.col))
    return None if new is None else new.code


def line_edits(old: str, new: str) -> List[Tuple[int, int, str]]:
    """Whole-line edits turning ``old`` into ``new``: (first line, end line, replacement), 0-based, end exclusive."""
    import difflib

    a, b = old.splitlines(keepends=True), new.splitlines(keepends=True)
    matcher = difflib.SequenceMatcher(a=a, b=b, autojunk=False)
    return [(i1, i2, "".join(b[j1:j2])) for tag, i1, i2, j1, j2 in matcher.get_opcodes() if tag != "equal"]


def fix_edits(source: str, path: str, finding: Finding, *, settings: Settings = DEFAULT_SETTINGS,
              style: str = "runtime") -> List[dict]:
    """The edits that fix ``finding`` alone, as ruff's JSON ``fix.edits``: whole-line replacements
    ``{"content", "location": {"row", "column"}, "end_location": {...}}`` (1-based, end exclusive)."""
    new = fix_one(source, path, finding, settings=settings, style=style)
    if new is None:
        return []
    return [{"content": text, "location": {"row": start + 1, "column": 1}, "end_location": {"row": end + 1, "column": 1}}
            for start, end, text in line_edits(source, new)]


def _applicable(finding: Finding, unsafe_fixes: bool) -> bool:
    return finding.fix is not None and (unsafe_fixes or finding.fix.applicability is Applicability.SAFE)


def _atomic_write(path: str, data: bytes) -> None:
    folder = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(dir=folder, prefix=".inplace-lint-", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        try:
            os.chmod(tmp, os.stat(path).st_mode & 0o7777)
        except OSError:
            pass
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
