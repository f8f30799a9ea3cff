"""``python -m inplace_lint.sanitize [--output FILE] [--format text|json|sarif] [--raise] [--no-saved-tensors]
[-m] SCRIPT [ARGS...]``.

Runs SCRIPT as ``__main__`` (``sys.argv`` is ``[SCRIPT, *ARGS]``, its directory first on ``sys.path``) under
the sanitizer, like ``python -m cProfile``. The script's stdout, exceptions and exit code are its own;
the report goes to FILE or, by default, to stderr, written when the script ends (also when it raises or
calls ``sys.exit``). ``-m MODULE`` runs a module instead of a script. Exit code 2: usage error.
"""
from __future__ import annotations

import argparse
import os
import runpy
import sys
from typing import Optional, Sequence

from .report import FORMATS


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m inplace_lint.sanitize",
        description="Run a Python script under the inplace-lint runtime sanitizer and report the in-place "
                    "writes it saw on views, model outputs and saved tensors (made with grad on).")
    parser.add_argument("-o", "--output", metavar="FILE", help="write the report to FILE (default: stderr)")
    parser.add_argument("--format", choices=FORMATS, default="text",
                        help="text: path:line:col: CODE message; json: the JSON of `inplace-lint check`; "
                             "sarif: SARIF 2.1.0 (default: text)")
    parser.add_argument("--raise", dest="raise_on_finding", action="store_true",
                        help="raise InplaceHazardError at the first hazardous write instead of letting it run")
    parser.add_argument("--no-saved-tensors", dest="saved_tensors", action="store_false",
                        help="no saved-tensor hooks (no IPV006): for code using torch.func.grad/vjp/jacrev, "
                             "which refuse to run under such hooks")
    parser.add_argument("-m", dest="module", action="store_true", help="SCRIPT is a module name, run as `python -m`")
    parser.add_argument("script", metavar="SCRIPT", help="the script to run (or a module, with -m)")
    parser.add_argument("args", nargs=argparse.REMAINDER, metavar="ARGS", help="the script's own arguments")
    return parser


def main(argv: Optional[Sequence[str]] = None) -> None:
    args = build_parser().parse_args(argv)
    if not args.module and not os.path.isfile(args.script):
        print(f"python -m inplace_lint.sanitize: error: no such file: {args.script}", file=sys.stderr)
        sys.exit(2)

    from .sanitizer import Sanitizer

    sanitizer = Sanitizer(raise_on_finding=args.raise_on_finding, saved_tensors=args.saved_tensors)
    sys.argv = [args.script] + list(args.args)
    if not args.module:
        sys.path[0] = os.path.dirname(os.path.abspath(args.script))
    try:
        with sanitizer:
            if args.module:
                runpy.run_module(args.script, run_name="__main__", alter_sys=True)
            else:
                runpy.run_path(args.script, run_name="__main__")
    finally:
        sanitizer.write_report(args.output, args.format)


if __name__ == "__main__":
    main()
