"""The snapshot store: round trip against the in-memory snapshots, laziness, atomicity, versions."""

import json
import warnings

import numpy as np
import pytest
import zarr

from dynagnn.data import discretize as D
from dynagnn.data import store as S
from dynagnn.errors import StoreError


@pytest.fixture
def built(event_graph):
    snaps = D.build_snapshots(event_graph, by="time", width=50, directed=False)
    x = D.make_features("degree", event_graph, snaps, dim=8)
    return event_graph, snaps, x


def write(tmp_path, built, spec=None, **kw):
    raw, snaps, x = built
    return S.write_store(tmp_path / "d" / "store.zarr", raw, snaps, x,
                         spec=spec or {"format": "test", "snapshots": {"by": "time", "width": 50}}, **kw)


def dense(r, c, w, n):
    a = np.zeros((n, n), np.float32)
    a[r, c] = w
    return a


def test_round_trip(tmp_path, built):
    raw, snaps, x = built
    st = S.open_store(write(tmp_path, built, threads=2))
    assert st.num_nodes == 30 and st.num_snapshots == snaps.num_snapshots
    assert st.attrs["schema_version"] == S.SCHEMA_VERSION
    assert st.attrs["num_edges"] == int(snaps.offsets[-1]) and st.attrs["directed"] is False
    assert np.array_equal(st.offsets, snaps.offsets) and np.array_equal(st.times, snaps.time)
    for t in range(st.num_snapshots):
        r, c, w = st.edges(t)
        er, ec, ew = snaps.edges(t)
        assert np.array_equal(r, er) and np.array_equal(c, ec) and np.array_equal(w, ew)
        assert np.array_equal(st.features(t), x[t])
    win = st.window_edges(2, 5)
    assert len(win) == 3
    for k, m in enumerate(win):
        assert np.array_equal(dense(*m, 30), dense(*snaps.edges(2 + k), 30))
    ev = st.events()
    assert np.array_equal(ev.src, raw.events.src) and np.array_equal(ev.t, raw.events.t)
    assert np.array_equal(st.node_ids(), np.arange(30))
    assert st.root["snapshots/row"].dtype == np.int32
    assert st.root["snapshots/row"].metadata.dimension_names == ("edge",)
    assert st.root["features/x"].metadata.dimension_names == ("snapshot", "node", "feature")


def test_string_ids_and_labels(tmp_path, snapshot_graph):
    snapshot_graph.node_labels = np.arange(12) % 3
    snaps = D.build_snapshots(snapshot_graph, by="source")
    p = S.write_store(tmp_path / "s.zarr", snapshot_graph, snaps, None, spec={"format": "x"})
    st = S.open_store(p)
    assert st.node_ids().tolist() == [f"n{i}" for i in range(12)]
    assert st.labels().tolist() == (np.arange(12) % 3).tolist()
    assert st.features() is None and st.events() is None


def test_parallel_chunked_write_equals_serial(tmp_path, built, monkeypatch):
    monkeypatch.setattr(S, "EDGE_CHUNK", 16)  # many chunks, many writer tasks
    a = S.open_store(S.write_store(tmp_path / "a.zarr", *built, spec={}, threads=3))
    b = S.open_store(S.write_store(tmp_path / "b.zarr", *built, spec={}, threads=1))
    assert a.root["snapshots/col"].chunks == (16,)
    for name in ("snapshots/row", "snapshots/col", "snapshots/weight", "events/src", "features/x"):
        assert np.array_equal(a.root[name][:], b.root[name][:])
    assert a.checksum == b.checksum


def test_checksum_tracks_source_and_spec(tmp_path, built):
    p = write(tmp_path, built)
    first = S.open_store(p).checksum
    assert S.open_store(write(tmp_path, built)).checksum == first  # deterministic
    other = S.open_store(write(tmp_path, built, spec={"format": "test", "snapshots": {"by": "time", "width": 51}}))
    assert other.checksum != first


def test_file_checksum(tmp_path):
    f = tmp_path / "a.txt"
    f.write_text("1 2 3\n")
    before = S.file_checksum([f])
    f.write_text("1 2 4\n")
    assert S.file_checksum([f]) != before
    d = tmp_path / "dir"
    d.mkdir()
    (d / "x").write_text("x")
    assert S.file_checksum([d]) == S.file_checksum([d])


def test_failed_write_keeps_old_store(tmp_path, built, monkeypatch):
    p = write(tmp_path, built)
    old = S.open_store(p).checksum

    def boom(*a, **k):
        raise RuntimeError("disk full")

    monkeypatch.setattr(S, "_write_slice", boom)
    with pytest.raises(RuntimeError, match="disk full"):
        write(tmp_path, built, spec={"format": "other"})
    assert S.open_store(p).checksum == old
    assert sorted(x.name for x in p.parent.iterdir()) == ["store.zarr"]  # no temporary left


def test_wrong_schema_version(tmp_path, built):
    p = write(tmp_path, built)
    g = zarr.open_group(p, mode="r+")
    g.attrs["schema_version"] = 99
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # consolidated metadata is outside the v3 spec
        zarr.consolidate_metadata(p)
    with pytest.raises(StoreError, match="schema_version 99, this dynagnn reads version 1"):
        S.open_store(p)


def test_missing_and_foreign_store(tmp_path):
    with pytest.raises(StoreError, match="no snapshot store here"):
        S.open_store(tmp_path / "nope.zarr")
    (tmp_path / "plain").mkdir()
    with pytest.raises(StoreError):
        S.open_store(tmp_path / "plain")


def test_out_of_range(tmp_path, built):
    st = S.open_store(write(tmp_path, built))
    with pytest.raises(IndexError):
        st.edges(st.num_snapshots)
    with pytest.raises(IndexError):
        st.window_edges(0, st.num_snapshots + 1)
    assert json.dumps(st.attrs)  # attributes are plain JSON
