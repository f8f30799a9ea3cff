"""Exact messages, origins and positions for representative findings."""
import textwrap

from inplace_lint.analysis import analyze_source
from inplace_lint.config import Settings
from inplace_lint.findings import RootKind, StepKind, WriteKind

SEED = textwrap.dedent(
    """\
    def prepare_model_outputs(self, output, output_args):
        temperature_rmpad = output_args["temperature_rmpad"]
        logits_rmpad = output.logits.squeeze(0)  # (total_nnz, vocab_size)
        logits_rmpad.div_(temperature_rmpad.clamp(min=1e-8).unsqueeze(-1).to(logits_rmpad.dtype))
    """
)


def test_seed_message_names_op_target_view_and_model_output():
    [f] = analyze_source(SEED)
    assert (f.code, f.line, f.col, f.end_line) == ("IPV001", 4, 4, 4)
    assert f.message == "`div_` writes in place to `logits_rmpad`, a view of model output `output.logits`"
    # the chain is structured: root, then each view step, each a location
    assert [(r.message, r.line) for r in f.related] == [("model output `output.logits`", 3),
                                                         ("view `.squeeze(0)`", 3)]
    assert f.write_kind is WriteKind.METHOD
    assert f.origin.root is RootKind.MODEL_OUTPUT
    assert [s.kind for s in f.origin.steps] == [StepKind.VIEW]


def test_augmented_assignment_message():
    [f] = analyze_source("def f(model, x, t):\n    y = model(x).logits.float()\n    y /= t\n")
    assert f.message == "`/=` writes in place to `y`, a possible alias of model output `model(x).logits`"


def test_expand_message_and_code():
    [f] = analyze_source("def f(t, n):\n    e = t.expand(n)\n    e.clamp_(min=1e-8)\n")
    assert f.code == "IPV004"
    # the write raises only where the expand repeats an element (a batch of 1 trains fine): it says when
    assert f.message == ("`clamp_` writes in place to `e`, an expanded view of `t`; raises when `.expand(n)` "
                         "makes a size-1 dimension larger than 1 (its elements then share memory)")


def test_expand_message_names_the_expand_that_repeats():
    source = textwrap.dedent(
        """        def dpo_loss(chosen_logps, ref_logps, batch_size):
            ref = ref_logps.expand(batch_size, -1)
            ref.sub_(chosen_logps)
            return ref
        """
    )
    [f] = analyze_source(source)
    assert (f.code, f.line, f.col) == ("IPV004", 3, 4)
    assert f.message == ("`sub_` writes in place to `ref`, an expanded view of `ref_logps`; raises when "
                         "`.expand(batch_size, -1)` makes a size-1 dimension larger than 1 (its elements then "
                         "share memory)")


DROPOUT = textwrap.dedent(
    """    import torch.nn as nn
    import torch.nn.functional as F


    class Attention(nn.Module):
        def __init__(self, p):
            super().__init__()
            self.p = p
            self.attn_drop = nn.Dropout(p, inplace=True)

        def forward(self, q, k):
            probs = (q @ k.transpose(-2, -1)).softmax(-1)
            F.dropout(probs, self.p, self.training, inplace=True)
            return probs

        def forward_module(self, q, k):
            probs = (q @ k.transpose(-2, -1)).softmax(-1)
            self.attn_drop(probs)
            return probs

        def forward_always(self, q, k):
            probs = (q @ k.transpose(-2, -1)).softmax(-1)
            F.dropout(probs, p=0.1, inplace=True)
            return probs

        def forward_never(self, q, k):
            probs = (q @ k.transpose(-2, -1)).softmax(-1)
            F.dropout(probs, p=0.0, inplace=True)
            F.dropout(probs, self.p, training=False, inplace=True)
            F.alpha_dropout(probs, 0.1, inplace=True)
            return probs
    """
)


def test_dropout_on_a_saved_output_says_when_backward_raises():
    found = analyze_source(DROPOUT)
    assert [(f.code, f.line, f.col) for f in found] == [("IPV006", 13, 8), ("IPV006", 18, 8), ("IPV006", 23, 8)]
    saved = "writes in place to `probs`, `(q @ k.transpose(-2, -1)).softmax(-1)`, whose output autograd saves for backward"
    guess = " (it does when `q` requires grad)"  # (a guess about the parameter: the callers decide)
    assert found[0].message == (f"`F.dropout(..., inplace=True)` {saved}; backward raises when `self.training` is "
                                f"true and the dropout probability `self.p` is above 0{guess}")
    assert found[1].message == (f"`nn.Dropout(inplace=True)` {saved}; backward raises when `self.attn_drop` is in "
                                f"training mode{guess}")
    # p=0.1 with F.dropout's default training=True: it always writes, nothing to condition on but the guess
    assert found[2].message == f"`F.dropout(..., inplace=True)` {saved}{guess}"


def test_dropout_on_a_model_output_says_when_it_writes():
    source = "import torch.nn.functional as F\ndef f(self, model, x):\n    F.dropout(model(x).logits, self.p, self.training, inplace=True)\n"
    [f] = analyze_source(source)
    assert (f.code, f.message) == ("IPV001", "`F.dropout(..., inplace=True)` writes in place to model output "
                                   "`model(x).logits`, when `self.training` is true and the dropout probability "
                                   "`self.p` is above 0")


def test_settings_add_model_output_names_and_fields():
    src = "def f(net_out, t):\n    net_out.scores.div_(t)\n"
    assert analyze_source(src) == []
    settings = Settings(model_output_fields=frozenset({"scores"}), model_output_names=frozenset({"net_out"}))
    [f] = analyze_source(src, settings)
    assert (f.code, f.line, f.col) == ("IPV001", 2, 4)


def test_report_in_no_grad_setting():
    src = "import torch\ndef f(model, x, t):\n    with torch.no_grad():\n        model(x).logits.div_(t)\n"
    assert analyze_source(src) == []
    [f] = analyze_source(src, Settings(report_in_no_grad=True))
    assert (f.code, f.line) == ("IPV001", 4)


def test_module_level_code_is_analyzed():
    [f] = analyze_source("out = model(x)\nout.logits.mul_(2)\n")
    assert (f.code, f.line, f.col) == ("IPV001", 2, 0)


def test_target_that_is_its_own_root_is_not_named_twice():
    src = ("import torch\ndef f(model, x, t):\n    output = model(x)\n"
           "    output['logits'] = output['logits'].to(torch.float32)\n    output['logits'].div_(t)\n")
    [f] = analyze_source(src)
    assert (f.code, f.line) == ("IPV001", 5)
    assert f.message == "`div_` writes in place to a possible alias of model output `output['logits']`"


def test_custom_function_output_returned_by_a_helper_is_not_called_a_custom_function():
    src = ("def forward_step(model, x):\n    return model(x).full_tensor()\n\n"
           "def step(model, x, t):\n    logits = forward_step(model, x)\n    logits.div_(t)\n")
    [f] = analyze_source(src)
    assert f.code == "IPV002"
    assert f.message.startswith(
        "`div_` writes in place to `logits`, what `forward_step(...)` returns, a custom autograd Function's output")


def test_a_helper_reached_through_another_is_named_once():
    source = textwrap.dedent(
        """\
        def fill(dst, src):
            dst.copy_(src)


        def middle(dst, src):
            fill(dst, src)


        def outer(model, ids, src):
            out = model(ids)
            middle(out.logits.squeeze(0), src)
        """
    )
    [f] = analyze_source(source)
    assert (f.code, f.line, f.col) == ("IPV001", 11, 4)
    # the caller's remedy follows: nothing reads `out` after the call, so a clone hides nothing
    assert f.message == ("`copy_` in `fill()` (line 2) writes in place to `out.logits.squeeze(0)`, "
                         "a view of model output `out.logits`; at this call: pass `out.logits.squeeze(0).clone()`")


def test_a_parameter_guess_gives_way_to_what_the_callers_pass():
    from pathlib import Path

    path = Path(__file__).resolve().parent.parent / "fixtures/detect/IPV003/callers_decide.py"
    found = analyze_source(path.read_text(), filename=str(path))
    assert [(f.code, f.line, f.col) for f in found] == [("IPV003", 17, 4), ("IPV003", 37, 8)]
    assert found[0].message == ("`mul_` writes in place to `a`, one output of `.chunk(2)` of model output "
                                "`model(ids).logits`, passed by the call at line 22")


TWO_CACHES = textwrap.dedent(
    """\
    def zero(k, v, idx):
        for cache in (k, v):
            view = cache
            view.index_copy_(0, idx, view.index_select(0, idx))


    def caller(kv, idx):
        key_cache, value_cache = kv.split(4, dim=-1)
        zero(key_cache, value_cache, idx)
    """
)


def test_a_helper_writing_two_parameters_at_one_line_names_the_same_argument_in_every_process():
    # `view` holds either parameter: the helper's writes are recorded in parameter order, not in the
    # order of a set of origins (string hashes vary per process), so the call names `key_cache` always
    import os
    import subprocess
    import sys

    code = ("import sys; from inplace_lint.analysis import analyze_source; "
            "print([f.message for f in analyze_source(sys.stdin.read())])")
    seen = set()
    for seed in range(1, 7):
        env = dict(os.environ, PYTHONHASHSEED=str(seed))
        out = subprocess.run([sys.executable, "-c", code], input=TWO_CACHES, env=env, capture_output=True,
                             text=True, check=True).stdout
        seen.add(out.strip())
    assert seen == {repr(["`index_copy_` in `zero()` (line 4) writes in place to `key_cache`, one output of "
                          "`.split(4, dim=-1)` of `kv`; at this call: clone `key_cache` before the call "
                          "(`key_cache = key_cache.clone()`), though `kv` is a parameter: the caller would no "
                          "longer see the change to `kv`"])}
