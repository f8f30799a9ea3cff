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
    namespace, _, name = key.rpartition(".")
    for pattern in generate_saved.PATTERNS:
        x, y = generate_saved.inputs()
        try:
            out = generate_saved.call(namespace, name, pattern, x, y)
        except Exception:
            continue
        if isinstance(out, torch.Tensor) and out.grad_fn is not None:
            yield namespace, name, pattern


def _backward(out, leaves):
    torch.autograd.grad(out, [t for t in leaves if t.requires_grad], torch.ones_like(out), allow_unused=True)


@pytest.mark.parametrize("key", sorted(ops.SAVED_FOR_BACKWARD))
def test_each_fact_raises_at_backward(key):
    _, saves_output, positions = ops.SAVED_FOR_BACKWARD[key]
    runs = list(_runs(key))
    assert runs, key
    for namespace, name, pattern in runs:
        if saves_output:
            x, y = generate_saved.inputs()
            out = generate_saved.call(namespace, name, pattern, x, y)
            with torch.no_grad():  # grad off at the write does not help: the graph was built with grad on
                out.add_(1)
            with pytest.raises(RuntimeError, match=MODIFIED):
                _backward(out, [x, y])
        for position in positions:
            if position == 1 and "y" not in pattern:
                continue
            leaves = list(generate_saved.inputs(only=position))
            given = [t * 1 if i == position else t for i, t in enumerate(leaves)]  # not a leaf: it may be written
            out = generate_saved.call(namespace, name, pattern, *given)
            given[position].add_(1)
            with pytest.raises(RuntimeError, match=MODIFIED):
                _backward(out, leaves)


def test_table_covers_what_the_issue_names():
    assert ops.saves_output("torch", "cdist") and ops.saves_output("Tensor", "exp")
    assert ops.saved_for_backward("torch.linalg", "norm")[2] == (0,)
    # x @ w reads x only for w's gradient: writing x is legal when only x requires grad
    assert ops.saved_for_backward("torch", "matmul") is None
    assert not ops.saves_output("torch.nn.functional", "gelu") and not ops.saves_output("Tensor", "pow")
