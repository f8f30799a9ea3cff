"""Download released packages (cached) for tests and benchmarks that run on real code.

The wheels go to ``$INPLACE_LINT_CACHE`` (default ``~/.cache/inplace-lint``) and are
unpacked beside them; nothing is committed. ``fetch`` returns None when the package
registry cannot be reached, so callers can skip with a clear reason.
"""
from __future__ import annotations

import os
import pathlib
import subprocess
import sys
import zipfile
from typing import Optional

CACHE = pathlib.Path(os.environ.get("INPLACE_LINT_CACHE", pathlib.Path.home() / ".cache" / "inplace-lint"))


def fetch(name: str, version: str) -> Optional[pathlib.Path]:
    """Unpacked tree of ``name==version`` from the registry (wheel, no dependencies), or None if unreachable."""
    target = CACHE / f"{name}-{version}"
    if (target / ".complete").exists():
        return target
    wheels = CACHE / "wheels"
    wheels.mkdir(parents=True, exist_ok=True)
    pattern = f"{name.replace('-', '_')}-{version}-*.whl"
    if not list(wheels.glob(pattern)):
        proc = subprocess.run(
            [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:", "-q",
             f"{name}=={version}", "-d", str(wheels)],
            capture_output=True, text=True, timeout=600,
        )
        if proc.returncode != 0:
            return None
    [wheel] = sorted(wheels.glob(pattern))[:1] or [None]
    if wheel is None:
        return None
    tmp = target.with_name(target.name + ".partial")
    with zipfile.ZipFile(wheel) as zf:
        zf.extractall(tmp)
    if target.exists():
        import shutil

        shutil.rmtree(target)
    tmp.rename(target)
    (target / ".complete").touch()
    return target


if __name__ == "__main__":
    for spec in sys.argv[1:]:
        print(fetch(*spec.split("==")))
