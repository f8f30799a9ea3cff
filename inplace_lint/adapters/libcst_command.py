"""The libcst codemod command: ``python -m libcst.tool codemod -x inplace_lint.adapters.libcst_command.InplaceToOutOfPlace PATH``.

The same edits as ``inplace-lint fix`` (a surface over :mod:`inplace_lint.fixing`), with this file's options
as check and the language server read them (``config.FileOptions.for_path``)."""
from __future__ import annotations

import argparse
import os
from typing import Optional, Sequence

import libcst as cst
from libcst.codemod import CodemodContext, VisitorBasedCodemodCommand

from .. import config
from ..config import Settings
from ..fix.attach import STYLES
from ..fixing import FixResult, fix_code


class InplaceToOutOfPlace(VisitorBasedCodemodCommand):
    """Rewrite in-place writes on views and model outputs to out-of-place form (inplace-lint).

    The same edits as ``inplace-lint fix``: the analysis plans, :func:`attach_edits` writes, and the
    edits are applied to the module's text."""

    DESCRIPTION = "Rewrite in-place PyTorch ops on views and model outputs to out-of-place form."

    def __init__(self, context: CodemodContext, style: str = STYLES[0], unsafe_fixes: bool = False,
                 settings: Optional[Settings] = None, select: Sequence[str] = (),
                 ignore: Sequence[str] = (), memory_aware: bool = False) -> None:
        super().__init__(context)
        if style not in STYLES:
            raise ValueError(f"style must be one of {STYLES}, got {style!r}")
        self.style = style
        self.memory_aware = memory_aware
        self.unsafe_fixes = unsafe_fixes
        self.settings = settings
        self.select, self.ignore = list(select), list(ignore)
        self.result = FixResult(context.filename or "<string>")

    @staticmethod
    def add_args(arg_parser: argparse.ArgumentParser) -> None:
        arg_parser.add_argument("--style", choices=STYLES, default=STYLES[0],
                                help="inline (default): plain torch; runtime: call inplace_lint.runtime")
        arg_parser.add_argument("--unsafe-fixes", action="store_true", default=False,
                                help="also apply fixes that other readers of the tensor could notice")
        arg_parser.add_argument("--memory-aware", action="store_true", default=False,
                                help='runtime style: pass inplace="auto" (in place wherever PyTorch allows it)')

    def transform_module_impl(self, tree: cst.Module) -> cst.Module:
        settings, target = self.settings, (None, None)
        if settings is None:  # run by libcst.tool: this file's options, as check and the language server read them
            opts = config.FileOptions.for_path(os.path.abspath(self.context.filename or "."))
            settings, target = opts.settings, opts.target
            self.select = self.select or list(opts.select)
            self.ignore = self.ignore or list(opts.ignore)
        code = tree.code
        result = fix_code(code, self.result.path, settings=settings, style=self.style, unsafe_fixes=self.unsafe_fixes,
                          select=self.select, ignore=self.ignore, memory_aware=self.memory_aware, target=target)
        self.result = result
        if result.error:
            raise SyntaxError(result.error)
        if result.new_source is None:
            return tree
        return cst.parse_module(result.new_source)
