"""Fix safety and rewrite edge cases, from an adversarial review: each case once produced a wrong
or crashing rewrite labelled safe, a false finding, or a crash."""
from __future__ import annotations

import ast
import textwrap

import pytest

from inplace_lint.fixing import fix_code
from inplace_lint.analysis import analyze_source
from inplace_lint.findings import Applicability


def _fixes(src):
    return [(f.line, f.fix and f.fix.applicability, f.fix and f.fix.reason) for f in analyze_source(textwrap.dedent(src))]


def _only_fix(src):
    [(line, applicability, reason)] = _fixes(src)
    return applicability, reason


@pytest.mark.parametrize("src, reason", [
    ("""
     def f(model, h, t):
         x = model(h).logits.squeeze(0)
         saved = [x]
         x.div_(t)
         return saved[0]
     """, "`x` is put in a container (line 4), where the change would no longer be seen"),
    ("""
     def f(model, h, t):
         output = model(h)
         res = output
         x = output.logits.squeeze(0)
         x.div_(t)
         return res.logits
     """, "`res` is read after the write (line 7) and would no longer see the change"),
    ("""
     def f(model, h, t):
         output = model(h)
         get = lambda: output.logits
         x = output.logits.squeeze(0)
         x.div_(t)
         return get()
     """, "`output` is used by a nested function, lambda or generator (line 4), which would no longer see the change"),
    ("""
     def f(model, h, t):
         x = model(h).logits.squeeze(0)
         arr = x.numpy()
         x.div_(t)
         return arr
     """, "`arr` is read after the write (line 6) and would no longer see the change"),
    ("""
     def f(model, h, t):
         x = model(h).logits.squeeze(0)
         parts = list(x.unbind(0))
         x.div_(t)
         return parts
     """, "`x` is passed to `list`, which may keep it (line 4), where the change would no longer be seen"),
    ("""
     def f(model, h, t, acc):
         output = model(h)
         x = output.logits.squeeze(0)
         for i in range(2):
             if i == 0:
                 x.div_(t)
             else:
                 acc.append(output.logits.clone())
     """, "`output` is read after the write (line 9) and would no longer see the change"),
    ("""
     def f(model, h, t, flag):
         a = model(h).logits
         b = model(h).logits
         x = a if flag else b
         x.div_(t)
         return b
     """, "`b` is read after the write (line 7) and would no longer see the change"),
])
def test_observers_make_the_fix_unsafe(src, reason):
    assert _only_fix(src) == (Applicability.UNSAFE, reason)


def test_reads_in_the_other_arm_outside_loops_do_not_count():
    src = """
    def f(model, h, t, flag):
        output = model(h)
        if flag:
            x = output.logits.squeeze(0)
            x.div_(t)
        else:
            return output.logits
        return x
    """
    assert _only_fix(src) == (Applicability.SAFE, "")


def test_non_tensor_model_outputs_are_not_written_tensors():
    src = """
    def f(self, batch, n):
        loss, logs = self.model(batch)
        logs["lr"] = 1e-3
        outputs = self.model(batch)
        m = outputs[1]
        m["n"] = 0
        first = outputs[0]
        first /= n
        outputs[0].div_(n)
    """
    assert [(f.line, f.code) for f in analyze_source(textwrap.dedent(src))] == [(10, "IPV001")]


@pytest.mark.parametrize("src", [
    "def f(model, h, t, temps):\n    x = model(h).logits\n    y = (temps.pop(0), x.div_(temps.pop(0)))\n    return y\n",
    "def f(model, h, t):\n    x = model(h).logits\n    z = torch.cat([t.add_(1).view(1), x.div_(t)])\n    return z\n",
    "def f(model, h, t, n):\n    x = model(h).logits\n    ok = 0 < n < x.div_(t).sum()\n    return ok\n",
])
def test_hoisting_never_reorders_side_effects(src):
    [finding] = [f for f in analyze_source(src) if f.line == 3 and "`x`" in f.message]
    assert finding.fix is None
    assert fix_code(src).new_source is None


def test_no_hoist_after_a_semicolon():
    src = "import torch\ndef f(model, h, t):\n    x = model(h).logits.squeeze(0); y = torch.sigmoid(x.div_(t))\n    return y\n"
    result = fix_code(src)
    assert result.new_source is None and [f.line for f in result.unfixed] == [3]


@pytest.mark.parametrize("src", [
    "import torch\ndef f(model, h):\n    x = model(h).logits\n    torch.zero_(x)\n",
    "import torch\ndef f(model, h, y):\n    x = model(h).logits\n    torch.resize_as_(x, y)\n",
])
def test_function_forms_without_a_twin_get_no_fix(src):
    [finding] = analyze_source(src)
    assert finding.fix is None


def test_comments_inside_a_multi_line_call_survive_both_styles():
    src = textwrap.dedent("""\
        def f(model, h):
            x = model(h).logits
            x.masked_fill_(  # mask the padding
                x > 2,  # mask
                0.0,  # with zero
            )
            return x
        """)
    runtime = fix_code(src, style="runtime").new_source
    assert runtime == textwrap.dedent("""\
        from inplace_lint.runtime import out_of_place

        def f(model, h):
            x = model(h).logits
            x = out_of_place(  # mask the padding
                x, "masked_fill_", x > 2,  # mask
                0.0,  # with zero
            )
            return x
        """)
    inline = fix_code(src, style="inline").new_source
    assert ("    _x_operand = x > 2\n"  # an operand that reads the target: held before the guard may gather it
            "    if isinstance(x, DTensor) and not isinstance(_x_operand, DTensor) and getattr(_x_operand, \"ndim\", 0) > 0:\n"
            "        x = x.full_tensor()\n"
            "    x = x.clone().masked_fill_(  # mask the padding\n        _x_operand,  # mask\n        0.0,  # with zero\n    )\n"
            ) in inline
    for text in (runtime, inline):
        ast.parse(text)
        assert fix_code(text, style="inline").new_source is None


def test_operator_form_keeps_precedence():
    src = "def f(model, h, a, b):\n    x = model(h).logits\n    x.mul_(a + b)\n    x *= a - b\n    return x\n"
    out = fix_code(src, style="inline").new_source
    assert "    _x_operand = a + b\n" in out and "    _x_operand = a - b\n" in out
    assert out.count("    x = x.clone().mul_(_x_operand)\n") == 2


def test_positional_inplace_flag_is_found_and_removed():
    src = ("import torch.nn.functional as F\ndef f(model, h):\n    x = model(h).logits\n    F.relu(x, True)\n"
           "    F.dropout(x, 0.1, True, True)\n    F.dropout(x, 0.1, False, True)\n    return x\n")
    assert [f.line for f in analyze_source(src)] == [4, 5]
    out = fix_code(src).new_source
    assert "    x = F.relu(x)\n    x = F.dropout(x, 0.1, True)\n" in out


def test_false_positives_from_review():
    src = textwrap.dedent("""\
        import torch
        def f(a, x, outputs):
            a.expand(4, 5).contiguous().add_(1)
            torch.distributions.Categorical(logits=x).logits.sub_(1)
            for o in outputs:
                o["logits"] = 0
        """)
    assert analyze_source(src) == []


def test_false_negatives_from_review():
    src = textwrap.dedent("""\
        import torch
        def f(x, h, t):
            y = _VocabParallelLinear.apply(h)
            y.div_(t)
            a, b = torch.split(x, 3)
            a.mul_(2)
        """)
    assert [(f.line, f.code) for f in analyze_source(src)] == [(4, "IPV002"), (6, "IPV003")]


def test_long_elif_chain_does_not_crash():
    src = "def f(x, t, output):\n    y = output.logits\n" + "".join(
        f"    {'if' if i == 0 else 'elif'} x == {i}:\n        y.div_(t)\n" for i in range(600))
    assert len(analyze_source(src)) == 600


def test_form_feed_and_non_ascii_before_the_call():
    src = "def f(model, h, t):\n    \x0c\n    x = model(h).logits\n    s = 'é'; x.div_(t)\n    x.mul_(t)  # é\n"
    out = fix_code(src, style="runtime").new_source
    assert '    x = out_of_place(x, "mul_", t)  # é\n' in out


def test_ipv006_rewrite_runs_backward_where_the_original_fails():
    """TRL PR 7125's shape: the original fails at backward; the rewrite matches the out-of-place reference."""
    torch = pytest.importorskip("torch")
    src = textwrap.dedent("""\
        import torch.nn.functional as F

        def entropy(logits):
            logps = F.log_softmax(logits, dim=-1)
            probs = logps.exp()
            probs.mul_(logps)
            return -probs.sum(-1)
        """)
    [finding] = analyze_source(src)
    assert (finding.code, finding.line, finding.fix.applicability) == ("IPV006", 6, Applicability.SAFE)
    rewritten = fix_code(src, style="inline").new_source
    assert "    probs = probs.clone().mul_(logps)\n" in rewritten

    def run(code):
        namespace = {}
        exec(compile(code, "<fixture>", "exec"), namespace)
        logits = torch.linspace(-2, 2, 12).reshape(3, 4).requires_grad_()
        out = namespace["entropy"](logits)
        out.sum().backward()
        return out.detach(), logits.grad

    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        run(src)
    out, grad = run(rewritten)
    logits = torch.linspace(-2, 2, 12).reshape(3, 4).requires_grad_()
    logps = torch.log_softmax(logits, -1)
    expected = -(logps.exp() * logps).sum(-1)
    expected.sum().backward()
    torch.testing.assert_close(out, expected.detach(), rtol=0, atol=0)
    torch.testing.assert_close(grad, logits.grad, rtol=0, atol=0)


def test_getattr_field_and_conditional_inplace_module():
    src = textwrap.dedent("""\
        import torch.nn as nn
        def f(out, t):
            x = getattr(out, "logits")
            x.div_(t)

        class Head(nn.Module):
            def __init__(self, fast):
                super().__init__()
                if fast:
                    self.act = nn.ReLU(inplace=True)
                else:
                    self.act = nn.ReLU()

            def forward(self, output):
                return self.act(output.logits)
        """)
    assert [(f.line, f.code) for f in analyze_source(src)] == [(4, "IPV001"), (15, "IPV001")]


@pytest.mark.parametrize("src, reason", [
    ("""
     def f(model, h):
         x = model(h).logits
         try:
             return x
         finally:
             x.mul_(2.0)
     """, "the write is in a `finally` block, after what the `try` block returns"),
    ("""
     import torch
     def f(model, h):
         x = model(h).logits
         y = torch.as_tensor(x)
         x.mul_(2.0)
         return y
     """, "`y` is read after the write (line 7) and would no longer see the change"),
    ("""
     import torch
     def f(model, h):
         x = model(h).logits
         ds = torch.utils.data.TensorDataset(x)
         x.mul_(2.0)
         return ds
     """, "`ds` is read after the write (line 7) and would no longer see the change"),
    ("""
     def f(model, h):
         x = model(h).logits[0, 0]
         y = max(x, -100.0)
         x.mul_(2.0)
         return y
     """, "`y` is read after the write (line 6) and would no longer see the change"),
    ("""
     def f(model, h):
         x = model(h).logits
         y = None
         for i in range(2):
             if i == 1:
                 x.mul_(2.0)
             else:
                 (y := x)
         return y
     """, "`y` is read after the write (line 10) and would no longer see the change"),
    ("""
     x = model(h).logits
     x.mul_(2.0)
     """, "module-level names can be imported by other code, which would no longer see the change"),
])
def test_second_review_observers(src, reason):
    assert _only_fix(src) == (Applicability.UNSAFE, reason)


def test_no_hoist_when_an_alias_is_read_in_the_same_statement():
    src = "def f(model, h):\n    x = model(h).logits\n    a = x[0]\n    y = a + x.mul_(2.0)\n    return y\n"
    [finding] = analyze_source(src)
    assert finding.fix is None
    assert fix_code(src).new_source is None


def test_function_form_keeps_the_dtype():
    src = "import torch\ndef f(model, h, w):\n    x = model(h).logits\n    torch.xlogy_(x, w)\n    return x\n"
    assert "    x = torch.xlogy_(x.clone(), w)\n" in fix_code(src).new_source


@pytest.mark.parametrize("src, reason", [
    ("""
     def f(model, h, t):
         logits = model(h).squeeze(0)
         logits.register_hook(lambda g: g.clamp(-0.01, 0.01))
         logits.div_(t)
         return (logits ** 2).sum()
     """, "`logits` has `.register_hook` on the tensor object (line 4), where the change would no longer be seen"),
    ("""
     def f(model, h, t):
         logits = model(h).squeeze(0)
         logits.retain_grad()
         logits.div_(t)
         return logits
     """, "`logits` has `.retain_grad` on the tensor object (line 4), where the change would no longer be seen"),
    ("""
     import torch
     def f(model, h, t):
         logits = model(h).logits
         alias = torch.einsum("ij->ji", logits)
         logits.div_(t)
         return alias.sum()
     """, "`alias` is read after the write (line 7) and would no longer see the change"),
])
def test_hooks_and_einsum_views_make_the_fix_unsafe(src, reason):
    """A hook or retained grad lives on the tensor object the rebinding leaves behind; einsum with a
    permutation-only equation returns a view."""
    assert _only_fix(src) == (Applicability.UNSAFE, reason)


def test_matmul_augmented_assignment_is_a_rebinding_not_a_write():
    src = textwrap.dedent("""\
        def f(Fn, h, w, t):
            x = Fn.apply(h)
            x @= w
            x.div_(t)
            return x
        """)
    assert analyze_source(src) == []  # `@=` rebinds x to x @ w, a new tensor; nothing is written in place
