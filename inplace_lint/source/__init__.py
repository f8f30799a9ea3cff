"""Source files: which files to check, how to read and decode them (the one reader), ``# noqa``, and why not.

- ``files.py``: discovery (git-aware) and the one reader (:func:`~inplace_lint.source.files.read_bytes`,
  :func:`~inplace_lint.source.files.decode`);
- ``noqa.py``: ``# noqa`` as flake8 reads it;
- ``problems.py``: ``IPV000`` for a file that cannot be read or parsed, and a file's result.
"""
