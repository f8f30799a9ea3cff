"""The rule scaffold writes a rule module, a registry line and a fixture that the project accepts."""
import shutil
import subprocess
import sys


def test_scaffold_adds_one_file_one_registry_line_and_a_fixture(root, tmp_path):
    copy = tmp_path / "repo"
    shutil.copytree(root / "inplace_lint", copy / "inplace_lint", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(root / "scripts", copy / "scripts")
    (copy / "fixtures" / "detect").mkdir(parents=True)
    before = (copy / "inplace_lint" / "rules" / "__init__.py").read_text()
    proc = subprocess.run([sys.executable, str(copy / "scripts" / "add_rule.py"), "IPV042", "inplace-on-leaf",
                           "In-place op on a leaf."], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines() == ["wrote inplace_lint/rules/ipv042_inplace_on_leaf.py",
                                        "wrote inplace_lint/rules/__init__.py",
                                        "wrote fixtures/detect/IPV042/example.py"]
    after = (copy / "inplace_lint" / "rules" / "__init__.py").read_text()
    assert after.replace('    "ipv042_inplace_on_leaf",\n', "", 1) == before
    # the scaffolded package imports and registers the new rule
    code = ("import sys; sys.path.insert(0, sys.argv[1]); from inplace_lint.rules import RULES, PRIORITY;"
            "r = RULES['IPV042']; print(r.name, r.severity, PRIORITY.index(r) == PRIORITY.index(RULES['IPV001']) - 1)")
    out = subprocess.run([sys.executable, "-c", code, str(copy)], capture_output=True, text=True, cwd=tmp_path)
    assert out.stdout == "inplace-on-leaf warning True\n", out.stderr
    again = subprocess.run([sys.executable, str(copy / "scripts" / "add_rule.py"), "IPV042", "inplace-on-leaf", "x"],
                           capture_output=True, text=True)
    assert again.returncode == 2 and "IPV042 already exists" in again.stderr
