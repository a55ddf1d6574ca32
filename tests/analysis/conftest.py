import pytest

from dynagnn.data import discretize as D
from dynagnn.data.store import write_store


@pytest.fixture
def store_path(tmp_path, event_graph):
    """The random event graph in windows of 60 time units, undirected, as a store."""
    snaps = D.build_snapshots(event_graph, by="time", width=60, directed=False)
    return write_store(tmp_path / "store.zarr", event_graph, snaps, None, spec={})
