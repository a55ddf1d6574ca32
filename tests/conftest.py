import numpy as np
import pytest
import torch

from dynagnn.data.types import EventStream, RawGraph, SnapshotList


HAS_CUDA = torch.cuda.is_available()
NO_CUDA = "no CUDA device: the cuda half of a device-parametrised test runs where one is (pytest -m gpu)"

#: The devices an equivalence test runs on, in the style of PyG's ``withCUDA``: ``cpu`` always, and
#: ``cuda`` marked ``gpu`` (``pytest -m gpu`` selects that half), skipped with one reason where this
#: torch has no CUDA device. Use as ``@pytest.mark.parametrize("device", DEVICES)``, or as the params
#: of a fixture that builds something per device (``device_param``).
DEVICES = ["cpu", pytest.param("cuda", marks=(pytest.mark.gpu, pytest.mark.skipif(not HAS_CUDA, reason=NO_CUDA)))]


@pytest.fixture(autouse=True)
def choices_folder(tmp_path_factory, monkeypatch):
    """Each test its own remembered choices (``DYNAGNN_CHOICES``, its processes' too): a test's auto
    run never recalls another's choice, nor writes into the user's cache."""
    folder = tmp_path_factory.mktemp("choices")
    monkeypatch.setenv("DYNAGNN_CHOICES", str(folder))
    return folder


@pytest.fixture(autouse=True)
def quiet_machine(monkeypatch):
    """Auto's candidates on every core of the run, whatever else the machine runs: a test's choice
    does not change with its neighbours (``DYNAGNN_OTHERS_BUSY``, cpu_load.py); a test of the load
    sets it itself."""
    monkeypatch.setenv("DYNAGNN_OTHERS_BUSY", "0")


def needs_gpu(test):
    """A test that needs a GPU and has no CPU half: marked ``gpu``, skipped with DEVICES' reason."""
    return pytest.mark.gpu(pytest.mark.skipif(not HAS_CUDA, reason=NO_CUDA)(test))


@pytest.fixture(params=DEVICES)
def device(request) -> str:
    """"cpu", then "cuda" where a GPU is present (see :data:`DEVICES`)."""
    return request.param


def random_events(n_nodes=30, n_events=400, t_max=1000, seed=0, weights=False):
    """Time-sorted random events with self-loops and repeats, as real streams have."""
    rng = np.random.default_rng(seed)
    src = rng.integers(0, n_nodes, n_events)
    dst = rng.integers(0, n_nodes, n_events)
    t = np.sort(rng.integers(0, t_max, n_events))
    dup = rng.random(n_events) < 0.1  # copy some events exactly
    idx = np.flatnonzero(dup[1:]) + 1
    src[idx], dst[idx], t[idx] = src[idx - 1], dst[idx - 1], t[idx - 1]
    w = rng.random(n_events).astype(np.float32) if weights else None
    return EventStream(src.astype(np.int64), dst.astype(np.int64), t.astype(np.int64), w)


@pytest.fixture
def event_graph():
    ev = random_events()
    return RawGraph(num_nodes=30, node_ids=np.arange(30), events=ev, directed=True, name="rand")


@pytest.fixture
def snapshot_graph():
    rng = np.random.default_rng(1)
    rows, cols = [], []
    for _ in range(6):
        m = rng.integers(0, 40)
        rows.append(rng.integers(0, 12, m))
        cols.append(rng.integers(0, 12, m))
    return RawGraph(num_nodes=12, node_ids=np.array([f"n{i}" for i in range(12)], dtype=object),
                    snapshots=SnapshotList(rows, cols, None, np.arange(6) * 10), directed=False, name="snaps")


def pytest_collection_modifyitems(config, items):
    """The longest tests first (a stable move): the Snakefile's end-to-end runs, then the docs' runnable
    blocks. Each takes tens of seconds; under ``make test``'s parallel workers (pytest-xdist) one
    started last would keep a core busy alone after every other test had finished."""
    items.sort(key=lambda item: (item.get_closest_marker("workflow") is None,
                                 not item.name.startswith("test_runnable_block")))


@pytest.fixture
def clean_model_registry():
    """The model registry as it was before the test: a test that loads a user's model by import path
    leaves no name behind for a later test that lists the registered models."""
    from dynagnn.models import registry

    tables = (registry.MODELS, registry.ALL_MODELS, registry.KINDS)
    saved = [dict(t) for t in tables]
    yield
    for table, before in zip(tables, saved):
        table.clear()
        table.update(before)
