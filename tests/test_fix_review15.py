"""The fifteenth review's broken "safe" fixes that are mended (each executed under torch 2.13): routes by which
another reference sees the write and the rewrite hides it from (a container an operator copies, ``sum``'s
start, an activation's ``inplace`` flag that is not a literal, ``__dict__``), operands that share the written
tensor's memory, and the DTensor import placed before code that must run before torch is imported."""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest

from inplace_lint.analysis import analyze_source
from inplace_lint.findings import Applicability
from inplace_lint.fixing import fix_code
from tests.executed import marked_line, observe

torch = pytest.importorskip("torch")

HEADER = "import torch\nimport torch.nn.functional as F\nfrom torch import nn\n\n\n"
MODEL = """
class Out(dict):
    def __init__(self, **fields):
        super().__init__(**fields)
        self.__dict__.update(fields)


def model_and_input():
    torch.manual_seed(0)
    lin = nn.Linear(3, 3)
    return (lambda h: Out(logits=lin(h))), torch.randn(2, 3)
"""

#: (name, body after HEADER + MODEL with the write marked `# <-`, reason start): each defines `observe()`
UNSAFE = [
    ("a dict union keeps the output's tensor", """
     def step(model, h, t):
         out = model(h)
         record = out | {"t": t}
         logits = out["logits"]
         logits.div_(t)  # <-
         return logits, record


     def observe():
         return step(*model_and_input(), 2.0)[1]["logits"].detach()
     """, "`out` holds the written tensor and `out | {'t': t}`"),
    ("a tuple concatenation keeps the output's tensor", """
     def step(model, h, t):
         outs = (model(h).logits, h)
         saved = outs + (t,)
         logits = outs[0]
         logits.div_(t)  # <-
         return logits, saved


     def observe():
         return step(*model_and_input(), 2.0)[1][0].detach()
     """, "`outs` is copied into a new container by `outs + (t,)`"),
    ("sum's start is returned as it is", """
     def step(model, h, t, extra=()):
         out = model(h)
         logits = out.logits
         total = sum(extra, logits)
         logits.div_(t)  # <-
         return logits, total


     def observe():
         return step(*model_and_input(), 2.0)[1].detach()
     """, "`total` is read after the write"),
    ("a positional inplace flag that is not a literal", """
     class Block(nn.Module):
         def __init__(self, inplace=False):
             super().__init__()
             self.inplace = inplace
             self.lin = nn.Linear(3, 3)

         def forward(self, x):
             g = self.lin(x)
             y = F.relu(g, self.inplace)
             y.mul_(2)  # <-
             return y, g


     def observe():
         torch.manual_seed(0)
         with torch.no_grad():
             return Block(True)(torch.randn(2, 3))[1]
     """, "`y` is `g` (the in-place call returned it)"),
    ("a module built with the constructor's inplace flag", """
     class Block(nn.Module):
         def __init__(self, inplace=False):
             super().__init__()
             self.lin = nn.Linear(3, 3)
             self.act = nn.ReLU(inplace=inplace)

         def forward(self, x):
             g = self.lin(x)
             y = self.act(g)
             y.mul_(2)  # <-
             return y, g


     def observe():
         torch.manual_seed(0)
         with torch.no_grad():
             return Block(True)(torch.randn(2, 3))[1]
     """, "`self.act` may be a module that returns its input"),
    ("another binding may hold the caller's tensor", """
     def spread(emb, means, mask, use_emb):
         variance = emb if use_emb else torch.norm(emb - means, dim=1)
         if mask is not None:
             variance *= mask  # <-
         return variance.sum()


     def observe():
         torch.manual_seed(0)
         emb = torch.randn(2, 3, requires_grad=True) * 1
         spread(emb, torch.zeros(2, 3), torch.full((2, 3), 2.0), True)
         return emb.detach()
     """, "`variance` may be `emb` (line 21), a parameter"),
    ("an activation made in place after it was built", """
     class Block(nn.Module):
         def __init__(self, inplace=False):
             super().__init__()
             self.lin = nn.Linear(3, 3)
             self.act = nn.ReLU()
             self.act.inplace = inplace

         def forward(self, x):
             g = self.lin(x)
             y = self.act(g)
             y.mul_(2)  # <-
             return y, g


     def observe():
         torch.manual_seed(0)
         with torch.no_grad():
             return Block(True)(torch.randn(2, 3))[1]
     """, "`self.act` may be a module that returns its input"),
    ("a tag set through __dict__.update", """
     def step(model, h, t):
         logits = model(h).logits
         logits.__dict__.update(scaled_by=t)
         logits.div_(t)  # <-
         return logits.scaled_by


     def observe():
         try:
             return torch.as_tensor(step(*model_and_input(), 2.0))
         except AttributeError:  # the rewrite's new tensor has no tag
             return torch.tensor(-1.0)
     """, "`logits.__dict__` is set on the tensor object"),
    ("the output's __dict__ is every field", """
     def step(model, h, t):
         out = model(h)
         logits = out.logits
         logits.div_(t)  # <-
         return logits, out.__dict__


     def observe():
         return step(*model_and_input(), 2.0)[1]["logits"].detach()
     """, "`out` is read after the write"),
]


def _src(body: str) -> str:
    return HEADER + MODEL + "\n\n" + textwrap.dedent(body)


@pytest.mark.parametrize("name, body, reason", UNSAFE, ids=[c[0] for c in UNSAFE])
def test_another_reference_makes_the_fix_unsafe_and_applying_it_changes_values(name, body, reason):
    src = _src(body)
    [finding] = [f for f in fix_code(src).unsafe_skipped if f.line == marked_line(src)]
    assert finding.fix.applicability is Applicability.UNSAFE and finding.fix.reason.startswith(reason), \
        finding.fix.reason
    assert fix_code(src).new_source is None
    forced = fix_code(src, unsafe_fixes=True).new_source
    assert forced is not None and not torch.equal(observe(src), observe(forced))


SHARED = [
    ("a view of the target through a name", """
     def step(model, h):
         logits = model(h).logits
         ref = logits[:, :1]
         logits -= ref  # <-
         return logits
     """, lambda x: x - x[:, :1]),
    ("the target as masked_scatter_'s source", """
     def step(model, h):
         logits = model(h).logits
         keep = torch.tensor([[True, False, True], [False, True, True]])
         logits.masked_scatter_(keep, logits)  # <-
         return logits
     """, lambda x: x.clone().masked_scatter_(torch.tensor([[True, False, True], [False, True, True]]), x)),
]


@pytest.mark.parametrize("name, body, out_of_place", SHARED, ids=[c[0] for c in SHARED])
def test_an_operand_sharing_the_target_gets_no_fix_the_out_of_place_form_computes_otherwise(name, body, out_of_place):
    src = _src(body)
    [finding] = [f for f in analyze_source(src) if f.line == marked_line(src)]
    assert finding.code == "IPV001" and finding.fix is None
    namespace: dict = {}
    exec(compile(src, "<case>", "exec"), namespace)
    model, h = namespace["model_and_input"]()
    with torch.no_grad():
        original = namespace["step"](model, h)
        expected_out_of_place = out_of_place(model(h).logits)
    assert not torch.equal(original, expected_out_of_place)


def test_an_elementwise_op_on_the_target_itself_keeps_its_safe_fix():
    src = _src("""
     def step(model, h):
         logits = model(h).logits
         logits.mul_(logits)  # <-
         return logits
     """)
    [finding] = [f for f in analyze_source(src) if f.line == marked_line(src)]
    assert finding.fix is not None and finding.fix.applicability is Applicability.SAFE
    fixed = fix_code(src).new_source
    run = {}
    for code, key in ((src, "before"), (fixed, "after")):
        namespace: dict = {}
        exec(compile(code, "<case>", "exec"), namespace)
        with torch.no_grad():
            run[key] = namespace["step"](*namespace["model_and_input"]())
    assert torch.equal(run["before"], run["after"])


ENV_FIRST = """import os
os.environ["OMP_NUM_THREADS"] = "1"
import torch


def scale(model, h, t):
    logits = model(h).logits
    logits.div_(t)
    return logits


print(torch.get_num_threads())
"""


def test_the_dtensor_import_goes_after_the_modules_own_torch_import(tmp_path):
    fixed = fix_code(ENV_FIRST).new_source
    assert fixed.startswith('import os\nos.environ["OMP_NUM_THREADS"] = "1"\nimport torch\ntry:\n'
                            "    from torch.distributed.tensor import DTensor\n")
    threads = []
    for code in (ENV_FIRST, fixed):
        path = tmp_path / "case.py"
        path.write_text(code)
        env = {k: v for k, v in os.environ.items() if k != "OMP_NUM_THREADS"}
        threads.append(subprocess.run([sys.executable, str(path)], capture_output=True, text=True, env=env,
                                      check=True).stdout.strip())
    assert threads == ["1", "1"]


# ---- project-wide facts (analysis/class_facts.py): a module elsewhere decides a rewrite here ----

from inplace_lint import workspace  # noqa: E402
from inplace_lint.adapters.cli import main  # noqa: E402

TRAIN = """def sample_scores(model, h, t):
    out = model(h)
    logits = out.logits
    logits.div_(t)
    return logits.softmax(-1)
"""
MODEL_PY = """import torch
from dataclasses import dataclass
from torch import nn


@dataclass
class Out:
    logits: torch.Tensor


class LM(nn.Module):
    def __init__(self):
        super().__init__()
        self.lm_head = nn.Linear(4, 3)

    def forward(self, h):
        return Out(logits=self.lm_head(h))
"""
PROBE = """CAPTURED = []


def keep_output(module, inputs, output):
    CAPTURED.append(output)


def count_calls(module, inputs, output):
    COUNT.append(1)


COUNT = []


def attach(model):
    {register}({hook})
"""


def _check(root, capsys) -> str:
    workspace._PROJECTS.clear()  # a new process: only the disk cache is kept
    main(["check", "-j", "1", "--show-fixes", str(root)])
    return capsys.readouterr().out


def _package(tmp_path, files):
    root = tmp_path / "proj"
    (root / "pkg").mkdir(parents=True)
    (root / "pyproject.toml").write_text("[project]\nname = 'proj'\n")
    (root / "pkg" / "__init__.py").write_text("")
    for name, text in files.items():
        (root / "pkg" / name).write_text(text)
    return root


@pytest.mark.parametrize("register", ["model.lm_head.register_forward_hook",
                                      'getattr(model.lm_head, "register_forward_hook")'])
def test_a_forward_hook_elsewhere_that_keeps_the_output_makes_the_fix_unsafe(tmp_path, capsys, own_cache, register):
    root = _package(tmp_path, {"model.py": MODEL_PY, "train.py": TRAIN, "probe.py": PROBE.format(register="model.lm_head.register_forward_hook", hook="count_calls")})
    first = _check(root, capsys)  # a hook that never reads its output keeps nothing
    assert "train.py:4:5: IPV001" in first and "[fix: safe]" in first, first
    (root / "pkg" / "probe.py").write_text(PROBE.format(register=register, hook="keep_output"))
    second = _check(root, capsys)  # the cached verdict is walked again
    assert "train.py:4:5: IPV001" in second and "[fix: unsafe]" in second, second
    # executed: the hook's tensor is divided by the original and not by the rewrite
    namespace: dict = {}
    exec(compile(MODEL_PY + "\n" + PROBE.format(register=register, hook="keep_output"), "<probe>", "exec"), namespace)
    kept = []
    for code in (TRAIN, fix_code(TRAIN).new_source):
        torch.manual_seed(0)
        lm = namespace["LM"]()
        namespace["attach"](lm)
        run: dict = {}
        exec(compile(code, "<train>", "exec"), run)
        run["sample_scores"](lm, torch.randn(2, 4), 2.0)
        kept.append(namespace["CAPTURED"][-1].detach())
    assert not torch.equal(kept[0], kept[1])


SCRIPTED_MODEL = """import torch
from torch import nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 3)

    def forward(self, x, mask):
        probs = torch.softmax(self.lin(x), -1)
        probs.mul_(mask)
        return probs
"""


@pytest.mark.parametrize("export", [
    "import torch\nfrom .model import Net\n\n\ndef scripted():\n    return torch.jit.script(Net())\n",
    "from torch.jit import script\nfrom . import model as M\n\n\ndef scripted():\n    net = M.Net()\n"
    "    return script(net)\n",
])
def test_a_class_scripted_in_another_file_gets_no_fix(tmp_path, capsys, own_cache, export):
    root = _package(tmp_path, {"model.py": SCRIPTED_MODEL})
    first = _check(root, capsys)
    assert "model.py:12:9: IPV006" in first and "[fix: safe]" in first, first
    (root / "pkg" / "export.py").write_text(export)
    second = _check(root, capsys)
    assert "model.py:12:9: IPV006" in second and "[fix:" not in second, second
    # executed: the rewrite's DTensor guard does not compile as TorchScript
    fixed = fix_code(SCRIPTED_MODEL).new_source
    namespace: dict = {}
    exec(compile(fixed, "<fixed>", "exec"), namespace)
    with pytest.raises(Exception):
        torch.jit.script(namespace["Net"]())
