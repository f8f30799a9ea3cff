"""Issue 20, kinds 4 and 5: facts the code proves, in place of guesses from names, and submodules
resolved by class hierarchy. Each case: the code, and the exact findings (code, line, message) or none."""
from __future__ import annotations

import textwrap

import pytest

from inplace_lint.analysis import analyze_source


def _found(src):
    return [(f.code, f.line, f.message) for f in analyze_source(textwrap.dedent(src))]


# ------------------------------------------------------------------ kind 4: names standing in for facts

NOT_OUTPUTS = [
    # a parameter called `outputs` that the function appends to is a list, not a model output
    """
    def merge(outputs, t):
        outputs.append(outputs[0] * 2)
        outputs[0].div_(t)
        return outputs
    """,
    # every caller passes a list it built: what they pass decides, not the parameter's name
    """
    def merge(outputs, t):
        outputs[0].div_(t)
        return outputs

    def f(x, t):
        return merge([x * 2, x * 3], t)
    """,
    # `output.logprobs` known only by the name `output`: a list of dicts (vLLM's), item writes prove nothing
    """
    def post(output, t):
        for d in output.logprobs:
            d[0] = 1.0
        output.logprobs[0][5] = -1.0
        return output
    """,
    # a method of the project's own class is not a model call, whatever it is called
    """
    class Layer:
        def message_module(self, x):
            return x * 2

        def forward(self, x, t):
            y = self.message_module(x)
            y.div_(t)
            return y
    """,
    # `self.propagate(...)` resolved in the project to a method that returns a new tensor
    """
    import torch

    class Conv(MessagePassing):
        def propagate(self, edge_index, x):
            return torch.zeros_like(x).index_add(0, edge_index, x)

        def forward(self, x, edge_index, t):
            out = self.propagate(edge_index, x=x)
            out.div_(t)
            return out
    """,
    # a function returning a tuple of fresh tensors is not a split/unbind
    """
    import torch

    def pair(x):
        return x * 2, x + 1

    def f(x: torch.Tensor, t):
        a, b = pair(x)
        a.div_(t)
        b[0] = 0.0
        return a, b
    """,
    # `.chunk`/`.split`/`.unbind` called with a tensor argument is not a tensor's (they take sizes and dims)
    """
    import torch

    def f(x: torch.Tensor, t, sampler, attn):
        parts = sampler.chunk(x, 2)
        parts[0].div_(t)
        q, k, v = attn.unbind(x)
        q.mul_(t)
        return parts, q
    """,
]


NOT_OUTPUTS.append(
    # a public method whose one caller (the module's forward) passes a list of activations it computed:
    # the project's own call outweighs the parameter's name (found in a released TTS model's `parse_output`)
    """
    import torch
    from torch import nn


    class Decoder(nn.Module):
        def __init__(self):
            super().__init__()
            self.proj = nn.Linear(4, 4)

        def forward(self, x):
            steps = [self.proj(x[:, i]) for i in range(x.shape[1])]
            return torch.stack(steps, dim=1), torch.stack([s.sum(-1) for s in steps], dim=1)


    class Synth(nn.Module):
        def __init__(self):
            super().__init__()
            self.decoder = Decoder()
            self.postnet = nn.Linear(4, 4)

        def forward(self, x, lengths):
            mel, gate = self.decoder(x)
            post = mel + self.postnet(mel)
            return self.parse_output([mel, post, gate], lengths)

        def parse_output(self, outputs, lengths):
            mel, post, gate = outputs
            mask = torch.arange(mel.shape[1])[None, :] >= lengths[:, None]
            post.masked_fill_(mask[..., None], 0.0)
            gate.masked_fill_(mask, 1e3)
            return mel, post, gate
    """)


def test_list_of_activations_runs_under_torch():
    """The `parse_output` case above trains: the masked writes are legal."""
    torch = pytest.importorskip("torch")
    namespace: dict = {}
    exec(compile(textwrap.dedent(NOT_OUTPUTS[-1]), "<synth>", "exec"), namespace)
    x = torch.randn(2, 3, 4, requires_grad=True)
    mel, post, gate = namespace["Synth"]()(x, torch.tensor([3, 1]))
    (mel.sum() + post.sum() + gate.sum()).backward()
    assert x.grad is not None and bool((post[1, 1:] == 0).all())


@pytest.mark.parametrize("src", NOT_OUTPUTS)
def test_names_do_not_make_facts(src):
    assert _found(src) == []


@pytest.mark.parametrize("src, expected", [
    # the caller passes a model's output object: the write is found through the call
    ("""
     def _merge(outputs, t):
         outputs[0].div_(t)
         return outputs

     def f(model, x, t):
         return _merge(model(x), t)
     """, [("IPV001", 3, "`div_` writes in place to `outputs[0]`, a view of model output object `model(...)`, "
                         "passed by the call at line 7")]),
    # a list holding a model output: its items reach the callee's items
    ("""
     def merge(outputs, t):
         outputs[0].div_(t)
         return outputs

     def f(model, x, t):
         return merge([model(x).logits], t)
     """, [("IPV001", 3, "`div_` writes in place to `outputs[0]`, model output `model(x).logits`, "
                         "passed by the call at line 7")]),  # the item is the tensor itself (issue 20: tuple items)
    # no caller in the project: the guess stays
    ("""
     def merge(outputs, t):
         outputs[0].div_(t)
         return outputs
     """, [("IPV001", 3, "`div_` writes in place to model output `outputs[0]`")]),
    # one caller passes a list of activations, the other a model's output object
    ("""
     def _merge(outputs, t):
         outputs[0].div_(t)
         return outputs

     def f(model, x, t):
         a = _merge([x * 2], t)
         return _merge(model(x), t)
     """, [("IPV001", 3, "`div_` writes in place to `outputs[0]`, a view of model output object `model(...)`, "
                         "passed by the call at line 8")]),
    # a `*_` method on a guessed field still proves a tensor
    ("""
     def post(output, t):
         output.logprobs.div_(t)
         return output
     """, [("IPV001", 3, "`div_` writes in place to model output `output.logprobs`")]),
    # `.chunk(2)` of an untracked object is still the guess it was
    ("""
     def f(x, t):
         parts = x.chunk(2)
         parts[0].div_(t)
         return parts
     """, [("IPV003", 4, "`div_` writes in place to `parts[0]`, one output of `.chunk(2)` of `x`")]),
])
def test_what_the_code_proves_is_still_found(src, expected):
    assert _found(src) == expected


# ------------------------------------------------------------------ kind 5: submodules by class hierarchy

GP = """
import torch
from torch import nn


class Kernel(nn.Module):
    def forward(self, x):
        return x @ x.T


class Exponent(Kernel):
    def forward(self, x):
        return (x @ x.T).exp()


class RBF(Kernel):
    def forward(self, x):
        return torch.exp(-torch.cdist(x, x)) * 1.0


class GP(nn.Module):
    def __init__(self, kernel: KERNEL_TYPE):
        super().__init__()
        self.kernel = KERNEL_VALUE

    def forward(self, X, jitter):
        K = self.kernel(X)
        n = K.shape[0]
        K.view(-1)[::n + 1] += jitter
        return K.sum()
"""

EXPONENT = ("IPV006", 29, "`+=` on an item writes in place to `K.view(-1)`, a view of `self.kernel(...)`, whose "
            "output autograd saves for backward (raises when `kernel` is `Exponent`, whose forward returns "
            "`(x @ x.T).exp()`)")


def _gp(kernel_type, kernel_value):
    return GP.replace("KERNEL_TYPE", kernel_type).replace("KERNEL_VALUE", kernel_value)


@pytest.mark.parametrize("kernel_type, kernel_value, expected", [
    ("Kernel", "kernel", [EXPONENT]),  # annotated with the base: every project subclass may be there
    ("Kernel", "Exponent()", [EXPONENT]),  # built in __init__
    ("Kernel", "RBF()", []),  # RBF's forward returns a product, which autograd does not need
    ("RBF", "kernel", []),
    ("object", "kernel", []),  # an implementation the project cannot see: submodule outputs stay quiet
])
def test_submodule_forward_decides(kernel_type, kernel_value, expected):
    assert _found(_gp(kernel_type, kernel_value)) == expected


@pytest.mark.parametrize("kernel, raises", [("Exponent", True), ("RBF", False), ("Kernel", False)])
def test_submodule_hazard_is_real_under_torch(kernel, raises):
    """The finding's condition, executed: the write raises at backward exactly for `Exponent`."""
    torch = pytest.importorskip("torch")
    namespace: dict = {}
    exec(compile(_gp("Kernel", "kernel"), "<gp>", "exec"), namespace)
    model = namespace["GP"](namespace[kernel]())
    X = torch.randn(4, 2, requires_grad=True)
    if raises:
        with pytest.raises(RuntimeError, match="modified by an inplace operation"):
            model(X, 0.1).backward()
    else:
        model(X, 0.1).backward()
        assert X.grad is not None


def test_submodule_activation_saved_output():
    src = """
    import torch
    from torch import nn


    class Gate(nn.Module):
        def forward(self, x):
            return torch.sigmoid(x)


    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.gate = Gate()
            self.proj = nn.Linear(4, 4)

        def forward(self, x):
            g = self.gate(x)
            g.mul_(2)
            h = self.proj(x)
            h.mul_(2)
            return g + h
    """
    assert _found(src) == [
        ("IPV006", 19, "`mul_` writes in place to `g`, `self.gate(...)`, whose output autograd saves for backward "
                       "(raises when `gate` is `Gate`, whose forward returns `torch.sigmoid(x)`)")]


# ------------------------------------------------------------------ @property getters are calls

PROPERTY = """
import torch
from torch import nn


class Scale(nn.Module):
    def __init__(self):
        super().__init__()
        self.raw = nn.Parameter(torch.ones(3))

    @property
    def scale(self):
        return self.raw.sqrt()

    def forward(self, x):
        s = self.scale
        s.add_(1e-6)
        return x * s
"""


def test_property_getter_is_a_call():
    """A saved output reached through a @property of self (issue 20, a miss in a released library)."""
    assert _found(PROPERTY) == [
        ("IPV006", 17, "`add_` writes in place to `s`, `self.scale (property)`, whose output autograd saves for "
                       "backward")]
    torch = pytest.importorskip("torch")
    namespace: dict = {}
    exec(compile(PROPERTY, "<scale>", "exec"), namespace)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        namespace["Scale"]()(torch.ones(3)).sum().backward()


def test_a_submodule_named_like_a_model_is_what_its_project_class_computes():
    """`self.actor_module` built from (or annotated with) a project class runs that class's forward (or an
    override in the project): the implementation decides, not the name. `h * 2` is an activation, and
    dividing it in place is legal (executed below). Only a head we cannot see (an unannotated parameter,
    a class from outside the project) counts as the model-call patterns say: it may be a custom Function."""
    built = """
    from torch import nn


    class Head(nn.Module):
        def forward(self, h):
            return h * 2


    class Policy(nn.Module):
        def __init__(self):
            super().__init__()
            self.actor_module = Head()

        def step(self, x, t):
            logits = self.actor_module(x)
            logits.div_(t)
            return logits
    """
    assert _found(built) == []
    annotated = built.replace("def __init__(self):", "def __init__(self, actor_module: Head):").replace(
        "self.actor_module = Head()", "self.actor_module = actor_module")
    assert _found(annotated) == []
    unseen = annotated.replace("actor_module: Head", "actor_module")
    assert _found(unseen) == [("IPV001", 17, "`div_` writes in place to `logits`, model output "
                                             "`self.actor_module(...)`")]
    torch = pytest.importorskip("torch")
    namespace = {}
    exec(compile(textwrap.dedent(built), "<policy>", "exec"), namespace)
    x = torch.randn(2, 3, requires_grad=True)
    namespace["Policy"]().step(x, 0.5).sum().backward()
    assert torch.equal(x.grad, torch.full((2, 3), 4.0))
