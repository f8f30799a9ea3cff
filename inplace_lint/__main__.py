"""``python -m inplace_lint``: the ``inplace-lint`` command line (:func:`inplace_lint.adapters.cli.main`)."""
import sys

from .adapters.cli import main

if __name__ == "__main__":  # not when a worker process (spawn) imports the parent's main module
    sys.exit(main())
