"""Rows read by chunk (data/rows.py): exactly the rows asked for, each chunk decoded once, the same
rows and counts as Zarr's own selection, and a damaged chunk refused as on every other read."""

import numpy as np
import pytest

from dynagnn.data.ingest import ingest
from dynagnn.data.rows import RowReader
from dynagnn.data.store import open_store
from dynagnn.errors import StoreError

N, F = 700, 12


def make(tmp_path, name, spec_extra):
    path = tmp_path / name
    ingest({"format": "synthetic", **spec_extra}, path)
    return open_store(path)


@pytest.fixture(scope="module")
def static(tmp_path_factory):
    return make(tmp_path_factory.mktemp("rows"), "s.zarr", {
        "generator": "bgl", "params": {"num_nodes": N, "num_edges": 3000, "feature_dim": F, "classes": 3, "seed": 2}})


def test_rows_chunks_and_bytes_against_a_gather(static):
    x = static.read("features/x")
    r = RowReader(static, "features/x")
    assert r.direct and r.chunk_rows == (4 << 10) // (4 * F)            # the writer's 4 KiB row chunks
    ids = np.array([0, 1, 2, r.chunk_rows - 1, r.chunk_rows, 5 * r.chunk_rows + 3, N - 1])
    rows, chunks, decoded = r.read(ids)
    np.testing.assert_array_equal(rows, x[ids])
    assert chunks == 4 and decoded == 4 * r.chunk_rows * F * 4            # chunks 0, 1, 5 and the last, once each
    rng = np.random.default_rng(0)
    for _ in range(5):
        ids = np.unique(rng.choice(N, rng.integers(1, 300), replace=False))
        rows, chunks, decoded = r.read(ids)
        np.testing.assert_array_equal(rows, x[ids])
        assert chunks == np.unique(ids // r.chunk_rows).size and decoded == chunks * r.chunk_bytes
    assert r.read(np.zeros(0, np.int64))[1:] == (0, 0)


def test_zarr_path_gives_the_same_rows_and_counts(static):
    direct, via_zarr = RowReader(static, "features/x"), RowReader(static, "features/x")
    via_zarr.direct = False
    ids = np.unique(np.random.default_rng(1).choice(N, 200, replace=False))
    a, b = direct.read(ids), via_zarr.read(ids)
    np.testing.assert_array_equal(a[0], b[0])
    assert a[1:] == b[1:]


@pytest.mark.parametrize("per_chunk", [1, 2, 3])   # 2: the last chunk along time holds one snapshot of two
def test_per_snapshot_features(tmp_path, monkeypatch, per_chunk):
    from dynagnn.data import store as S

    monkeypatch.setattr(S, "SNAPSHOT_CHUNK_BYTES", per_chunk * 50 * 5 * 4)
    s = make(tmp_path, "t.zarr", {"generator": "blad", "features": {"kind": "degree", "dim": 5},
                                  "params": {"num_nodes": 50, "num_edges": 200, "num_snapshots": 3, "seed": 0}})
    x = s.read("features/x")
    assert x.ndim == 3 and s.root["features/x"].chunks[0] == per_chunk
    ids = np.array([3, 4, 40])
    for t in range(3):
        r = RowReader(s, "features/x", t)
        assert r.direct
        got, chunks, decoded = r.read(ids)
        np.testing.assert_array_equal(got, x[t, ids])
        assert chunks == 1 and decoded == per_chunk * 50 * 5 * 4


def test_damaged_chunks_are_refused(tmp_path):
    s = make(tmp_path, "d.zarr", {"generator": "bgl", "params": {"num_nodes": N, "num_edges": 3000,
                                                                 "feature_dim": F, "classes": 3, "seed": 2}})
    r = RowReader(s, "features/x")
    folder = s.path / "features" / "x"
    (folder / "c.1.0").unlink()
    with pytest.raises(StoreError, match=r"features/x is missing chunk c\.1\.0, which would read as zeros"):
        r.read(np.array([r.chunk_rows + 1]))
    data = (folder / "c.2.0").read_bytes()
    (folder / "c.2.0").write_bytes(data[:len(data) // 2])
    with pytest.raises(StoreError, match=r"chunk c\.2\.0 is truncated or damaged"):
        r.read(np.array([2 * r.chunk_rows]))
    np.testing.assert_array_equal(r.read(np.array([0]))[0], s.read("features/x", slice(0, 1)))
