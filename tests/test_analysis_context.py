"""The interpreter reaches the project only through ``AnalysisContext``: every context it is handed
(a project's ``ModuleContext``, the language server's recording wrapper) answers each member of it
with the same parameters, and the interpreter's modules never import the project."""
import ast
import inspect
import pathlib

from inplace_lint.analysis import incremental
from inplace_lint.analysis.context import AnalysisContext
from inplace_lint.analysis.project import ModuleContext, Project

ANALYSIS = pathlib.Path(__file__).resolve().parent.parent / "inplace_lint" / "analysis"
INTERPRETER = ["dataflow", "statements", "binding", "env", "expressions", "calls", "project_calls",
               "call_grad", "reporting", "grad", "model_outputs", "names", "summaries", "context", "incremental"]


def _methods():
    return {n: v for n, v in vars(AnalysisContext).items() if not n.startswith("_") and inspect.isfunction(v)}


def test_module_context_answers_every_question_of_the_protocol():
    ctx = ModuleContext(Project(), "pkg.mod", "pkg/mod.py")
    for name in AnalysisContext.__annotations__:
        assert hasattr(ctx, name), name
    assert ctx.root is None  # a property of the protocol, the project's root
    for name, method in _methods().items():
        want = list(inspect.signature(method).parameters)[1:]
        assert list(inspect.signature(getattr(ctx, name)).parameters) == want, name


def test_the_recorder_records_every_question_that_takes_arguments():
    recorder = incremental._Recorder(ModuleContext(Project(), "pkg.mod", "pkg/mod.py"))
    asked = {n for n, v in vars(incremental._Recorder).items() if inspect.isfunction(v) and not n.startswith("_")}
    # property_getters is answered through dispatch, which the real context records as a dependency
    assert asked == set(_methods()) - {"property_getters"}
    assert recorder.resolve("pkg.mod.f") is None and recorder.reads == [("resolve", ("pkg.mod.f",), None)]


def test_the_interpreter_never_imports_the_project():
    for name in INTERPRETER:
        tree = ast.parse((ANALYSIS / f"{name}.py").read_text())
        froms = [n for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)]
        imported = {n.module.rpartition(".")[2] for n in froms if n.module}
        imported |= {a.name for n in froms if not n.module for a in n.names}  # from . import project
        imported |= {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
        assert not imported & {"project", "api", "across_calls", "resolve", "parallel_build", "cache"}, name
