"""Snapshot statistics against plain set arithmetic, serial and on a Dask cluster."""

import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import pytest

from dynagnn.analysis import stats as A
from dynagnn.analysis.parallel import dask_client, snapshot_ranges
from dynagnn.data import discretize as D
from dynagnn.data.store import open_store, write_store


@pytest.fixture
def store_path(tmp_path, event_graph):
    snaps = D.build_snapshots(event_graph, by="time", width=40, directed=False)
    return write_store(tmp_path / "store.zarr", event_graph, snaps, None, spec={"w": 40})


def naive(store):
    rows, prev = [], set()
    for t in range(store.num_snapshots):
        r, c, _ = store.edges(t)
        cur = set(zip(r.tolist(), c.tolist()))
        nodes = set(r.tolist()) | set(c.tolist())
        deg = [int(np.sum(r == v)) for v in sorted(nodes)]
        rows.append({"snapshot": t, "edges": len(cur), "active_nodes": len(nodes),
                     "deg_mean": np.mean(deg) if deg else 0.0, "deg_max": max(deg) if deg else 0,
                     "deg_median": float(np.median(deg)) if deg else 0.0,
                     "common": len(cur & prev), "added": len(cur - prev), "removed": len(prev - cur),
                     "jaccard": len(cur & prev) / len(cur | prev) if cur | prev else 0.0})
        prev = cur
    return pd.DataFrame(rows)


def check(df, store):
    want = naive(store)
    assert df["snapshot"].tolist() == list(range(store.num_snapshots))
    assert df["time"].tolist() == store.times.tolist()
    for col in ("edges", "active_nodes", "deg_max", "common", "added", "removed"):
        assert df[col].tolist() == want[col].tolist(), col
    for col in ("deg_mean", "deg_median", "jaccard"):
        np.testing.assert_allclose(df[col], want[col], rtol=1e-12)
    np.testing.assert_allclose(df["overlap_rate"], want["common"] / want["edges"].clip(lower=1))


def test_serial_matches_naive(store_path):
    check(A.compute_stats(store_path, None, progress=False), open_store(store_path))


def test_dask_cluster_matches_naive(store_path):
    with dask_client(2, processes=False) as client:
        df = A.compute_stats(store_path, client, tasks_per_worker=3, progress=False)
    check(df, open_store(store_path))


def test_ranges_cover_every_snapshot(store_path):
    st = open_store(store_path)
    for parts in (1, 2, 5, 100):
        r = snapshot_ranges(st, parts)
        assert r[0][0] == 0 and r[-1][1] == st.num_snapshots
        assert all(a < b for a, b in r) and all(r[i][1] == r[i + 1][0] for i in range(len(r) - 1))


def test_write_stats_keys_by_checksum(tmp_path, store_path):
    st = open_store(store_path)
    df = A.compute_stats(store_path, None, progress=False)
    out = A.write_stats(df, tmp_path / "out" / "stats.parquet", st.checksum)
    table = pq.read_table(out)
    assert table.schema.metadata[b"dynagnn.store_checksum"].decode() == st.checksum
    pd.testing.assert_frame_equal(table.to_pandas(), df)
    assert [p.name for p in out.parent.iterdir()] == ["stats.parquet"]


def test_existing_cluster_from_environment(store_path, monkeypatch):
    from dask.distributed import LocalCluster

    with LocalCluster(n_workers=1, threads_per_worker=1, processes=False, dashboard_address=":0") as cluster:
        monkeypatch.setenv("DASK_SCHEDULER_ADDRESS", cluster.scheduler_address)
        with dask_client(4) as client:  # the named cluster is used, no new one is started
            assert client.scheduler.address == cluster.scheduler_address
            df = A.compute_stats(store_path, client, progress=False)
    check(df, open_store(store_path))
