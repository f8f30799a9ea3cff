"""The command line's parser: commands, flags (the ruff/flake8 ones in one table), help texts, exit codes."""
from __future__ import annotations

import argparse
import sys
from typing import Optional, Sequence, Tuple

from ... import __version__, config
from ..reporters import FORMATS
from .check import cmd_check
from .commands import cmd_rule, cmd_server
from .fix import cmd_fix


CHECK_EXIT_CODES = """\
exit codes:
  0  no findings
  1  findings; or a file could not be read or parsed (reported as IPV000), a path does not
     exist, or the analysis of a file crashed (a bug in inplace-lint, reported on stderr);
     with --fix: findings left after fixing (and, with --exit-non-zero-on-fix, a file fixed);
     with --diff: as 'inplace-lint fix --diff'
  2  usage or configuration error
--exit-zero (-e) turns 1 into 0."""


FIX_EXIT_CODES = """\
exit codes:
  0  no finding remains
  1  findings remain (unsafe fixes not applied, or findings without a fix), a file was
     skipped (cannot be read or parsed) or crashed; with --diff, also when a file would change;
     with --exit-non-zero-on-fix, also when a file was fixed
  2  usage or configuration error
--exit-zero (-e) turns 1 into 0."""


FIX_DESCRIPTION = """\
Rewrite in-place ops out of place, in the files given (directories are searched as by check).

Which findings have a fix: a write whose target is a plain local name, as a statement of its own
or used as a value in a simple statement (hoisted before it), for
  x.div_(t) and the other *_ methods with an out-of-place twin  ->  x = <out-of-place op>
  x /= t and the other augmented assignments                     ->  same as the method
  x.copy_(s), x.fill_(v), x[i] = v (no out-of-place twin)        ->  x = x.clone() first
  F.relu(x, inplace=True)                                        ->  x = F.relu(x)
  torch.add(a, b, out=x)                                         ->  x = torch.add(a, b), dtype kept
No fix where the rewrite could change what the code does: a target that is not a name
(output.logits.div_(t)), a write through a loop variable, a closure or global name, a write
under a short-circuit or conditional expression. check marks each finding [fix: safe] or
[fix: unsafe] (check --format json gives the edits and, for unsafe ones, the reason).

Safe fixes are applied; unsafe ones (another reader of the tensor, e.g. the caller of a function
whose parameter is written, could notice the change) only with --unsafe-fixes.
With no path, fix fixes "." (as check checks it). "fix -" (or --stdin-filename NAME alone) reads the
source from stdin and prints the fixed text to stdout. "inplace-lint check --fix" applies the same fixes,
then reports what is left."""


def _jobs(value: str) -> Optional[int]:
    """``-j N`` or ruff's ``-j auto`` (all cores, the default)."""
    if value == "auto":
        return None
    try:
        return int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of processes or 'auto', got {value!r}") from None


#: ruff's ``--output-format`` names -> ours, where they mean the same (ruff's ``concise`` is our ``text``)
OUTPUT_FORMAT_NAMES = {"concise": "text"}


def _output_format(value: str) -> str:
    return OUTPUT_FORMAT_NAMES.get(value, value)


_BOTH = ("check", "fix")


#: The flags ruff (and flake8) users carry over, with ruff's meaning: (flags, argparse keywords, commands).
RUFF_FLAGS: Tuple[Tuple[Tuple[str, ...], dict, Tuple[str, ...]], ...] = (
    (("--fix",), dict(action="store_true", help="apply the fixes (the engine of `inplace-lint fix`), then report "
                                                "what is left"), ("check",)),
    (("--diff",), dict(action="store_true", help="print a unified diff of the fixes and write nothing (findings "
                                                 "left go to stderr)"), _BOTH),
    (("--unsafe-fixes",), dict(action="store_true", help="also apply fixes that another reader of the tensor "
                                                         "could notice"), _BOTH),
    (("--style",), dict(choices=config.FIX_STYLES, default=None,
                        help="inline: plain torch, no new dependency; runtime: call inplace_lint.runtime "
                             "(scale_logits, out_of_place) (default: fix-style from the config file, else inline)"),
     _BOTH),
    (("--memory-aware",), dict(action="store_true", help='runtime style: emit inplace="auto" (stays in place '
                                                         'wherever PyTorch allows it) on every call; a safe '
                                                         'scale_logits fix has it without this flag'), _BOTH),
    (("--show-fixes",), dict(action="store_true", help="list the fixes applied, by file and code"), _BOTH),
    (("--add-noqa",), dict(action="store_true", help="add '# noqa: CODE' to each line with a finding (kept codes "
                                                     "stay; a second run adds nothing)"), ("check",)),
    (("-e", "--exit-zero"), dict(action="store_true", help="exit 0 even when something is found"), _BOTH),
    (("--exit-non-zero-on-fix",), dict(action="store_true", help="exit 1 when a file was fixed, even if "
                                                                 "nothing is left"), _BOTH),
    (("--config",), dict(metavar="PATH", default=None,
                         help="read the configuration from this file alone (pyproject.toml, setup.cfg, tox.ini, "
                              ".flake8, or a TOML file with the keys at its top level)"), _BOTH),
    (("--show-settings",), dict(action="store_true", help="print the resolved settings and the file each came "
                                                          "from, then exit"), _BOTH),
    (("--show-files",), dict(action="store_true", help="print the files that would be checked, then exit"), _BOTH),
    (("--force-exclude",), dict(action="store_true", help="apply the exclusions to files named on the command line "
                                                          "too (for pre-commit)"), _BOTH),
    (("--per-file-ignores",), dict(metavar="GLOB:CODES", action="append", default=None,
                                   help="codes not reported in files matching the glob (replaces the config "
                                        "file's; globs relative to the working folder)"), _BOTH),
    (("--extend-per-file-ignores",), dict(metavar="GLOB:CODES", action="append", default=None,
                                          help="like --per-file-ignores, added to the config file's"), _BOTH),
    (("--color",), dict(choices=("auto", "always", "never"), default="auto",
                        help="colour the text output (auto: on a terminal, unless NO_COLOR is set or "
                             "FORCE_COLOR is)"), ("check",)),
)


def _add_ruff_flags(parser: argparse.ArgumentParser, command: str) -> None:
    for flags, kwargs, commands in RUFF_FLAGS:
        if command in commands:
            parser.add_argument(*flags, **kwargs)


def _floor_flags(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--target-version", metavar="X.Y", default=None,
                        help="the oldest Python the code runs on (default: target-version from the config file, "
                             "else the project's requires-python)")
    parser.add_argument("--torch-version", metavar="X.Y", default=None,
                        help="the oldest torch the code runs on, which decides how the inline DTensor guard imports "
                             "DTensor (default: torch-version from the config file, else the lower bound of the "
                             "project's torch requirement)")


def _cache_flags(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--no-cache", action="store_true",
                        help="do not read or write the cache of project summaries")
    parser.add_argument("--cache-dir", default=None,
                        help="where project summaries are cached, by content: one folder may serve many "
                             "projects (forks), each file's text walked once (default: cache-dir from the "
                             "config file, else .inplace_lint_cache in the project root, or a per-user "
                             "folder for a tree you do not own); a summary line says what was reused")
    parser.add_argument("-v", "--verbose", action="store_true",
                        help="say which cache files were ignored (and why) and what the cache reused")


class _HelpFormatter(argparse.RawDescriptionHelpFormatter):
    """Descriptions and epilogs as written (tables, exit codes), option help wrapped."""


class _TopParser(argparse.ArgumentParser):
    """The top-level parser: a misspelled command, or a command's flag given before the command
    (``inplace-lint --fix .``), gets a hint naming what was probably meant."""

    argv: Sequence[str] = ()

    def error(self, message: str):  # type: ignore[override]
        import difflib

        commands = self.get_default("commands") or {}
        hints = []
        words = list(self.argv)
        first = next((w for w in words if not w.startswith("-")), None)
        if first is not None and first not in commands:
            close = difflib.get_close_matches(first, list(commands), n=1, cutoff=0.6)
            if close:
                hints.append(f"did you mean 'inplace-lint {close[0]}'?")
        for word in words:
            flag = word.split("=", 1)[0]
            owners = [name for name, p in commands.items() if flag.startswith("-") and flag in p._option_string_actions]
            if owners and not hints:
                hints.append(f"{flag} is an option of a command: 'inplace-lint {owners[0]} {flag} ...'")
        self.print_usage(sys.stderr)
        self.exit(2, f"{self.prog}: error: {message}\n" + "".join(f"  {h}\n" for h in hints))


def _add_selection_options(parser: argparse.ArgumentParser) -> None:
    """``--select``/``--ignore``/``--exclude`` and their ``--extend-`` forms: comma lists, repeatable."""
    parser.epilog = ("--select, --ignore, --exclude and their --extend- forms take comma lists (IPV001,IPV004) and "
                     "add up when repeated.\n\n" + (parser.epilog or ""))
    lists = dict(type=config.split_list, action="extend", default=None)
    parser.add_argument("--select", metavar="CODES", **lists,
                        help="report only these codes or prefixes (replaces the config file's select)")
    parser.add_argument("--extend-select", metavar="CODES", **lists,
                        help="add codes to the config file's select")
    parser.add_argument("--ignore", metavar="CODES", **lists, help="do not report these codes or prefixes")
    parser.add_argument("--extend-ignore", metavar="CODES", **lists, help="same as --ignore (flake8's name)")
    parser.add_argument("--exclude", metavar="GLOBS", **lists, help="skip paths matching these glob patterns")
    parser.add_argument("--extend-exclude", metavar="GLOBS", **lists, help="same as --exclude (ruff's name)")
    parser.add_argument("--stdin-filename", metavar="PATH", default=None,
                        help="with '-' as the path: the name of the source read from stdin (for the output, "
                             "the config file search and per-file-ignores)")


def build_parser() -> argparse.ArgumentParser:
    parser = _TopParser(
        prog="inplace-lint", formatter_class=_HelpFormatter,
        description="Find in-place PyTorch ops on views and model outputs, and rewrite them out of place.",
        epilog="Run 'inplace-lint COMMAND --help' for a command's options and exit codes.")
    parser.add_argument("--version", action="version", version=f"inplace-lint {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    check = sub.add_parser(
        "check", help="report in-place ops on views and model outputs", formatter_class=_HelpFormatter,
        description="Report in-place ops on views and model outputs, one line per finding:\n"
                    "  path:line:col: CODE message [fix: safe|unsafe]\n"
                    "A file that cannot be read or parsed is reported as IPV000 at the place Python names.",
        epilog=CHECK_EXIT_CODES)
    check.add_argument("paths", nargs="*", metavar="PATH",
                       help="files or directories (default: .); '-' reads the source from stdin")
    check.add_argument("--format", "--output-format", choices=list(FORMATS), default="text", type=_output_format,
                       help="text: path:line:col: CODE message; full: text plus the origin chain as indented "
                            "'note' lines; json: ruff's JSON schema plus a 'related' list; sarif: SARIF 2.1.0 "
                            "with relatedLocations; github: GitHub Actions workflow annotations (ruff's name "
                            "concise is text)")
    check.add_argument("--statistics", action="store_true",
                       help="print the number of findings per code instead of the findings")
    _add_selection_options(check)
    check.add_argument("--disable-noqa", action="store_true", help="report findings on # noqa lines too")
    check.add_argument("-j", "--jobs", type=_jobs, default=None,
                       help="processes to check files with (default and auto: all cores; 1: in this process)")
    check.add_argument("-q", "--quiet", action="store_true", help="no progress bar and no summary line")
    _cache_flags(check)
    _floor_flags(check)
    check.add_argument("--runtime-report", metavar="FILE", default=None,
                       help="a report of `python -m inplace_lint.sanitize` (text, json or sarif): mark the findings "
                            "it confirms and list on stderr what it saw that the static analysis missed")
    _add_ruff_flags(check, "check")
    check.set_defaults(func=cmd_check)

    fix = sub.add_parser("fix", help="rewrite in-place ops out of place (safe fixes only, unless --unsafe-fixes)",
                         formatter_class=_HelpFormatter, description=FIX_DESCRIPTION, epilog=FIX_EXIT_CODES)
    fix.add_argument("paths", nargs="*", metavar="PATH",
                     help="files or directories (default: .); '-' reads the source from stdin")
    _floor_flags(fix)
    _add_selection_options(fix)
    fix.add_argument("-j", "--jobs", type=_jobs, default=None,
                     help="processes to fix files with (default and auto: all cores; 1: in this process)")
    fix.add_argument("-q", "--quiet", action="store_true", help="no progress bar and no summary line")
    _cache_flags(fix)
    _add_ruff_flags(fix, "fix")
    fix.set_defaults(func=cmd_fix)
    rule = sub.add_parser("rule", help="show a rule's documentation (no code: list the rules)")
    rule.add_argument("code", nargs="?", metavar="CODE|NAME",
                      help="a rule code or name, e.g. IPV001 or inplace-on-model-output")
    rule.add_argument("--all", action="store_true", help="show every rule's documentation")
    rule.set_defaults(func=cmd_rule)
    server = sub.add_parser("server", help="run the language server on stdio (needs the [server] extra)")
    server.set_defaults(func=cmd_server)
    parser.set_defaults(commands={"check": check, "fix": fix, "rule": rule, "server": server})
    return parser


def unknown_arguments(parser: argparse.ArgumentParser, command: str, extra: Sequence[str]) -> int:
    """An unknown flag: the command's usage, and the closest valid spelling (or the command that has it)."""
    import difflib

    commands = parser.get_default("commands")
    sub = commands[command]
    lines = [sub.format_usage().rstrip(), f"{sub.prog}: error: unrecognized arguments: {' '.join(extra)}"]
    for word in extra:
        if not word.startswith("-"):
            continue
        flag = word.split("=", 1)[0]
        elsewhere = [name for name, p in commands.items() if name != command and flag in p._option_string_actions]
        close = difflib.get_close_matches(flag, list(sub._option_string_actions), n=1, cutoff=0.6)
        if close:
            lines.append(f"  {flag}: did you mean {close[0]}?")
        elif elsewhere:
            lines.append(f"  {flag} is an option of 'inplace-lint {elsewhere[0]}'")
    print("\n".join(lines), file=sys.stderr)
    return 2
