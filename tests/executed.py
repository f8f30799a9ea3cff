"""Run a test's source text: the facts tests execute each case under torch to show it raises, or not."""
from __future__ import annotations

import importlib.util
import sys


def load(src: str) -> dict:
    """``src`` executed as a module's body; its names."""
    namespace: dict = {}
    exec(compile(src, "<case>", "exec"), namespace)
    return namespace


def observe(src: str):
    """What ``observe()`` in ``src`` returns (a case's observer of everything a write may change)."""
    return load(src)["observe"]()


def marked_line(src: str) -> int:
    """The line marked ``# <-`` (a case's write)."""
    [line] = [i for i, text in enumerate(src.splitlines(), 1) if text.endswith("# <-")]
    return line


def import_source(src: str, tmp_path, name: str):
    """``src`` as a module of its own in ``tmp_path`` (``torch.jit.trace`` needs the function's ``__module__``)."""
    path = tmp_path / f"{name}.py"
    path.write_text(src)
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    finally:
        del sys.modules[name]
    return module
