"""Rewriting: the libcst codemod that turns planned fixes into edits and writes files atomically."""
