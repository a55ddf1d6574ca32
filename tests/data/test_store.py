"""The snapshot store: round trip against the in-memory snapshots, laziness, atomicity, versions."""

import json
import warnings

import numpy as np
import pytest
import zarr

from dynagnn.data import discretize as D
from dynagnn.data import integrity
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
    assert np.array_equal(st.require_features(), x) and st.require_features().dtype == np.float32
    assert np.array_equal(st.require_features(2, 5), x[2:5]) and st.require_features(3, 3).shape == (0, 30, 8)


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
    with pytest.raises(StoreError, match=f"schema_version 99, this dynagnn reads version {S.SCHEMA_VERSION}"):
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
    with pytest.raises(IndexError, match="features"):
        st.require_features(2, st.num_snapshots + 1)
    assert json.dumps(st.attrs)  # attributes are plain JSON


# --- damage: what the reader refuses instead of reading zeros or garbage (issue 18) ------------------

def _rewrite(path, name, index, value):
    zarr.open_array(path / name, mode="r+")[index] = value


def test_every_chunk_written_and_hashed(tmp_path, built, monkeypatch):
    """All-zero chunks are files too (Zarr skips them by default, and a reader could not tell them from
    deleted ones); each array's sha256 is of its data, whatever the chunking."""
    raw, snaps, x = built
    monkeypatch.setattr(S, "SNAPSHOT_CHUNK_BYTES", x[0].nbytes)   # a chunk per snapshot
    p = S.write_store(tmp_path / "z.zarr", raw, snaps, np.zeros_like(x), spec={})
    st = S.open_store(p)
    assert sorted(f.name for f in (p / "features" / "x").glob("c.*")) == sorted(
        f"c.{t}.0.0" for t in range(snaps.num_snapshots))
    digests = st.attrs["array_sha256"]
    assert set(digests) == set(st.array_names) == {
        "snapshots/offsets", "snapshots/row", "snapshots/col", "snapshots/weight", "snapshots/time",
        "events/src", "events/dst", "events/t", "features/x", "nodes/id"}
    assert digests["features/x"] == integrity.data_digest(np.zeros_like(x))
    assert digests["snapshots/col"] == integrity.data_digest(snaps.col.astype(np.int32))
    assert st.verify() == sum(st.root[n].nbytes for n in st.array_names)


def test_digest_independent_of_blocks_and_string_dtype():
    x = np.arange(24, dtype=np.float32).reshape(6, 4)
    d = integrity.Digest(x.dtype, x.shape)
    for a in (0, 1, 4):
        d.update(x[a:{0: 1, 1: 4, 4: 6}[a]])
    assert d.hexdigest() == integrity.data_digest(x) != integrity.data_digest(x.astype(np.float64))
    ids = np.array(["a", "bc", "", "déf"])
    d = integrity.Digest(np.dtypes.StringDType(), ids.shape)
    d.update(ids[:2].astype(np.dtypes.StringDType()))
    d.update(ids[2:].astype(object))
    assert d.hexdigest() == integrity.data_digest(ids)
    assert integrity.data_digest(np.array(["ab", "c", "", "déf"])) != integrity.data_digest(ids)


def test_missing_chunk_refused_on_open_and_on_read(tmp_path, built, monkeypatch):
    monkeypatch.setattr(S, "EDGE_CHUNK", 64)
    p = write(tmp_path, built)
    st = S.open_store(p)
    (p / "snapshots" / "col" / "c.2").unlink()
    with pytest.raises(StoreError, match=r"array snapshots/col is missing chunk c\.2 \(1 of \d+ chunks missing"):
        S.open_store(p)
    with pytest.raises(StoreError, match=r"array snapshots/col is missing chunk c\.2, which would read as zeros"):
        st.window_edges(0, st.num_snapshots)  # deleted after the open: the read itself refuses


def test_truncated_and_undecodable_chunks(tmp_path, built, snapshot_graph, monkeypatch):
    monkeypatch.setattr(S, "EDGE_CHUNK", 64)
    p = write(tmp_path, built)
    chunk = p / "snapshots" / "weight" / "c.1"
    whole = chunk.read_bytes()
    chunk.write_bytes(whole[:-1])
    st = S.open_store(p)  # the open reads no weight
    with pytest.raises(StoreError, match=rf"array snapshots/weight: chunk c\.1 is truncated or damaged "
                                         rf"\({len(whole) - 1} bytes, its header says {len(whole)} bytes"):
        st.window_edges(0, st.num_snapshots)
    p = S.write_store(tmp_path / "s.zarr", snapshot_graph, D.build_snapshots(snapshot_graph, by="source"), None,
                      spec={})
    ids = p / "nodes" / "id" / "c.0"  # string ids: Zstd, not Blosc, whose decoder finds the damage itself
    ids.write_bytes(ids.read_bytes()[:-3])
    with pytest.raises(StoreError, match=r"array nodes/id has a chunk that cannot be read \(.*Zstd"):
        S.open_store(p).node_ids()


def test_shapes_and_offsets_checked_on_open(tmp_path, built):
    p = write(tmp_path, built)
    _rewrite(p, "snapshots/offsets", 3, 10**6)
    with pytest.raises(StoreError, match=r"array snapshots/offsets is inconsistent \(offsets\[3\] = 1000000 > "
                                         r"offsets\[4\] = \d+\)"):
        S.open_store(p)
    p = write(tmp_path, built)
    meta = json.loads((p / "zarr.json").read_text())
    meta["attributes"]["num_nodes"] = 31
    (p / "zarr.json").write_text(json.dumps(meta))
    with pytest.raises(StoreError, match=r"array features/x has shape \(20, 30, 8\), the attributes call for \(20, 31, 8\)"):
        S.open_store(p)


def test_node_ids_checked_on_read_and_verify(tmp_path, built):
    p = write(tmp_path, built)
    _rewrite(p, "snapshots/col", 0, 30)
    st = S.open_store(p)
    with pytest.raises(StoreError, match=r"array snapshots/col holds node id 30, outside \[0, 30\)"):
        st.edges(0)
    with pytest.raises(StoreError, match=r"array snapshots/col holds node id 30"):
        st.verify()


def test_verify_finds_changed_data(tmp_path, built):
    p = write(tmp_path, built)
    assert S.open_store(p).verify() > 0
    _rewrite(p, "features/x", (2, 0, 0), 7.0)  # a consistent chunk, other data
    with pytest.raises(StoreError, match=r"array features/x does not match its checksum"):
        S.open_store(p).verify()


def test_array_metadata_must_agree_with_consolidated(tmp_path, built):
    p = write(tmp_path, built)
    meta = json.loads((p / "snapshots" / "row" / "zarr.json").read_text())
    meta["shape"] = [meta["shape"][0] + 1]
    (p / "snapshots" / "row" / "zarr.json").write_text(json.dumps(meta))
    with pytest.raises(StoreError, match=r"array snapshots/row: its metadata snapshots/row/zarr.json disagrees"):
        S.open_store(p)
