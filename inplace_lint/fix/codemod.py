"""The public path of the libcst codemod command (README):
``python -m libcst.tool codemod -x inplace_lint.fix.codemod.InplaceToOutOfPlace PATH``; it lives in
:mod:`.libcst_command`. Nothing in :mod:`inplace_lint.fix` imports this module."""
from .libcst_command import InplaceToOutOfPlace

__all__ = ["InplaceToOutOfPlace"]
