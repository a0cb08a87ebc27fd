"""Shared fixtures: the real-data folder, a Dask LocalCluster, GPU skipping."""
from __future__ import annotations

import atexit
import os
import shutil
import tempfile
from pathlib import Path

import pytest

# A developer's own `seqsift serve` must not take the console-script runs of the tests: every test
# process and its children look for a server at a path where none listens (test_server.py starts its
# servers at sockets of their own).
os.environ["SEQSIFT_SERVER_SOCKET"] = os.path.join(os.path.dirname(__file__), ".no-seqsift-server.sock")

# Nor may the tests write into the user's own cache (~/.cache/seqsift, or $SEQSIFT_CACHE): genome caches,
# indexes and tables go to a folder of the test session's, removed at its end. Tests of the cache's own
# rules set their own folder on top of this one.
_TEST_CACHE = tempfile.mkdtemp(prefix="seqsift-test-cache-")
os.environ["SEQSIFT_CACHE"] = _TEST_CACHE
atexit.register(shutil.rmtree, _TEST_CACHE, ignore_errors=True)


def data_dir() -> Path | None:
    """``$SEQSIFT_TEST_DATA`` (the project's ``../shared/data``), if it exists."""
    folder = os.environ.get("SEQSIFT_TEST_DATA")
    return Path(folder) if folder and Path(folder).is_dir() else None


@pytest.fixture(scope="session")
def real_data() -> Path:
    folder = data_dir()
    if folder is None:
        pytest.skip("real sequence data not found: set SEQSIFT_TEST_DATA to the shared/data folder")
    return folder


def _gpu_available() -> bool:
    try:
        from seqsift.kernels.cuda import gpu_available
    except ImportError:
        return False
    return gpu_available()


def pytest_collection_modifyitems(config, items):
    if any("gpu" in item.keywords for item in items) and not _gpu_available():
        skip = pytest.mark.skip(reason="no CUDA GPU visible")
        for item in items:
            if "gpu" in item.keywords:
                item.add_marker(skip)


@pytest.fixture(scope="session")
def client():
    """One real CPU LocalCluster (2 worker processes) for the engine tests."""
    from distributed import Client

    from seqsift.cluster import local_cluster

    cluster = local_cluster("cpu", workers=2)
    with Client(cluster) as c:
        yield c
    cluster.close()


@pytest.fixture(scope="module")
def cuda_client():
    """A local CUDA cluster (one worker per GPU) for a GPU test module."""
    from distributed import Client

    from seqsift.cluster import local_cluster

    cluster = local_cluster("cuda")
    with Client(cluster) as client:
        yield client
    cluster.close()


@pytest.fixture
def drivers_called(monkeypatch):
    """The names of the SW lane drivers (kernels/sw/cpu.py) each call runs: the real drivers, counted; no
    background compile of the lanes (compile_lanes_soon does nothing)."""
    from seqsift.kernels.sw import cpu as sw_cpu

    called = []
    for name in ("_scalar_pairs", "_lanes_linear", "_lanes_affine"):
        def counted(*args, _real=getattr(sw_cpu, name), _name=name):
            called.append(_name)
            return _real(*args)
        monkeypatch.setattr(sw_cpu, name, counted)
    monkeypatch.setattr(sw_cpu, "compile_lanes_soon", lambda affine: None)
    return called
