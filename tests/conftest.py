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


@pytest.fixture()
def own_cache(tmp_path, monkeypatch):
    """A user cache folder of the test's own, and no project or cache state left from another test."""
    from inplace_lint import workspace
    from inplace_lint.analysis import cache

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "user-cache"))
    monkeypatch.delenv(cache.ENV_KEY, raising=False)
    workspace._PROJECTS.clear()
    cache.reset()
    yield
    workspace._PROJECTS.clear()
    cache.reset()
