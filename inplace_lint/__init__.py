"""inplace-lint: find and fix in-place PyTorch ops on views and model outputs.

The linter and codemod never import torch; only :mod:`inplace_lint.runtime` does.
"""

__version__ = "0.1.0"
