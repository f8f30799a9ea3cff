import pathlib
import socket

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "fixtures"


@pytest.fixture
def root():
    return ROOT


@pytest.fixture(scope="module")
def mesh():
    """A 1-process gloo device mesh on CPU for DTensor tests (set up once per test module)."""
    pytest.importorskip("torch")
    dist = pytest.importorskip("torch.distributed")
    if not dist.is_available() or dist.is_initialized():
        pytest.skip("torch.distributed unavailable or already initialised")
    from torch.distributed.device_mesh import init_device_mesh

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    dist.init_process_group("gloo", rank=0, world_size=1, init_method=f"tcp://127.0.0.1:{port}")
    yield init_device_mesh("cpu", (1,))
    dist.destroy_process_group()


@pytest.fixture(autouse=True)
def _project_mode_does_not_leak():
    """The CLI, run in process, turns project mode on through environment variables (so that its
    worker processes see it): a later test must not run in project mode because an earlier one did."""
    import os

    keys = ("INPLACE_LINT_PROJECT", "INPLACE_LINT_NO_CACHE", "INPLACE_LINT_CACHE_DIR")
    saved = {k: os.environ.get(k) for k in keys}
    yield
    for key, value in saved.items():
        if value is None:
            os.environ.pop(key, None)
        else:
            os.environ[key] = value
