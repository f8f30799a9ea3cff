"""The inplace-lint command line: check, fix, rule and server (entry point: :func:`main`).

- ``entry.py``: :func:`main`: parse, run the command, map errors and a closed stdout to exit codes;
- ``args.py``: the parser (:func:`build_parser`): commands, flags (the ruff/flake8 ones in one table,
  ``RUFF_FLAGS``), help texts and exit codes (``CHECK_EXIT_CODES``, ``FIX_EXIT_CODES``);
- ``options.py``: what ``check`` and ``fix`` share: the configuration and flags (``Options``: a
  :class:`~inplace_lint.config.RunOptions` and the rest), the files, the project mode, ``--show-*``;
- ``check.py``: ``check`` (findings in every format, stdin, ``--add-noqa``, ``--runtime-report``);
- ``fix.py``: ``fix`` and ``check --fix``/``--diff`` (the fix use case on every file, the report);
- ``commands.py``: ``rule`` and ``server``.

``check`` and ``fix`` run one job per file (:mod:`inplace_lint.adapters.jobs`) through the parallel runner
(:func:`inplace_lint.adapters.parallel.run_files`: ``--jobs``, progress bar, results sorted by path, a crash
in one file reported and the run going on).

Conventions that ruff and flake8 users bring: ``check`` with no path checks ``.``; ``-`` reads the
source from stdin (``--stdin-filename`` names it for the output, the configuration and
``per-file-ignores``); a path that does not exist, a file that cannot be read or parsed is reported as
an ``IPV000`` item in the chosen format (and on stderr) while the other files are still checked;
``--select``/``--ignore``/``--exclude`` (and their ``--extend-`` forms) take comma lists and accumulate
when repeated; a closed stdout (``inplace-lint check . | head -1``) ends the run quietly.
"""
from .args import build_parser
from .entry import main

__all__ = ["build_parser", "main"]
