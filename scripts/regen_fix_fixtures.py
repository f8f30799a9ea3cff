"""Rewrite ``fixtures/fix/*.<style>.out.py`` from the ``*.in.py`` files with the current codemod.

Review the diff before committing: the out files are the codemod's expected output.
``unsafe.in.py`` is rewritten with ``--unsafe-fixes`` (by default it must stay unchanged).
"""
import pathlib

from inplace_lint.fixing import fix_code

FIX = pathlib.Path(__file__).resolve().parent.parent / "fixtures" / "fix"

for path in sorted(FIX.glob("*.in.py")):
    name = path.name[: -len(".in.py")]
    for style in ("runtime", "inline"):
        result = fix_code(path.read_text(), str(path), style=style, unsafe_fixes=name.startswith("unsafe"))
        assert result.error is None, (path, result.error)
        (FIX / f"{name}.{style}.out.py").write_text(result.new_source or path.read_text())
        print(f"{name}.{style}: {len(result.applied)} fixes")
