"""The saved-for-backward table (``ops.SAVED_FOR_BACKWARD``): generated from torch's derivative formulas,
and every fact in it executed under the installed torch: writing what it says the backward reads makes
the backward raise (docs/pytorch-facts.md#saved-output, #saved-input)."""
import pathlib
import sys

import pytest

from inplace_lint.torch_facts import ops

torch = pytest.importorskip("torch")
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "scripts"))
import generate_saved  # noqa: E402

MODIFIED = "modified by an inplace operation"


def test_generated_table_matches_installed_torch():
    with open(ops.__file__.replace("ops.py", "_saved_generated.py")) as fh:
        assert fh.read() == generate_saved.generate(), "run `python scripts/generate_saved.py` and commit the result"


def _runs(key):
    """The argument patterns of ``key`` that build a graph, with the shapes of its two tensors, as the generator
    tried them: those of ``PATTERNS`` on the first shapes that run any, else the fallback ones (``x.topk(2)``)."""
    for shapes in generate_saved.SHAPES:
        runs = list(_runs_of(key, generate_saved.PATTERNS, shapes))
        if not runs and shapes == generate_saved.SHAPES[0]:
            runs = list(_runs_of(key, generate_saved.FALLBACK_PATTERNS, shapes))
        if runs:
            return runs
    return []


def _runs_of(key, patterns, shapes):
    namespace, _, name = key.rpartition(".")
    for pattern in patterns:
        x, y = generate_saved.inputs(shapes=shapes)
        try:
            out = generate_saved.call(namespace, name, pattern, x, y)
        except Exception:
            continue
        if isinstance(out, torch.Tensor) and out.grad_fn is not None:
            yield namespace, name, pattern, shapes
        elif isinstance(out, tuple) and out and all(isinstance(t, torch.Tensor) for t in out) \
                and any(t.grad_fn is not None for t in out):
            yield namespace, name, pattern, shapes  # a tuple of tensors (torch.linalg.qr)


def _backward(out, leaves):
    if not isinstance(out, torch.Tensor):  # a tuple of tensors: the sum of those that require grad
        out = sum(t.sum() for t in out if t.requires_grad)
    torch.autograd.grad(out, [t for t in leaves if t.requires_grad], torch.ones_like(out), allow_unused=True)


@pytest.mark.parametrize("key", sorted(ops.SAVED_FOR_BACKWARD))
def test_each_fact_raises_at_backward(key):
    _, saves_output, positions, other, outputs = ops.SAVED_FOR_BACKWARD[key]
    runs = list(_runs(key))
    assert runs, key
    for namespace, name, pattern, shapes in runs:
        x, y = generate_saved.inputs(shapes=shapes)
        if not isinstance(generate_saved.call(namespace, name, pattern, x, y), torch.Tensor):
            for position in outputs:
                # a tuple-returning op (`x.max(-1)`, `torch.linalg.qr`): the output at `position` written (with
                # grad off), the backward raises
                x, y = generate_saved.inputs(shapes=shapes)
                out = generate_saved.call(namespace, name, pattern, x, y)
                with torch.no_grad():
                    out[position].add_(1)
                with pytest.raises(RuntimeError, match=MODIFIED):
                    _backward(out, [x, y])
            continue
        if saves_output:
            x, y = generate_saved.inputs(shapes=shapes)
            out = generate_saved.call(namespace, name, pattern, x, y)
            with torch.no_grad():  # grad off at the write does not help: the graph was built with grad on
                out.add_(1)
            with pytest.raises(RuntimeError, match=MODIFIED):
                _backward(out, [x, y])
        for position in positions:
            if position == 1 and "y" not in pattern:
                continue
            leaves = list(generate_saved.inputs(only=position, shapes=shapes))
            given = [t * 1 if i == position else t for i, t in enumerate(leaves)]  # not a leaf: it may be written
            out = generate_saved.call(namespace, name, pattern, *given)
            given[position].add_(1)
            with pytest.raises(RuntimeError, match=MODIFIED):
                _backward(out, leaves)
        for position in other:
            if "y" not in pattern:
                continue
            # only the other input requires grad; the one written needs none, and the backward still raises
            leaves = list(generate_saved.inputs(only=1 - position, shapes=shapes))
            given = [t * 1 if t.requires_grad else t for t in leaves]
            out = generate_saved.call(namespace, name, pattern, *given)
            given[position].add_(1)
            with pytest.raises(RuntimeError, match=MODIFIED):
                _backward(out, leaves)


def test_table_covers_what_the_issue_names():
    assert ops.saves_output("torch", "cdist") and ops.saves_output("Tensor", "exp")
    assert ops.saved_for_backward("torch.linalg", "norm")[2] == (0,)
    # x @ w reads x only for w's gradient: writing x is legal when only x requires grad
    assert ops.saved_for_backward("torch", "matmul")[2] == ()
    # ... and reads it for w's gradient: writing x is a hazard once w requires grad
    assert ops.saved_for_other("torch", "matmul") == (0, 1) and ops.saved_for_other("Tensor", "mul") == (0, 1)
    assert ops.saved_for_other("torch.nn.functional", "linear") == (0,)
    assert ops.saved_for_other("Tensor", "add") == () and ops.saved_for_other("Tensor", "sub") == ()
    # tuple-returning ops: which outputs the backward reads
    assert ops.saved_outputs("torch.linalg", "qr") == (0, 1) and ops.saved_outputs("torch", "sort") == (1,)
    assert ops.saved_outputs("torch.linalg", "eigh") == (0, 1) and ops.saved_outputs("Tensor", "exp") == ()
    # ops that take a vector or a batch of matrices: `K.mv(alpha)` reads each for the other's gradient
    assert ops.saved_for_other("torch", "mv") == (0, 1) and ops.saved_for_other("Tensor", "dot") == (0, 1)
    assert ops.saved_for_other("torch", "bmm") == (0, 1)


def _layer_call(name):
    """An instance of ``nn.<name>`` with its input ``x`` (needing no grad) and its output."""
    nn = torch.nn
    makers = {
        "Linear": (lambda: nn.Linear(4, 3), (2, 4)), "Bilinear": (lambda: nn.Bilinear(4, 4, 2), (2, 4)),
        "Conv1d": (lambda: nn.Conv1d(4, 2, 3), (1, 4, 6)), "Conv2d": (lambda: nn.Conv2d(4, 2, 3), (1, 4, 6, 6)),
        "Conv3d": (lambda: nn.Conv3d(4, 2, 3), (1, 4, 5, 5, 5)),
        "ConvTranspose1d": (lambda: nn.ConvTranspose1d(4, 2, 3), (1, 4, 6)),
        "ConvTranspose2d": (lambda: nn.ConvTranspose2d(4, 2, 3), (1, 4, 6, 6)),
        "ConvTranspose3d": (lambda: nn.ConvTranspose3d(4, 2, 3), (1, 4, 5, 5, 5)),
        "LayerNorm": (lambda: nn.LayerNorm(4), (2, 4)), "GroupNorm": (lambda: nn.GroupNorm(2, 4), (3, 4)),
        "BatchNorm1d": (lambda: nn.BatchNorm1d(4), (3, 4)), "BatchNorm2d": (lambda: nn.BatchNorm2d(4), (3, 4, 2, 2)),
        "BatchNorm3d": (lambda: nn.BatchNorm3d(4), (3, 4, 2, 2, 2)), "PReLU": (lambda: nn.PReLU(), (3, 4)),
        "LSTM": (lambda: nn.LSTM(4, 4), (2, 3, 4)), "GRU": (lambda: nn.GRU(4, 4), (2, 3, 4)),
        "RNN": (lambda: nn.RNN(4, 4), (2, 3, 4)), "MultiheadAttention": (lambda: nn.MultiheadAttention(4, 2), (3, 1, 4)),
        # (a lazy layer becomes its eager twin at its first call)
        "LazyLinear": (lambda: nn.LazyLinear(3), (2, 4)), "LazyConv1d": (lambda: nn.LazyConv1d(2, 3), (1, 4, 6)),
        "LazyConv2d": (lambda: nn.LazyConv2d(2, 3), (1, 4, 6, 6)),
        "LazyConv3d": (lambda: nn.LazyConv3d(2, 3), (1, 4, 5, 5, 5)),
        "LazyConvTranspose1d": (lambda: nn.LazyConvTranspose1d(2, 3), (1, 4, 6)),
        "LazyConvTranspose2d": (lambda: nn.LazyConvTranspose2d(2, 3), (1, 4, 6, 6)),
        "LazyConvTranspose3d": (lambda: nn.LazyConvTranspose3d(2, 3), (1, 4, 5, 5, 5)),
        "LazyBatchNorm1d": (lambda: nn.LazyBatchNorm1d(), (3, 4)),
        "LazyBatchNorm2d": (lambda: nn.LazyBatchNorm2d(), (3, 4, 2, 2)),
        "LazyBatchNorm3d": (lambda: nn.LazyBatchNorm3d(), (3, 4, 2, 2, 2)),
        "Embedding": (lambda: nn.Embedding(10, 4), (2, 3)),  # (its input: indices)
    }
    make, shape = makers[name]
    layer = make()
    x = torch.randint(0, 8, shape) if name == "Embedding" else torch.randn(*shape)
    if name == "Bilinear":
        out = layer(x, torch.randn(*shape))
    elif name == "MultiheadAttention":
        out = layer(x, x, x)
    else:
        out = layer(x)
    return x, out[0] if isinstance(out, tuple) else out


@pytest.mark.parametrize("name", sorted(ops.LAYERS_SAVING_INPUT))
def test_each_layer_saves_its_input_for_its_weights(name):
    x, out = _layer_call(name)
    assert not x.requires_grad
    x.add_(1)
    with pytest.raises(RuntimeError, match=MODIFIED):
        out.sum().backward()


@pytest.mark.parametrize("name", ["RMSNorm", "Dropout", "ReLU"])
def test_layers_left_out_do_not_save_an_input_that_needs_no_grad(name):
    layer = getattr(torch.nn, name)(4) if name == "RMSNorm" else getattr(torch.nn, name)()
    w = torch.randn(4, requires_grad=True)
    x = torch.randn(3, 4)
    out = layer(x) * w
    x.add_(1)
    (out.sum() if out.requires_grad else (out * w).sum()).backward()
    assert not ops.saves_output("torch.nn.functional", "gelu") and not ops.saves_output("Tensor", "pow")


@pytest.mark.parametrize("key", sorted(ops.SAVED_INDEX_INPUTS))
def test_each_saved_index_raises_at_backward(key):
    """An index or mask the table says the backward reads: after a call that runs (an argument pattern of the
    generator's with an index there), its version moved by ``add_(0)`` (values unchanged), the gradient of each float
    input it names, that input alone requiring grad, raises; without the write it does not."""
    namespace, _, name = key.rpartition(".")
    for position, floats in ops.SAVED_INDEX_INPUTS[key]:
        runs = 0
        for pattern in generate_saved.INDEX_PATTERNS:
            if len(pattern) <= position or pattern[position] not in ("i", "i1", "m") \
                    or any(f >= len(pattern) or pattern[f] not in ("x", "y") for f in floats):
                continue
            for f in floats:
                results = []
                for write in (False, True):
                    given = generate_saved._index_inputs(only=pattern[f])
                    try:
                        out = generate_saved.call_with(namespace, name, pattern, given)
                    except Exception:
                        break
                    if write:
                        index = given[pattern[position]]
                        index.logical_and_(index) if index.dtype == torch.bool else index.add_(0)
                    try:
                        _backward(out, [given["x"], given["y"]])
                        results.append("ran")
                    except RuntimeError as exc:
                        results.append("raised" if MODIFIED in str(exc) else "other")
                if results == ["ran", "raised"]:
                    runs += 1
        assert runs, (key, position)


def test_index_table_names_the_ops_that_read_an_index():
    assert ops.saved_index_inputs("Tensor", "gather") == ((2, (0,)),)
    assert ops.saved_index_inputs("torch", "where") == ((0, (1, 2)),)
    assert ops.saved_index_inputs("torch.nn.functional", "nll_loss") == ((1, (0,)),)
    assert ops.saved_index_inputs("torch.nn.functional", "embedding") == ((0, (1,)),)
    # `take_along_dim(x, i, 1)` reads a broadcast copy of the index (flattened, without a dim, it reads the index
    # itself: the entry is what every pattern agrees on); `one_hot` has no backward
    assert ops.saved_index_inputs("torch", "take_along_dim") == ()
    assert ops.saved_index_inputs("torch.nn.functional", "one_hot") == ()
    # an op of the float table keeps only the positions that take nothing but a tensor: `F.cross_entropy`'s target;
    # `x * m` may be `x * 2` (the float table's answer, which marks a tensor only where one is known)
    assert ops.saved_index_inputs("torch.nn.functional", "cross_entropy") == ((1, (0,)),)
    assert ops.saved_index_inputs("Tensor", "mul") == () and ops.saved_index_inputs("torch", "where") == ((0, (1, 2)),)
