"""``inplace-lint``'s entry point: parse the command line, run the command, map errors to exit codes."""
from __future__ import annotations

import io
import os
import sys
from typing import Optional, Sequence

from ..parallel import showing_progress
from .args import build_parser, unknown_arguments
from .check import cmd_check
from .fix import cmd_fix
from .options import _progress, STDIN, usage_error, UsageError


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = build_parser()
    parser.argv = list(sys.argv[1:] if argv is None else argv)
    args, extra = parser.parse_known_args(argv)
    if extra:
        return unknown_arguments(parser, args.command, extra)
    if isinstance(sys.stdout, io.TextIOWrapper):
        # a file name that is not UTF-8 reaches us with its bytes as surrogates (os.fsdecode); print
        # those bytes back, as ls does, where a strict UTF-8 stdout would raise UnicodeEncodeError
        sys.stdout.reconfigure(errors="surrogateescape")
    try:
        # every stage of a check or fix on one bar, from finding the files to the last file checked
        # (not while a source is read from stdin: the bar would sit on the terminal while it is typed)
        with showing_progress(args.func in (cmd_check, cmd_fix) and _progress(args)
                              and STDIN not in getattr(args, "paths", ())):
            code = args.func(args)
        if not sys.stdout.closed:  # the language server closes it on exit
            sys.stdout.flush()  # a closed pipe shows up here, not at interpreter exit
        return code
    except UsageError as exc:
        return usage_error(str(exc))
    except BrokenPipeError:
        # `inplace-lint check . | head -1`: the reader is gone; end quietly as other CLIs do
        # (https://docs.python.org/3/library/signal.html#note-on-sigpipe)
        try:
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
        except (OSError, ValueError):  # stdout is not a real file (captured in tests)
            pass
        return 1


if __name__ == "__main__":
    sys.exit(main())
