"""The second review of session 27's facts (/work/notes/s27/review.md): each probe a program executed under torch.

Probes where the first form of the facts hid a hazard (a number default a caller gives a tensor; a ``finally`` that
runs after a ``break``/``return``; a handler starting after a ``for`` iterator, a ``with`` exit or a chained store
raised), gave a false finding (a ``finally`` rebinding the name; a project's own ``map``; ``rearrange`` of a list), or
called a fix safe that is not (a view of the caller's tensor reaching the handler): each now reported, silent, or
unsafe as its execution says.
"""
from __future__ import annotations

import pytest

from inplace_lint.analysis import analyze_source

torch = pytest.importorskip("torch")

SAVED_ERROR = "modified by an inplace operation"

PROBES = {}

# a number default given a saved tensor by its caller
PROBES['n01_number_default_gets_saved_tensor'] = ('import torch\n\ndef add_into(x, acc=0.0):\n    acc += x\n    return acc\n\ndef f(w, x):\n    s = w.sigmoid()\n    total = add_into(x, s)\n    return total.sum() + s.sum()\n\ndef run():\n    w = torch.randn(4, requires_grad=True)\n    f(w, torch.randn(4)).backward()\n    return "backward ran"\n',
    [('IPV006', 4, 4, 'unsafe')],
    'raises')

# a bool default given the caller's mask, which it reads again
PROBES['n03_bool_default_mask_reread'] = ('import torch\nfrom torch import nn\n\nclass Gate(nn.Module):\n    def forward(self, x, keep=True):\n        keep &= x.abs() < 1\n        return x * keep\n\nclass Net(nn.Module):\n    def __init__(self):\n        super().__init__()\n        self.g = Gate()\n\n    def forward(self, x, keep):\n        y = self.g(x, keep=keep)\n        return y, keep.sum()\n\ndef run():\n    x = torch.tensor([0.5, 2.0, -0.2, 3.0])\n    keep = torch.ones(4, dtype=torch.bool)\n    _, n = Net()(x, keep)\n    return f"kept count reread by caller = {int(n)} (4 were passed; caller mask now {keep.tolist()})"\n',
    [('IPV007', 15, 12, None)],
    'value:kept count reread by caller = 2 (4 were passed; caller mask now [True, False, True, False])')

# a number default written under `isinstance(p, torch.Tensor)`
PROBES['n06_number_default_isinstance_tensor_branch'] = ('import torch\n\ndef apply_scale(x, scale=1.0):\n    if isinstance(scale, torch.Tensor):\n        scale *= 2\n    return x * scale\n\ndef f(w, x):\n    s = w.exp()\n    y = apply_scale(x, s)\n    return y.sum() + s.sum()\n\ndef run():\n    w = torch.randn(4, requires_grad=True)\n    f(w, torch.randn(4)).backward()\n    return "backward ran"\n',
    [('IPV006', 5, 8, 'unsafe')],
    'raises')

# a number default annotated `Union[float, torch.Tensor]`
PROBES['n07_number_default_annotated_union'] = ('import torch\nfrom typing import Union\n\ndef add_eps(x, eps: Union[float, torch.Tensor] = 1e-6):\n    eps += 1e-3\n    return x / eps\n\ndef f(w, x):\n    e = w.sigmoid()\n    y = add_eps(x, e)\n    return y.sum() + e.sum()\n\ndef run():\n    w = torch.randn(4, requires_grad=True)\n    f(w, torch.randn(4)).backward()\n    return "backward ran"\n',
    [('IPV006', 5, 4, 'unsafe')],
    'raises')

# a `break` in a `try` whose `finally` writes
PROBES['e02_try_body_break_handler_finally_write'] = ('import torch\n\ndef f(x):\n    y = x * 2\n    for i in range(3):\n        try:\n            y = x.sigmoid()\n            break\n        except RuntimeError:\n            y = x * 3\n        finally:\n            y.mul_(2)\n    return y\n\ndef run():\n    x = torch.randn(4, requires_grad=True)\n    f(x).sum().backward()\n    return "backward ran"\n',
    [('IPV006', 12, 12, 'unsafe')],
    'raises')

# a `return` in a `try` whose `finally` writes
PROBES['e03_try_return_finally_write'] = ('import torch\n\ndef f(x, fail):\n    y = x * 2\n    try:\n        y = x.sigmoid()\n        return y\n    except RuntimeError:\n        y = x * 3\n    finally:\n        y.mul_(2)\n    return y\n\ndef run():\n    x = torch.randn(4, requires_grad=True)\n    f(x, False).sum().backward()\n    return "backward ran"\n',
    [('IPV006', 11, 8, 'unsafe')],
    'raises')

# a `for` iterator raising after a pass ending in `h = h1`
PROBES['e04_for_iterator_raises_after_quiet_end'] = ('import torch\n\ndef batches(n):\n    for i in range(n):\n        yield i\n    raise RuntimeError("stream broke")\n\ndef f(x):\n    h = x * 1\n    try:\n        for i in batches(2):\n            h1 = x.sigmoid()\n            h = h1\n    except RuntimeError:\n        h.mul_(2)\n    return h\n\ndef run():\n    x = torch.randn(4, requires_grad=True)\n    f(x).sum().backward()\n    return "backward ran"\n',
    [('IPV006', 15, 8, 'safe')],
    'raises')

# a `with` whose exit raises after its body
PROBES['e05_with_exit_raises'] = ('import torch\n\nclass Checked:\n    def __enter__(self):\n        return self\n    def __exit__(self, *exc):\n        raise RuntimeError("check failed on exit")\n\ndef f(x):\n    h = x * 1\n    try:\n        with Checked():\n            h1 = x.sigmoid()\n            h = h1\n    except RuntimeError:\n        h.mul_(2)\n    return h\n\ndef run():\n    x = torch.randn(4, requires_grad=True)\n    f(x).sum().backward()\n    return "backward ran"\n',
    [('IPV006', 16, 8, 'safe')],
    'raises')

# `h = cache[0] = v` binding `h` before the store raises
PROBES['e06_chained_assign_partial_bind'] = ('import torch\n\ndef f(x, cache):\n    h = x * 1\n    try:\n        h = cache[0] = x.sigmoid()\n    except TypeError:\n        h.mul_(2)\n    return h\n\ndef run():\n    x = torch.randn(4, requires_grad=True)\n    f(x, ()).sum().backward()   # a tuple cache: the item assignment raises after `h` is bound\n    return "backward ran"\n',
    [('IPV006', 8, 8, 'unsafe')],
    'raises')

# a `continue` whose `finally` rebinds the name to a new tensor
PROBES['e08_continue_finally_rebinds_fresh'] = ('import torch\n\ndef f(x):\n    y = torch.zeros(4)\n    outs = []\n    for i in range(3):\n        y.add_(1)\n        try:\n            y = x.sigmoid()\n            outs.append(y.sum())\n            if i == 0:\n                continue\n        finally:\n            y = torch.zeros(4)\n    return sum(outs)\n\ndef run():\n    x = torch.randn(4, requires_grad=True)\n    f(x).backward()\n    return "backward ran"\n',
    [],
    'value:backward ran')

# a `break` whose `finally` rebinds the name to a new tensor
PROBES['e09_break_finally_rebinds_fresh'] = ('import torch\n\ndef f(x):\n    y = torch.zeros(4)\n    s = 0\n    for i in range(3):\n        try:\n            y = x.sigmoid()\n            s = s + y.sum()\n            if i == 1:\n                break\n        finally:\n            y = torch.zeros(4)\n    y.add_(1)\n    return s + y.sum()\n\ndef run():\n    x = torch.randn(4, requires_grad=True)\n    f(x).backward()\n    return "backward ran"\n',
    [],
    'value:backward ran')

# a project's own `map`
PROBES['m02_map_shadowed_by_project_map'] = ('import torch\n\ndef map(fn, items):\n    # the project\'s own map: applies fn and hands back copies\n    return [fn(t).clone() for t in items]\n\ndef f(x, y, mask):\n    q, k = map(lambda t: t.softmax(dim=-1), (x, y))\n    k.masked_fill_(mask, 0.)\n    return q * k\n\ndef run():\n    x = torch.randn(3, 4, requires_grad=True)\n    f(x, x * 2, torch.tensor([True, False, False, False])).sum().backward()\n    return "backward ran"\n',
    [],
    'value:backward ran')

# `rearrange` of a list of tensors (a stack: a copy)
PROBES['r02_rearrange_list_of_tensors_stacks'] = ('import torch\nfrom einops import rearrange\n\ndef f(x, mask):\n    k = x.softmax(dim=-1)\n    st = rearrange([k, k], "n b d -> b n d")\n    st.masked_fill_(mask, 0.)\n    return st.sum() + k.sum()\n\ndef run():\n    x = torch.randn(2, 4, requires_grad=True)\n    mask = torch.zeros(2, 2, 4, dtype=torch.bool); mask[:, 0, 0] = True\n    f(x, mask).backward()\n    return "backward ran"\n',
    [],
    'value:backward ran')

# a handler after a `with` whose exit raised: `y` may be a view of the caller's `buf`
PROBES['f08_safe_fix_handler_view_of_param'] = ('import torch\n\nclass Checked:\n    def __enter__(self):\n        return self\n    def __exit__(self, *exc):\n        raise RuntimeError("check failed on exit")\n\ndef f(x, buf):\n    y = x.sigmoid()\n    s = y.sum()\n    try:\n        with Checked():\n            v = buf[0:2]\n            y = v\n    except RuntimeError:\n        y.mul_(2)\n    return s\n\ndef run():\n    buf = torch.ones(4)\n    f(torch.zeros(3, requires_grad=True), buf)\n    return buf.tolist()   # [2, 2, 1, 1]: the handler doubled the view of `buf`\n',
    [('IPV006', 17, 8, 'unsafe')],
    'value:[2.0, 2.0, 1.0, 1.0]')

# a handler after a `for` iterator raised: `y` may be a view of `buf`
PROBES['f09_safe_fix_for_iterator_handler_view_of_param'] = ('import torch\n\ndef batches(n):\n    for i in range(n):\n        yield i\n    raise RuntimeError("stream broke")\n\ndef f(x, buf):\n    y = x.sigmoid()\n    s = y.sum()\n    try:\n        for i in batches(2):\n            v = buf[i:i + 2]\n            y = v\n    except RuntimeError:\n        y.mul_(2)\n    return s\n\ndef run():\n    buf = torch.ones(4)\n    f(torch.zeros(3, requires_grad=True), buf)\n    return buf.tolist()   # [1, 2, 2, 1]: the handler doubled the last view of `buf`\n',
    [('IPV006', 16, 8, 'unsafe')],
    'value:[1.0, 2.0, 2.0, 1.0]')

# second review (/work/notes/s27/review2.md): a local table in `__init__` shadowing the module's
PROBES['r09_local_table_shadows_global'] = ('import torch\nfrom torch import nn\n\nLAYERS = {"linear": nn.Linear}\n\n\nclass Block(nn.Module):\n    def __init__(self, dim, kind="id"):\n        super().__init__()\n        LAYERS = {"linear": nn.Linear, "id": lambda a, b: nn.Identity()}\n        self.fc = LAYERS[kind](dim, dim)\n\n    def forward(self, x):\n        h = x * 2\n        y = self.fc(h)\n        h.add_(1)\n        return y\n\n\ndef run():\n    x = torch.randn(2, 4, requires_grad=True)\n    Block(4)(x).sum().backward()\n    return "backward ran"\n',
    [],
    'value:backward ran')

# second review (/work/notes/s27/review2.md): an attribute's function replaced by `setattr`: the model-call guess stands
PROBES['a03_setattr_replaces_policy'] = ('import torch\nfrom torch import nn\n\n\ndef scale_fn(q):\n    return q * 2\n\n\ndef sig_fn(q):\n    return q.sigmoid()\n\n\nclass M(nn.Module):\n    def __init__(self, sharp=True):\n        super().__init__()\n        self.lin = nn.Linear(4, 4)\n        self.policy = scale_fn\n        if sharp:\n            setattr(self, "policy", sig_fn)\n\n    def forward(self, x):\n        y = self.policy(self.lin(x))\n        y.mul_(2)\n        return y\n\n\ndef run():\n    M()(torch.randn(2, 4)).sum().backward()\n    return "backward ran"\n',
    [('IPV001', 23, 8, 'safe')],
    'raises')

# second review (/work/notes/s27/review2.md): `out = coords.view(...).clone()` of a tensor parameter, saved then written
PROBES['c02_view_chain_clone_annotated'] = ('import torch\n\n\ndef normalize(coords: torch.Tensor):\n    out = coords.view(-1, 2).clone()\n    s = out[..., 0].clamp(-1, 1)\n    out.mul_(2)\n    return s, out\n\n\ndef run():\n    w = torch.randn(3, 2, requires_grad=True)\n    s, out = normalize(w * 1)\n    s.sum().backward()\n    return "backward ran"\n',
    [('IPV006', 7, 4, 'unsafe')],
    'raises')


@pytest.mark.parametrize("name", sorted(PROBES))
def test_review_probe(name):
    source, expected, outcome = PROBES[name]
    findings = analyze_source(source)
    assert [(f.code, f.line, f.col, f.fix.applicability.value if f.fix else None) for f in findings] == expected
    namespace = {"__name__": "probe"}
    exec(compile(source, f"{name}.py", "exec"), namespace)
    if outcome == "raises":
        with pytest.raises(RuntimeError, match=SAVED_ERROR):
            namespace["run"]()
    else:
        assert "value:" + str(namespace["run"]()) == outcome
