"""Thin surfaces over the one engine; each turns options and files into calls of the pipeline or the fix use case.

- ``cli/``: the ``inplace-lint`` command line (check, fix, rule, server);
- ``jobs.py``: the per-file jobs ``check`` and ``fix`` run (picklable, with their options and project mode);
- ``parallel.py``: many files in worker processes, one progress bar;
- ``reporters.py``: text, full, JSON, SARIF, GitHub annotations, statistics;
- ``server.py``: the language server (diagnostics, quick fixes);
- ``flake8_plugin.py``: the flake8 entry point ``IPV``;
- ``runtime_report.py``: a sanitizer report joined to ``check``'s findings (``--runtime-report``).
"""
