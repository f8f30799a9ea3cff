"""inplace-lint: find and fix in-place PyTorch ops on views and model outputs.

The linter and codemod never import torch; only :mod:`inplace_lint.runtime` does.
"""

import functools
from typing import Optional

__version__ = "0.1.0"


@functools.lru_cache(maxsize=1)
def project_url() -> Optional[str]:
    """The project's one address, from the installed package's metadata (``url`` or the first of
    ``project_urls`` in setup.cfg), or None when the metadata names none: then no message or rule link
    gives an address (none is made up). Every "report it" message and rule link uses this one."""
    from importlib import metadata

    try:
        meta = metadata.metadata("inplace-lint")
    except metadata.PackageNotFoundError:
        return None
    for entry in meta.get_all("Project-URL") or []:
        _, _, address = entry.partition(",")
        if address.strip():
            return address.strip().rstrip("/")
    home = meta.get("Home-page")
    return home.strip().rstrip("/") if home and home.strip() not in ("", "UNKNOWN") else None


def report_hint() -> str:
    """Where to report a bug in inplace-lint, for the end of a crash message."""
    address = project_url()
    return f"please report it at {address}/issues" if address else "please report it to the inplace-lint maintainers"
