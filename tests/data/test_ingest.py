"""The ingest stage on real-format fixtures: what the source says (weights, self-loops, fractional
times) reaches the store, computed independently from the file's text; what was dropped is logged;
the snapshot count is bounded before allocation; stale temporaries of dead writers are removed."""

import logging
import os
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

import numpy as np
import pytest

from dynagnn.data import ingest as ingest_module
from dynagnn.data.ingest import ingest
from dynagnn.data.store import open_store
from dynagnn.errors import InputError

FIXTURES = Path(__file__).parent / "fixtures"
WEIGHTED = FIXTURES / "snap_weighted_loops.txt"


def source_events(path: Path) -> list[tuple[int, int, float, float]]:
    """(src, dst, t, w) of every data row, by plain text parsing (comments and the header skipped)."""
    rows = []
    for line in path.read_text().splitlines():
        fields = line.split()
        if not fields or line.startswith("#") or not fields[0].lstrip("-").isdigit():
            continue
        rows.append((int(fields[0]), int(fields[1]), float(fields[2]), float(fields[3])))
    return rows


def expected_windows(events, width, *, loops: bool, rule: str) -> list[dict]:
    """{(src id, dst id): weight} per window of ``width`` from the first event's time."""
    t0 = min(e[2] for e in events)
    count = int((max(e[2] for e in events) - t0) // width) + 1
    out = [defaultdict(float) for _ in range(count)]
    for s, d, t, w in events:
        if s == d and not loops:
            continue
        out[int((t - t0) // width)][(s, d)] += w if rule == "sum" else 1.0
    return [dict(d) for d in out]


def stored_windows(store) -> list[dict]:
    ids = store.node_ids()
    return [{(int(ids[r]), int(ids[c])): float(w) for r, c, w in zip(*store.edges(k))}
            for k in range(store.num_snapshots)]


def spec(**extra):
    return {"format": "snap-edgelist", "path": str(WEIGHTED), "snapshots": {"by": "time", "width": 10},
            "features": {"kind": "none"}, **extra}


@pytest.mark.parametrize("extra, loops, rule", [
    ({}, False, "sum"),                                          # the defaults: auto, auto
    ({"self_loops": "keep"}, True, "sum"),
    ({"edge_weight": "count"}, False, "count"),
])
def test_weights_and_self_loops_reach_the_store(tmp_path, extra, loops, rule):
    store = open_store(ingest(spec(**extra), tmp_path / "store.zarr"))
    want = expected_windows(source_events(WEIGHTED), 10, loops=loops, rule=rule)
    got = stored_windows(store)
    assert [g.keys() for g in got] == [w.keys() for w in want]
    for g, w in zip(got, want):
        for edge in g:
            assert g[edge] == pytest.approx(w[edge], rel=1e-6)
    assert store.attrs["spec"]["edge_weight"] == rule
    assert store.attrs["spec"]["self_loops"] == ("keep" if loops else "drop")


def test_ingest_logs_dropped_loops_duplicates_weights_and_header(tmp_path, caplog):
    with caplog.at_level(logging.INFO, logger="dynagnn"):
        ingest(spec(duplicates="drop"), tmp_path / "store.zarr")
    text = caplog.text
    assert "line 3 is not all numbers and is taken as a header (reader option header: auto" in text
    assert "edge weights (edge_weight: auto): the sum of the source's weights" in text
    assert "duplicates: dropped 1 identical events" in text
    # 10 rows, 9 after the duplicate; 3 of them are self-loops (2 2, 3 3, 1 1)
    assert "self-loops (self_loops: auto): 3 of 9 events are self-loops, dropped" in text


def test_snapshot_source_keeps_self_loops_by_default(tmp_path):
    """AS-733 snapshots (undirected): a self-loop is kept once, with the count of its listings."""
    store = open_store(ingest({"format": "as733", "path": str(FIXTURES / "as733_loops"),
                               "features": {"kind": "none"}}, tmp_path / "store.zarr"))
    want = []
    for name in ("as20000101.txt", "as20000102.txt"):
        edges = defaultdict(float)
        for line in (FIXTURES / "as733_loops" / name).read_text().splitlines():
            if line.startswith("#"):
                continue
            u, v = map(int, line.split())
            edges[(u, v)] += 1
            if u != v:
                edges[(v, u)] += 1
        want.append(dict(edges))
    assert stored_windows(store) == want
    assert (7, 7) in want[0] and want[1][(9, 9)] == 2.0  # the fixture has loops
    assert store.times.tolist() == [20000101, 20000102]


def test_fractional_width_gives_distinct_float_times(tmp_path):
    path = tmp_path / "e.txt"
    path.write_text("1 2 3\n2 3 4\n")
    store = open_store(ingest({"format": "snap-edgelist", "path": str(path),
                               "snapshots": {"by": "time", "width": 0.25}}, tmp_path / "store.zarr"))
    assert store.times.dtype == np.float64
    assert store.times.tolist() == [3.0, 3.25, 3.5, 3.75, 4.0]
    whole = open_store(ingest({"format": "snap-edgelist", "path": str(path),
                               "snapshots": {"by": "time", "width": 1}}, tmp_path / "whole.zarr"))
    assert whole.times.dtype == np.int64 and whole.times.tolist() == [3, 4]


def test_snapshot_count_refused_before_allocation(tmp_path, monkeypatch):
    path = tmp_path / "e.txt"
    path.write_text("1 2 0\n2 3 86400\n")
    tiny = {"format": "snap-edgelist", "path": str(path), "snapshots": {"by": "time", "width": 0.5}}
    with pytest.raises(InputError, match=r"172801 snapshots .*more than snapshots.max_count = 100000"):
        ingest(tiny, tmp_path / "store.zarr")
    raised = {**tiny, "snapshots": {**tiny["snapshots"], "max_count": 200_000}}
    # within the count limit, the memory estimate still guards: 172801 snapshots x 3 nodes x 32 x 4 bytes
    monkeypatch.setattr(ingest_module, "physical_memory", lambda: 64 << 20)
    with pytest.raises(InputError, match=r"172801 snapshots with 32 degree features per node need "
                                         r"about .* more than this machine's 64.0 MiB"):
        ingest(raised, tmp_path / "store.zarr")
    assert not (tmp_path / "store.zarr").exists()


def dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def test_stale_temporaries_of_dead_writers_removed(tmp_path):
    """A writer killed with -9 leaves ``.<name>.tmp-<pid>-<token>``; the next ingest into the folder
    removes those of processes that are gone, and keeps a running one's."""
    out = tmp_path / "store.zarr"
    dead = dead_pid()
    stale = [tmp_path / f".store.zarr.tmp-{dead}-0123abcd", tmp_path / f".store.zarr.old-{dead}-4567cdef"]
    for folder in stale:
        (folder / "snapshots").mkdir(parents=True)
        (folder / "snapshots" / "c0").write_bytes(b"half")
    live = tmp_path / f".store.zarr.tmp-{os.getpid()}-89abcdef"
    live.mkdir()
    other = tmp_path / f".other.zarr.tmp-{dead}-0123abcd"  # another target's: not this ingest's business
    other.mkdir()
    ingest(spec(), out)
    assert not any(p.exists() for p in stale)
    assert live.exists() and other.exists() and open_store(out).num_snapshots == 2


def test_check_graph_names_array_index_and_node():
    """Values every reader may hand over, checked once: the message names the array, the index and
    the source's node id; negative weights only matter when they are summed."""
    from dynagnn.data.checks import check_graph
    from dynagnn.data.types import EventStream, RawGraph, SnapshotList

    ids = np.array(["a", "b", "c"], dtype=object)
    sl = SnapshotList([np.array([0, 1])] * 2, [np.array([1, 2])] * 2,
                      [np.array([1.0, 2.0], np.float32), np.array([0.5, -2.0], np.float32)], np.array([10, 20]))
    raw = RawGraph(num_nodes=3, node_ids=ids, snapshots=sl, sources=[Path("g.json")], name="g")
    with pytest.raises(InputError, match=r"^g\.json: edge weight of source snapshot 1 \(time 20\), edge 1: "
                                         r"negative weight -2: .*edge_weight: auto"):
        check_graph(raw, weights_used=True, weight_rule="auto")
    check_graph(raw, weights_used=False)  # count/binary leave the weights out
    labels = np.zeros((2, 3), np.float32)
    labels[1, 2] = np.inf
    raw.node_labels = labels
    with pytest.raises(InputError, match=r"^g\.json: node label at snapshot 1, node 2 \(source id 'c'\) is inf: "
                                         r"expected a finite number"):
        check_graph(raw, weights_used=False)
    raw.node_labels = None
    features = np.zeros((3, 4), np.float32)
    features[1, 3] = np.nan
    raw.node_features = features
    with pytest.raises(InputError, match=r"node feature at node 1 \(source id 'b'\), feature 3 is nan"):
        check_graph(raw, weights_used=False)
    ev = EventStream(np.array([0, 1]), np.array([1, 2]), np.array([0.5, np.nan]))
    events = RawGraph(num_nodes=3, node_ids=np.arange(3), events=ev, sources=[Path("e.bin")], name="e")
    with pytest.raises(InputError, match=r"^e\.bin: event 1 \(in time order\): event time is nan"):
        check_graph(events, weights_used=False)
