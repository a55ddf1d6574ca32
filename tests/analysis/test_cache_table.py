import numpy as np
import pandas as pd
import pytest

from dynagnn.analysis.cache import cache_hit_table
from dynagnn.errors import ConfigError
from tests.testing.stores import random_csr


@pytest.fixture(scope="module")
def table():
    indptr, indices = random_csr(n=300, m=1200, seed=5)
    rng = np.random.default_rng(0)
    train = rng.choice(300, 90, replace=False)
    fr = (0.0, 0.01, 0.05, 0.1, 0.2, 0.5, 1.0)
    return cache_hit_table(indptr, indices, train, batch_size=16, fanouts=(4, 3),
                           fractions=fr, epochs=2, seed=1), fr


def test_rows_and_counts(table):
    df, fr = table
    assert len(df) == 2 * 3 * len(fr)
    assert set(df.order) == {"random", "proximity"}
    assert set(df.policy) == {"static", "fifo", "lru"}
    assert (df.hits + df.misses == df.lookups).all()
    assert np.allclose(df.hit_ratio, df.hits / df.lookups)
    # every policy of one order sees the same lookups
    assert (df.groupby("order").lookups.nunique() == 1).all()
    assert (df.batches == 2 * 6).all()
    assert (df[df.fraction == 0.0].hits == 0).all()


def test_static_monotone_in_capacity(table):
    df, _ = table
    for _, g in df[df.policy == "static"].groupby("order"):
        g = g.sort_values("capacity")
        assert np.all(np.diff(g.hit_ratio.to_numpy()) >= 0)
        assert g.hit_ratio.iloc[-1] == 1.0  # everything fits


def test_unknown_policy():
    indptr, indices = random_csr(n=20, m=40)
    with pytest.raises(ConfigError):
        cache_hit_table(indptr, indices, np.arange(5), policies=("lfu",))


def test_store_cache_table_uses_the_union_graph(tmp_path, event_graph):
    from dynagnn.analysis.cache import store_cache_table
    from dynagnn.analysis.parallel import dask_client
    from dynagnn.data import discretize as D
    from dynagnn.data.store import open_store, write_store

    snaps = D.build_snapshots(event_graph, by="time", width=60, directed=False)
    path = write_store(tmp_path / "s.zarr", event_graph, snaps, None, spec={})
    st = open_store(path)
    adj = {v: set() for v in range(st.num_nodes)}
    for t in range(st.num_snapshots):
        r, c, _ = st.edges(t)
        for a, b in zip(r.tolist(), c.tolist()):
            if a != b:
                adj[a].add(b)
                adj[b].add(a)
    indptr = np.concatenate([[0], np.cumsum([len(adj[v]) for v in range(st.num_nodes)])]).astype(np.int64)
    indices = np.array([u for v in range(st.num_nodes) for u in sorted(adj[v])], dtype=np.int64)
    has_edge = np.flatnonzero(np.diff(indptr) > 0)
    train = np.sort(np.random.default_rng(0).choice(has_edge, int(round(0.1 * has_edge.size)), replace=False))
    want = cache_hit_table(indptr, indices, train, batch_size=2, fanouts=(2, 2), fractions=(0.1, 0.5), seed=0,
                           epochs=3)
    got = store_cache_table(path, batch_size=2, fanouts=(2, 2), fractions=(0.1, 0.5), seed=0)
    pd.testing.assert_frame_equal(got, want)
    with dask_client(2, processes=False) as client:
        pd.testing.assert_frame_equal(store_cache_table(path, client, batch_size=2, fanouts=(2, 2),
                                                        fractions=(0.1, 0.5), seed=0), want)
