"""Printing planned fixes as text edits (the analysis decides each fix's :class:`~inplace_lint.findings.Recipe`).

- :mod:`.attach`: :func:`~.attach.attach_edits`, the planned fixes of one file as ``Fix.edits``, once per file.
- :mod:`.text_printer` / :mod:`.cst_printer`: two printers of one recipe (plain text for one-line
  statements, libcst for the rest), byte for byte the same; :mod:`.forms`: pieces both print.
- :mod:`.statements`: the statements that carry fixes and the whole lines each rewrite replaces.
- :mod:`.imports`: the names a rewrite uses and where their imports go.
- :mod:`.edits`: edit algebra (apply, merge) and a unified diff from edits.
- :mod:`.codemod`: the libcst codemod command (``python -m libcst.tool codemod``), an adapter over
  :mod:`inplace_lint.fixing` that nothing here imports.
"""
