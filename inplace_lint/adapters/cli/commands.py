"""``inplace-lint rule`` (a rule's documentation) and ``inplace-lint server`` (the language server)."""
from __future__ import annotations

import argparse

from ... import config, project_url
from ...rules import RULES
from .options import usage_error


def cmd_rule(args: argparse.Namespace) -> int:
    if args.all:
        print("\n".join(rule.document() for rule in RULES.values()), end="")
        return 0
    if args.code is None:
        width = max(len(r.name) for r in RULES.values())
        for rule in RULES.values():
            print(f"{rule.code}  {rule.name:<{width}}  {rule.summary}")
        return 0
    by_name = {r.name: r for r in RULES.values()}
    rule = RULES.get(args.code.upper()) or by_name.get(args.code.lower())
    if rule is None:
        return usage_error(f"unknown rule {args.code!r}{config.did_you_mean(args.code.lower(), by_name)} "
                           f"(known: {', '.join(f'{r.code} ({r.name})' for r in RULES.values())})")
    print(rule.document(), end="")
    return 0


#: how to get the language server's dependency: inplace-lint is not on PyPI, so from a clone (or git URL)
SERVER_INSTALL_HINT = ("install the [server] extra from a clone of this repository: "
                       "python -m pip install -e '.[server]' (or: python -m pip install "
                       "'inplace-lint[server] @ git+{url}')")


def cmd_server(args: argparse.Namespace) -> int:
    try:
        from ..server import serve
    except ImportError as exc:  # pygls is an extra
        return usage_error(f"the language server needs pygls ({exc}); {SERVER_INSTALL_HINT.format(url=project_url() or '<URL of this repository>')}")
    from ...workspace import PROJECT

    serve(PROJECT)  # open buffers are analysed with their project's (cached) summaries
    return 0
