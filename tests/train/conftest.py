import numpy as np
import pytest

from dynagnn.data import discretize as D
from dynagnn.data.store import write_store
from dynagnn.data.synthetic import churn


def small_store(path, labels: str | None = None, num_nodes=40, num_edges=120, num_snapshots=8,
                features="random", dim=6, seed=0, directed=False):
    """A churning power-law graph (10% of edges replaced per step) as a store, with optional labels:
    "class" (3 static classes) or "regress" (a float target per snapshot and vertex)."""
    raw = churn(num_nodes, num_edges, num_snapshots, seed=seed)
    raw.directed = directed
    rng = np.random.default_rng(seed)
    if labels == "class":
        raw.node_labels = rng.integers(0, 3, num_nodes).astype(np.int64)
    elif labels == "regress":
        raw.node_labels = rng.random((num_snapshots, num_nodes)).astype(np.float32)
    snaps = D.build_snapshots(raw, by="source", directed=directed)
    x = D.make_features(features, raw, snaps, dim=dim, seed=seed)
    return write_store(path, raw, snaps, x, spec={"labels": labels, "seed": seed})


@pytest.fixture
def link_store(tmp_path):
    return small_store(tmp_path / "link.zarr")


@pytest.fixture
def class_store(tmp_path):
    return small_store(tmp_path / "class.zarr", labels="class")


@pytest.fixture
def regress_store(tmp_path):
    return small_store(tmp_path / "regress.zarr", labels="regress")
