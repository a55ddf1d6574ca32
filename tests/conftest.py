import numpy as np
import pytest

from dynagnn.data.types import RawGraph, SnapshotList

from tests.testing.devices import DEVICES
from tests.testing.stores import random_events, small_store


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


@pytest.fixture(params=DEVICES)
def device(request) -> str:
    """"cpu", then "cuda" where a GPU is present (see :data:`DEVICES`)."""
    return request.param


@pytest.fixture
def link_store(tmp_path):
    """A small churning store for the link task."""
    return small_store(tmp_path / "link.zarr")


@pytest.fixture
def class_store(tmp_path):
    """The same with 3 static classes."""
    return small_store(tmp_path / "class.zarr", labels="class")


@pytest.fixture
def regress_store(tmp_path):
    """The same with a float target per snapshot and vertex."""
    return small_store(tmp_path / "regress.zarr", labels="regress")


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
    from dynagnn import catalog
    from dynagnn.models import registry

    tables = (registry.MODELS, registry.ALL_MODELS, registry.KINDS, catalog._added_models)
    saved = [dict(t) for t in tables]
    yield
    for table, before in zip(tables, saved):
        table.clear()
        table.update(before)
