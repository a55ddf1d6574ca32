"""The two-level feature cache: it returns exactly the rows asked for whatever hits or misses (against
a direct gather of the stored features), its hit counts are the simulation's (graph/cache.py) for
the same lookups, and it refuses budgets the memory cannot hold."""

import numpy as np
import pytest
import torch

from dynagnn.data.ingest import ingest
from dynagnn.data.store import open_store
from dynagnn.errors import ConfigError
from dynagnn.graph.cache import FIFOCache, StaticCache
from dynagnn.train.cache import FeatureCache, StoreRows
from tests.testing.devices import DEVICES

N, F = 400, 6


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    path = tmp_path_factory.mktemp("cache") / "s.zarr"
    ingest({"format": "synthetic", "generator": "bgl",
            "params": {"num_nodes": N, "num_edges": 2000, "feature_dim": F, "classes": 3, "seed": 1}}, path)
    return open_store(path)


def batches(k=30, seed=0):
    rng = np.random.default_rng(seed)
    return [np.unique(rng.choice(N, rng.integers(5, 120), replace=False)) for _ in range(k)]


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("policy", ["fifo", "static", "none"])
@pytest.mark.parametrize("caps", [(10, 25), (0, 40), (60, 0), (500, 500)])
def test_fetch_returns_exactly_the_rows_asked_for(store, policy, caps, device):
    """On cuda level 1 lives in device memory (BGL's GPU cache) and every fetch returns device rows."""
    x = store.read("features/x")
    scores = np.random.default_rng(2).random(N)
    cache = FeatureCache(StoreRows(store), caps[0] * 4 * F, caps[1] * 4 * F, device, policy, scores)
    for ids in batches():
        out = cache.fetch(ids)
        assert out.device.type == device
        np.testing.assert_array_equal(out.cpu().numpy(), x[ids])
        # an evaluation read in between changes neither the rows nor the state
        before = cache.stats()
        np.testing.assert_array_equal(cache.fetch(ids[::2], update=False).cpu().numpy(), x[ids[::2]])
        assert cache.stats() == before


@pytest.mark.parametrize("device", DEVICES)
def test_hits_equal_the_simulation_per_level(store, device):
    caps = (20, 50)
    cache = FeatureCache(StoreRows(store), caps[0] * 4 * F, caps[1] * 4 * F, device, "fifo")
    sim1, sim2 = FIFOCache(caps[0], N), FIFOCache(caps[1], N)
    store_rows = 0
    for ids in batches(60):
        cache.fetch(ids)
        miss1 = ids[~sim1.lookup(ids)]
        store_rows += int(np.count_nonzero(~sim2.lookup(miss1)))
    s = cache.stats()
    assert (s.l1_hits, s.l1_misses, s.l2_hits, s.l2_misses) == (sim1.hits, sim1.misses, sim2.hits, sim2.misses)
    assert s.l1_hits > 0 and s.l2_hits > 0
    assert s.store_rows == store_rows and s.store_bytes == store_rows * 4 * F
    m = s.metrics()
    assert m["l1_hit_ratio"] == pytest.approx(sim1.hit_ratio)
    assert m["l1_bytes"] == sim1.hits * 4 * F


def test_static_levels_hold_the_top_scores(store):
    scores = np.arange(N, dtype=float)   # the highest ids first
    cache = FeatureCache(StoreRows(store), 10 * 4 * F, 30 * 4 * F, "cpu", "static", scores)
    assert set(cache.l1.policy.contents()) == set(range(N - 10, N))
    assert set(cache.l2.policy.contents()) == set(range(N - 40, N - 10))
    cache.fetch(np.arange(N - 50, N))
    s = cache.stats()
    assert (s.l1_hits, s.l2_hits, s.store_rows) == (10, 30, 10)
    sim = StaticCache(10, scores)
    sim.lookup(np.arange(N - 50, N))
    assert sim.hits == s.l1_hits


def test_store_reads_count_rows_and_chunks(store):
    rows = StoreRows(store)
    ids = np.array([0, 1, 2, N - 1])
    np.testing.assert_array_equal(rows.read(ids), store.read("features/x")[ids])
    assert rows.rows == 4 and rows.bytes == 4 * 4 * F
    assert rows.chunks == len({int(i) // rows.chunk_rows for i in ids})
    assert rows.chunk_bytes_read == rows.chunks * rows.chunk_rows * 4 * F   # decoded: whole chunks, each once


def test_budget_beyond_memory_is_refused(store, monkeypatch):
    import dynagnn.train.cache as C

    monkeypatch.setattr(C, "physical_memory", lambda: 1 << 30)
    with pytest.raises(ConfigError, match=r"cache_l1_mb.*2,048 MiB is more than the 1,024 MiB"):
        FeatureCache(StoreRows(store), 2 << 30, 0, "cpu")
    with pytest.raises(ConfigError, match=r"cache_l1_mb \+ cache_l2_mb"):
        FeatureCache(StoreRows(store), 600 << 20, 600 << 20, "cpu")


def test_store_without_features_is_refused(tmp_path):
    path = tmp_path / "nf.zarr"
    ingest({"format": "synthetic", "generator": "esdg", "features": {"kind": "none"},
            "params": {"num_nodes": 20, "num_snapshots": 2, "avg_degree": 2.0}}, path)
    with pytest.raises(ConfigError, match="no node features"):
        StoreRows(open_store(path))
