"""Regenerate docs/rules.md and the README rule table from inplace_lint/rules/.

    python scripts/document_rules.py           # write the files
    python scripts/document_rules.py --check   # exit 1 when they are out of date
"""
from __future__ import annotations

import argparse
import pathlib
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from inplace_lint.rules import docs as ruledocs  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="only report stale files (exit 1)")
    args = parser.parse_args()
    if args.check:
        old = ruledocs.stale(ROOT)
        for path in old:
            print(f"{path.relative_to(ROOT)} is out of date; run: {ruledocs.COMMAND}")
        return 1 if old else 0
    for path in ruledocs.write(ROOT):
        print(f"wrote {path.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
