"""inplace-lint: find and fix in-place PyTorch ops on views and model outputs."""

__version__ = "0.1.0"
