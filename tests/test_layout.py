"""The layout (CONTRIBUTING.md, "Layers"): imports run one way, no module is a grab bag, no state in os.environ.

The import-linter layers contract in setup.cfg is checked here and by ``.ci/run`` (``lint-imports``); this
file adds what a layers contract cannot see: import circles between sibling modules, module size, and
our own modules talking through environment variables.
"""
import ast
import pathlib
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "inplace_lint"
GENERATED = {"_ops_generated.py", "_saved_generated.py"}
MAX_LINES = 500


def _modules():
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(ROOT).with_suffix("")
        parts = rel.parts[:-1] if rel.name == "__init__" else rel.parts
        yield ".".join(parts), path


def _imports(module: str, path: pathlib.Path, known):
    """Every module of ours that ``module`` imports, at any depth of its body (imports inside functions too)."""
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[:len(base) - (node.level - 1)]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            for alias in node.names:
                full = f"{target}.{alias.name}"
                found.add(full if full in known else target)
        elif isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
    return {m for m in found if m in known and m != module}


def test_the_layers_contract_holds():
    pytest.importorskip("importlinter")
    run = subprocess.run([sys.executable, "-c", "from importlinter.cli import lint_imports_command; "
                          "lint_imports_command()"], cwd=ROOT, capture_output=True, text=True)
    assert run.returncode == 0, run.stdout + run.stderr


def test_no_import_circle():
    modules = dict(_modules())
    graph = {m: _imports(m, p, modules) for m, p in modules.items()}
    # a package's __init__ importing its own submodules for re-export is not a circle of jobs
    graph = {m: {d for d in deps if not (m and d.startswith(m + "."))} for m, deps in graph.items()}
    seen, stack, cycles = set(), [], []

    def visit(node, on_path):
        seen.add(node)
        stack.append(node)
        on_path.add(node)
        for dep in sorted(graph[node]):
            if dep in on_path:
                cycles.append(stack[stack.index(dep):] + [dep])
            elif dep not in seen:
                visit(dep, on_path)
        stack.pop()
        on_path.discard(node)

    for module in sorted(graph):
        if module not in seen:
            visit(module, set())
    assert cycles == []


def test_no_module_over_500_lines_except_generated_tables():
    long = {str(p.relative_to(ROOT)): n for _, p in _modules()
            if p.name not in GENERATED and (n := len(p.read_text(encoding="utf-8").splitlines())) > MAX_LINES}
    assert long == {}


def test_every_module_opens_with_a_docstring_saying_its_job():
    missing = [str(p.relative_to(ROOT)) for _, p in _modules()
               if p.name not in GENERATED and not ast.get_docstring(ast.parse(p.read_text(encoding="utf-8")))]
    assert missing == []


def test_our_modules_do_not_pass_state_through_the_environment():
    """Writing ``os.environ`` (or ``putenv``) to reach another of our modules is how a test-order bug came
    in; reading the user's environment (NO_COLOR, XDG_CACHE_HOME, the cache key) is fine."""
    writers = []
    for _, path in _modules():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            target = None
            if isinstance(node, (ast.Assign, ast.AugAssign, ast.Delete)):
                targets = node.targets if isinstance(node, (ast.Assign, ast.Delete)) else [node.target]
                target = next((t for t in targets if isinstance(t, ast.Subscript)
                               and ast.unparse(t.value) == "os.environ"), None)
            elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and (
                    ast.unparse(node.func) in ("os.putenv", "os.unsetenv")
                    or (ast.unparse(node.func.value) == "os.environ"
                        and node.func.attr in ("pop", "setdefault", "update", "clear", "__setitem__"))):
                target = node
            if target is not None:
                writers.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert writers == []
