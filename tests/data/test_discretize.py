"""Discretisation against a plain dict-of-edges computation."""

from collections import defaultdict

import numpy as np
import pytest

from dynagnn.data import discretize as D
from dynagnn.data.types import EventStream, RawGraph, SnapshotList
from dynagnn.errors import InputError

from tests.testing.stores import random_events


def naive_snapshots(ev, n, width, directed, edge_weight, life=1, self_loops="drop"):
    """One dict {(u, v): weight} per window, by plain loops."""
    t0 = ev.t[0]
    T = int((ev.t[-1] - t0) // width) + 1
    raw = [defaultdict(float) for _ in range(T)]
    for i in range(len(ev)):
        u, v = int(ev.src[i]), int(ev.dst[i])
        if self_loops == "drop" and u == v:
            continue
        k = int((ev.t[i] - t0) // width)
        w = 1.0 if (edge_weight == "count" or ev.w is None) else float(ev.w[i])
        raw[k][(u, v)] += w
        if not directed and u != v:
            raw[k][(v, u)] += w
    if edge_weight == "binary":
        raw = [{e: 1.0 for e in d} for d in raw]
    out = []
    for k in range(T):
        acc = defaultdict(float)
        for j in range(max(0, k - life + 1), k + 1):
            for e, w in raw[j].items():
                acc[e] += w
        out.append(dict(acc))
    return out


def as_dicts(snaps):
    return [{(int(r), int(c)): float(w) for r, c, w in zip(*snaps.edges(k))} for k in range(snaps.num_snapshots)]


@pytest.mark.parametrize("directed", [True, False])
@pytest.mark.parametrize("edge_weight", ["count", "sum", "binary"])
@pytest.mark.parametrize("life", [1, 3])
def test_build_snapshots_matches_naive(directed, edge_weight, life):
    ev = random_events(weights=True, seed=7)
    raw = RawGraph(num_nodes=30, node_ids=np.arange(30), events=ev, directed=True)
    snaps = D.build_snapshots(raw, by="time", width=100, directed=directed, edge_weight=edge_weight,
                              edge_life=life, threads=2)
    want = naive_snapshots(ev, 30, 100, directed, edge_weight, life)
    got = as_dicts(snaps)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert g.keys() == w.keys()
        for e in g:
            assert g[e] == pytest.approx(w[e], rel=1e-5)
    for k in range(snaps.num_snapshots):  # sorted by (row, col), unique
        r, c, _ = snaps.edges(k)
        key = r * 30 + c
        assert np.all(np.diff(key) > 0)
    assert np.array_equal(snaps.time, ev.t[0] + 100 * np.arange(snaps.num_snapshots))


def test_keep_self_loops():
    ev = EventStream(np.array([0, 1, 1]), np.array([0, 2, 1]), np.array([0, 1, 2]))
    raw = RawGraph(num_nodes=3, node_ids=np.arange(3), events=ev)
    kept = D.build_snapshots(raw, by="count", size=10, self_loops="keep")
    dropped = D.build_snapshots(raw, by="count", size=10, self_loops="drop")
    assert list(zip(kept.row, kept.col)) == [(0, 0), (1, 1), (1, 2)]
    assert list(zip(dropped.row, dropped.col)) == [(1, 2)]


def test_window_bounds_time_and_count():
    t = np.array([5, 5, 6, 9, 15, 30])
    bounds, times = D.window_bounds(t, by="time", width=5)
    # windows [5,10) [10,15) [15,20) [20,25) [25,30) [30,35)
    assert bounds.tolist() == [0, 4, 4, 5, 5, 5, 6]
    assert times.tolist() == [5, 10, 15, 20, 25, 30]
    bounds, times = D.window_bounds(t, by="count", size=4)
    assert bounds.tolist() == [0, 4, 6]
    assert times.tolist() == [5, 15]
    bounds, _ = D.window_bounds(t, by="time", width=10, start=0)
    assert bounds.tolist() == [0, 4, 5, 5, 6]  # [0,10) [10,20) [20,30) [30,40)


def test_window_times_keep_the_source_type():
    """Fractional starts are float64 and distinct (they were floored to int64, duplicating times)."""
    t = np.array([3, 3, 4])
    bounds, times = D.window_bounds(t, by="time", width=0.25)
    assert times.dtype == np.float64 and times.tolist() == [3.0, 3.25, 3.5, 3.75, 4.0]
    assert bounds.tolist() == [0, 2, 2, 2, 2, 3]
    _, times = D.window_bounds(t, by="time", width=1, start=2.5)      # a fractional start
    assert times.dtype == np.float64 and times.tolist() == [2.5, 3.5]
    _, times = D.window_bounds(t, by="time", width=2.0, start=2)      # integral: stays int64
    assert times.dtype == np.int64 and times.tolist() == [2, 4]
    tf = np.array([0.5, 0.75, 2.125])
    _, times = D.window_bounds(tf, by="count", size=2)
    assert times.dtype == np.float64 and times.tolist() == [0.5, 2.125]
    ev = EventStream(np.array([0, 1, 0]), np.array([1, 2, 2]), tf)
    snaps = D.build_snapshots(RawGraph(num_nodes=3, node_ids=np.arange(3), events=ev), by="time", width=0.5)
    assert snaps.time.dtype == np.float64 and snaps.time.tolist() == [0.5, 1.0, 1.5, 2.0]
    assert len(set(snaps.time.tolist())) == snaps.num_snapshots


@pytest.mark.parametrize("t, kw", [
    (np.array([5, 5, 6, 9, 15, 30]), {"by": "time", "width": 5}),
    (np.array([5, 5, 6, 9, 15, 30]), {"by": "time", "width": 10, "start": 0}),
    (np.array([5, 5, 6, 9, 15, 30]), {"by": "time", "width": 0.7}),
    (np.array([0.1, 0.2, 0.35]), {"by": "time", "width": 0.05}),
    (np.arange(10), {"by": "count", "size": 3}),
    (np.arange(9), {"by": "count", "size": 3}),
])
def test_window_count_predicts_window_bounds(t, kw):
    """The count ingest checks against snapshots.max_count is the count window_bounds then makes."""
    bounds, times = D.window_bounds(t, **kw)
    assert D.window_count(t[0], t[-1], len(t), **kw) == len(times)
    if kw["by"] == "time":  # the last window holds the last event, and no window is surplus
        assert times[-1] <= t[-1] < times[-1] + kw["width"]
        for k in range(len(times)):
            window = t[bounds[k]:bounds[k + 1]]
            assert np.all((window >= times[k]) & (window < times[k] + kw["width"]))
    else:
        assert np.diff(bounds).max() == kw["size"] and bounds[-2] < len(t)


def test_resolve_rules_defaults():
    weighted = RawGraph(num_nodes=3, node_ids=np.arange(3),
                        events=EventStream(np.array([0]), np.array([1]), np.array([0]), np.array([2.0], np.float32)))
    plain = RawGraph(num_nodes=3, node_ids=np.arange(3), events=EventStream(np.array([0]), np.array([1]), np.array([0])))
    assert D.resolve_rules(weighted, "time") == ("sum", "drop")
    assert D.resolve_rules(plain, "count") == ("count", "drop")
    snaps = RawGraph(num_nodes=2, node_ids=np.arange(2),
                     snapshots=SnapshotList([np.array([0])], [np.array([0])], [np.array([3.0], np.float32)], np.arange(1)))
    assert D.resolve_rules(snaps, "source") == ("sum", "keep")
    assert D.resolve_rules(snaps, "source", "binary", "drop") == ("binary", "drop")
    with pytest.raises(ValueError, match="edge_weight must be one of"):
        D.resolve_rules(plain, "time", "mean")
    # the default keeps a source snapshot's weighted self-loop, with its weight
    s = D.build_snapshots(snaps, by="source")
    assert (s.row.tolist(), s.col.tolist(), s.weight.tolist()) == ([0], [0], [3.0])


def test_empty_windows_kept_or_refused():
    ev = EventStream(np.array([0, 1]), np.array([1, 2]), np.array([0, 25]))
    raw = RawGraph(num_nodes=3, node_ids=np.arange(3), events=ev, name="gap")
    snaps = D.build_snapshots(raw, by="time", width=10, empty="keep")
    assert np.diff(snaps.offsets).tolist() == [1, 0, 1]
    with pytest.raises(InputError, match=r"1 of 3 snapshots have no edges, the first is window 1 \[10, 20\)"):
        D.build_snapshots(raw, by="time", width=10, empty="error")


def test_clean_events_duplicates_and_loops():
    ev = random_events(seed=3)
    out = D.clean_events(ev, self_loops="drop", duplicates="drop")
    seen, want = set(), []
    for s, d, t in zip(ev.src, ev.dst, ev.t):
        if s == d or (s, d, t) in seen:
            continue
        seen.add((s, d, t))
        want.append((s, d, t))
    assert list(zip(out.src, out.dst, out.t)) == want
    assert len(want) < len(ev)  # the fixture has both kinds


@pytest.mark.parametrize("self_loops", ["auto", "keep", "drop"])
def test_source_snapshots_symmetrised(snapshot_graph, self_loops):
    """A source's own snapshots keep their self-loops by default (once: a loop is its own reverse)."""
    snaps = D.build_snapshots(snapshot_graph, by="source", self_loops=self_loops)
    sl = snapshot_graph.snapshots
    loops = 0
    for k in range(len(sl)):
        want = defaultdict(float)
        for u, v in zip(sl.rows[k], sl.cols[k]):
            if u != v:
                want[(int(u), int(v))] += 1
                want[(int(v), int(u))] += 1
            elif self_loops != "drop":
                want[(int(u), int(u))] += 1
                loops += 1
        assert as_dicts(snaps)[k] == dict(want)
    assert snaps.time.tolist() == sl.times.tolist()
    assert (loops > 0) == (self_loops != "drop")  # the fixture has some


def test_by_source_needs_snapshots(event_graph):
    with pytest.raises(InputError, match="no snapshots of its own"):
        D.build_snapshots(event_graph, by="source")


def test_degree_features_one_hot(snapshot_graph):
    snaps = D.build_snapshots(snapshot_graph, by="source")
    x = D.make_features("degree", snapshot_graph, snaps, dim=4)
    assert x.shape == (6, 12, 4)
    for k in range(6):
        r, _, _ = snaps.edges(k)
        for v in range(12):
            d = min(int(np.sum(r == v)), 3)
            assert x[k, v].tolist() == [1.0 if j == d else 0.0 for j in range(4)]


def test_random_and_identity_features(snapshot_graph):
    snaps = D.build_snapshots(snapshot_graph, by="source")
    a = D.make_features("random", snapshot_graph, snaps, dim=5, seed=3)
    b = D.make_features("random", snapshot_graph, snaps, dim=5, seed=3)
    assert a.shape == (12, 5) and np.array_equal(a, b)
    assert not np.array_equal(a, D.make_features("random", snapshot_graph, snaps, dim=5, seed=4))
    assert np.array_equal(D.make_features("identity", snapshot_graph, snaps), np.eye(12, dtype=np.float32))
    assert D.make_features("none", snapshot_graph, snaps) is None
    with pytest.raises(InputError, match="no node features"):
        D.make_features("source", snapshot_graph, snaps)


def m_matrix(T, w):
    """ESDG's M [T, T]: M_tk = 1/min(w, t) for max(1, t-w+1) <= k <= t (1-based), else 0."""
    M = np.zeros((T, T))
    for t in range(1, T + 1):
        M[t - 1, max(1, t - w + 1) - 1:t] = 1.0 / min(w, t)
    return M


def dense(snaps, n):
    A = np.zeros((snaps.num_snapshots, n, n))
    for k in range(snaps.num_snapshots):
        r, c, w = snaps.edges(k)
        A[k, r, c] = w
    return A


@pytest.mark.parametrize("directed", [True, False])
@pytest.mark.parametrize("w, life", [(2, 1), (3, 1), (4, 2), (30, 1)])
def test_m_product_matches_dense(directed, w, life):
    ev = random_events(weights=True, seed=11)
    raw = RawGraph(num_nodes=30, node_ids=np.arange(30), events=ev, directed=True)
    kw = dict(by="time", width=100, directed=directed, edge_weight="sum", edge_life=life, threads=2)
    base = D.build_snapshots(raw, **kw)
    smooth = D.build_snapshots(raw, m_product=w, **kw)
    want = np.einsum("tk,kij->tij", m_matrix(base.num_snapshots, w), dense(base, 30))
    got = dense(smooth, 30)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    for k in range(smooth.num_snapshots):  # the pattern is the union of the band, sorted and unique
        r, c, v = smooth.edges(k)
        assert np.all(np.diff(r * 30 + c) > 0) and np.all(v > 0)
        assert len(r) == np.count_nonzero(want[k])


def test_m_product_features_and_errors():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((7, 5, 3)).astype(np.float32)
    for w in (1, 2, 3, 9):
        want = np.einsum("tk,knf->tnf", m_matrix(7, w), x)
        np.testing.assert_allclose(D.smooth_features_m_product(x, w), want, rtol=1e-5, atol=1e-6)
    static = x[0]
    assert D.smooth_features_m_product(static, 3) is static  # every row of M sums to 1
    assert D.smooth_features_m_product(None, 3) is None
    raw = RawGraph(num_nodes=30, node_ids=np.arange(30), events=random_events(), directed=True)
    with pytest.raises(ValueError, match="m_product must be >= 1"):
        D.build_snapshots(raw, by="time", width=100, m_product=0)


def test_ingest_passes_m_product(tmp_path):
    from dynagnn.data.ingest import ingest
    from dynagnn.data.store import open_store

    spec = {"format": "synthetic", "generator": "esdg",
            "params": {"num_nodes": 20, "num_snapshots": 5, "avg_degree": 2.0, "seed": 3},
            "snapshots": {"by": "source"}, "features": {"kind": "degree", "dim": 4}}
    plain = open_store(ingest(spec, tmp_path / "plain.zarr"))
    smooth = open_store(ingest({**spec, "m_product": 2}, tmp_path / "smooth.zarr"))
    M = m_matrix(5, 2)
    A = np.zeros((5, 20, 20))
    for k in range(5):
        r, c, v = plain.edges(k)
        A[k, r, c] = v
    for k in range(5):
        r, c, v = smooth.edges(k)
        got = np.zeros((20, 20))
        got[r, c] = v
        np.testing.assert_allclose(got, np.einsum("k,kij->ij", M[k], A), rtol=1e-6)
    # features are made from the smoothed snapshots, then smoothed along time
    onehot = np.zeros((5, 20, 4))
    for k in range(5):
        deg = np.minimum(np.bincount(smooth.edges(k)[0], minlength=20), 3)
        onehot[k, np.arange(20), deg] = 1.0
    np.testing.assert_allclose(smooth.features(), np.einsum("tk,knf->tnf", M, onehot), rtol=1e-6)
