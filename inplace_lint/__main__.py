"""``python -m inplace_lint``: the ``inplace-lint`` command line (:func:`inplace_lint.adapters.cli.main`)."""
import os
import sys

# `python -m` puts the working folder first on the import path: run inside a package that has its own
# `select.py` or `ast.py` (torch_sparse does), the standard library's module would be shadowed by it before
# anything is checked. The linter never imports the code it checks, so that entry goes (unless this
# package itself was found there: an uninstalled checkout run from its root).
if sys.path and os.path.abspath(sys.path[0] or os.curdir) == os.getcwd() and \
        os.path.dirname(os.path.dirname(os.path.abspath(__file__))) != os.getcwd():
    del sys.path[0]

from .adapters.cli import main  # noqa: E402  (after the import path is settled)

if __name__ == "__main__":  # not when a worker process (spawn) imports the parent's main module
    sys.exit(main())
