"""Closed-form communication volumes against volumes counted by enumeration on real partitions."""

import itertools

import numpy as np
import pandas as pd
import pytest

from dynagnn.analysis import commvolume as CV
from dynagnn.analysis.redundancy import _sample_all
from dynagnn.data.store import open_store
from dynagnn.errors import InputError
from dynagnn.graph import partition as gp
from dynagnn.splits import minmax_ranges

from tests.testing.stores import random_events


def random_snapshots(N, T, m, seed):
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(T):
        r, c = rng.integers(0, N, m), rng.integers(0, N, m)
        out.append((np.concatenate([r, c]), np.concatenate([c, r])))  # symmetric, with repeats and self-loops
    return out


@pytest.mark.parametrize("T,N,P", [(6, 9, 3), (7, 10, 3), (5, 13, 4), (8, 8, 8), (3, 100, 2), (10, 3, 3), (1, 1, 1)])
def test_snapshot_redistribution_exact(T, N, P):
    v = CV.snapshot_redistribution_volume(T, N, P, width=5, dtype_size=2)
    assert v.units == CV.count_snapshot_redistribution(T, N, P)
    assert v.elements == 5 * v.units and v.bytes == 10 * v.units
    if T % P == 0 and N % P == 0:
        assert v.units == CV.esdg_paper_volume(T, N, P)


def test_hash_vertex_volume_is_the_mean_over_all_permutations():
    N = 7
    for P, seed in ((2, 0), (3, 1), (4, 2)):
        edges = random_snapshots(N, 3, 4, seed)
        sizes = CV.hash_part_sizes(N, P)
        counts = [gp.snapshot_volume(edges, N, np.asarray(perm) % P, P) for perm in itertools.permutations(range(N))]
        assert np.bincount(np.arange(N) % P).tolist() == sizes.tolist()
        assert CV.vertex_volume_hash(edges, N, P).units == pytest.approx(np.mean(counts), rel=1e-10)


def test_hash_vertex_volume_close_to_seeded_hash_partitions():
    N, P = 200, 4
    edges = random_snapshots(N, 5, 300, 3)
    model = CV.vertex_volume_hash(edges, N, P).units
    counts = [CV.count_vertex_volume(edges, N, gp.hash_partition(N, P, seed=s), P) for s in range(40)]
    assert np.mean(counts) == pytest.approx(model, rel=0.01)  # an expectation: mean of 40 seeds within 1%


def test_vertex_count_is_enumeration():
    N, P = 12, 3
    edges = random_snapshots(N, 4, 10, 5)
    parts = gp.range_partition(N, P)
    want = 0
    for r, c in edges:
        for v in range(N):
            want += len({int(parts[u]) for u in c[r == v]} - {int(parts[v])})
    assert CV.count_vertex_volume(edges, N, parts, P) == want
    assert CV.blad_paper_vertex_volume(edges, P) == sum(int((r != c).sum()) for r, c in edges) * (P - 1) / P


@pytest.mark.parametrize("W,P", [(0, 3), (1, 4), (10, 3), (4224, 8), (7, 1)])
def test_ring_allreduce(W, P):
    assert CV.ring_allreduce_volume(W, P).elements == CV.count_ring_allreduce(W, P) == 2 * (P - 1) * W


def test_params():
    assert CV.gnn_params(16, 32, 2) == 16 * 32 + 32 + 32 * 32 + 32
    assert CV.rnn_params(32, 2, "gru") == 2 * 3 * (2 * 32 * 32 + 64)
    assert CV.layer_widths(16, 32, 3) == [16, 32, 32]


@pytest.mark.parametrize("window", [0, 1, 3, 10])
def test_group_halo(window):
    costs = np.random.default_rng(window).random(12)
    for P in (1, 2, 5):
        ranges = minmax_ranges(costs, P)
        v = CV.group_halo_volume(ranges, window, N=10, features=4)
        assert v.units == CV.count_group_halo(ranges, window)
        assert v.width == 40


def _batches(M, bs=40, k=3, seed=0, N=30):
    ev = random_events(n_nodes=N, n_events=400, seed=seed)
    roots, nbrs = _sample_all(ev, N, k, None)
    return CV.sven_batches(roots, nbrs, bs, M)


def _enumerate_sven(b, owner, d_mem, d_edge):
    """Python sets, batch by batch and trainer by trainer."""
    w = 3 * d_mem + d_edge
    out = dict.fromkeys(["depcache/aggregation", "depcomm/dispatch", "depcomm/aggregation", "sven/dispatch",
                         "sven/aggregation"], 0)
    for g in np.unique(b.group):
        i = g % b.M
        occ = b.roots[b.group == g]
        nb = b.nbrs[b.group == g].ravel()
        sampled = list(occ) + [u for u in nb if u >= 0]
        remote_occ = [v for v in sampled if owner[v] != i]
        out["depcomm/dispatch"] += len(remote_occ) * d_mem
        out["sven/dispatch"] += len(set(remote_occ)) * w
        agg = {v for v in occ if owner[v] != i}
        out["depcomm/aggregation"] += len(agg) * w
        out["sven/aggregation"] += len(agg) * w
        out["depcache/aggregation"] += len(set(occ)) * (b.M - 1) * w
    return out


@pytest.mark.parametrize("M", [1, 2, 3, 4])
def test_sven_counts_are_enumeration(M):
    b = _batches(M)
    owner = gp.hash_partition(30, M, seed=M)
    got = CV.count_sven_volumes(b, owner, 7, 3)
    want = _enumerate_sven(b, owner, 7, 3)
    for key, val in want.items():
        assert got[key] == val, key
    modelled = CV.sven_volumes(CV.sven_stats(b), CV.hash_part_sizes(30, M), 30, 7, 3)
    assert modelled["depcache/aggregation"].elements == got["depcache/aggregation"]  # exact


def test_sven_model_is_the_mean_over_all_hash_partitions():
    N, M = 7, 2
    ev = random_events(n_nodes=N, n_events=60, seed=4)
    roots, nbrs = _sample_all(ev, N, 2, None)
    b = CV.sven_batches(roots, nbrs, 10, M)
    modelled = CV.sven_volumes(CV.sven_stats(b), CV.hash_part_sizes(N, M), N, 5, 2)
    total = {k: 0 for k in modelled}
    perms = list(itertools.permutations(range(N)))
    for perm in perms:
        for k, v in CV.count_sven_volumes(b, np.asarray(perm) % M, 5, 2).items():
            total[k] += v
    for k, v in modelled.items():
        assert v.elements == pytest.approx(total[k] / len(perms), rel=1e-12), k


def test_sven_condition_corrected_against_count():
    """Sven < DepComm iff the remote sampled occurrences' redundancy exceeds (2Π+1)/(3Π+1)."""
    seen = {True: 0, False: 0}
    paper_wrong = 0
    rng = np.random.default_rng(0)
    for trial in range(60):
        M = int(rng.integers(2, 5))
        b = _batches(M, bs=int(rng.integers(8, 60)), k=int(rng.integers(1, 5)), seed=trial)
        owner = gp.hash_partition(30, M, seed=trial)
        d_mem, d_edge = int(rng.integers(1, 50)), int(rng.integers(0, 200))
        c = CV.count_sven_volumes(b, owner, d_mem, d_edge)
        sven = c["sven/dispatch"] + c["sven/aggregation"]
        depcomm = c["depcomm/dispatch"] + c["depcomm/aggregation"]
        g1, v1 = CV.sampled_occurrences(b)
        remote = owner[v1] != g1 % M
        r_occ = int(remote.sum())
        r_uniq = len(set(zip(g1[remote].tolist(), v1[remote].tolist())))
        eta_r = 1 - r_uniq / r_occ
        if sven == depcomm:
            continue
        assert (sven < depcomm) == CV.sven_beats_depcomm(eta_r, d_mem, d_edge)
        seen[sven < depcomm] += 1
        if d_edge and (sven < depcomm) != CV.paper_sven_beats_depcomm(eta_r, d_mem, d_edge):
            paper_wrong += 1
    assert seen[True] and seen[False] and paper_wrong  # both outcomes occur, and the printed rule errs


def test_sven_thresholds():
    assert CV.sven_threshold(100, 172) == pytest.approx((2 * 100 / 172 + 1) / (3 * 100 / 172 + 1))
    assert CV.sven_threshold(100, 172) == pytest.approx(0.788, abs=1e-3)
    assert CV.sven_threshold(10, 0) == pytest.approx(2 / 3)
    # with DepComm's gradient return: the η1 where (1 - η1)(3·d_mem + d_edge) = 2·d_mem
    for d_mem, d_edge in ((100, 172), (10, 0), (64, 16)):
        eta = CV.sven_threshold(d_mem, d_edge, gradient_return=True)
        assert (1 - (eta + 1e-9)) * (3 * d_mem + d_edge) < 2 * d_mem < (1 - (eta - 1e-9)) * (3 * d_mem + d_edge)
    assert CV.sven_threshold(10, 0, gradient_return=True) == pytest.approx(1 / 3)
    # the printed rule says Sven wins at η1 = 0.1 with d_mem=100, d_edge=172; the volumes say it loses
    assert CV.paper_sven_beats_depcomm(0.1, 100, 172) and not CV.sven_beats_depcomm(0.1, 100, 172)
    # DepCache: equal-part expectation, modelled volumes agree with M > τ + 1
    stats = pd.DataFrame({"trainer": range(4), "N1": [50] * 4, "U1": [30] * 4, "N2": [20] * 4, "U2": [10] * 4})
    for M in (2, 3, 4, 5, 6):
        st = pd.concat([stats] * 2, ignore_index=True).iloc[:M]
        v = CV.sven_volumes(st, [10] * M, 10 * M, 4, 0)
        sven = v["sven/dispatch"].elements + v["sven/aggregation"].elements
        tau = st["U1"].sum() / st["U2"].sum()
        if sven != v["depcache/aggregation"].elements:
            assert (sven < v["depcache/aggregation"].elements) == CV.sven_beats_depcache(tau, M)


def test_bad_inputs():
    with pytest.raises(InputError, match="cannot split 5 snapshots into P=6"):
        CV.snapshot_redistribution_volume(5, 100, 6)
    with pytest.raises(InputError, match="cannot split 3 vertices into P=4"):
        CV.snapshot_redistribution_volume(10, 3, 4)
    with pytest.raises(InputError, match="cannot split 3 vertices into P=4"):
        CV.vertex_volume_hash(random_snapshots(3, 2, 2, 0), 3, 4)
    with pytest.raises(InputError, match="batch of 2 events cannot feed M=3"):
        _batches(3, bs=2)
    with pytest.raises(InputError, match="unknown RNN cell"):
        CV.rnn_params(8, 2, "transformer")
    with pytest.raises(InputError, match="must be >= 1"):
        CV.gnn_params(0, 8, 2)


def test_volume_table(store_path):
    st = open_store(store_path)
    df = CV.volume_table(store_path, None, (2, 3), batch_size=20, neighbors=3, memory_dim=8)
    assert list(df.columns) == CV.COLUMNS
    exact = df[df["exact"]]
    assert (exact["modelled"] == exact["counted"]).all()
    assert set(df["scheme"]) == {"vertex", "snapshot", "group", "depcache", "depcomm", "sven"}
    # the counted vertex volume is the partition table's snapshot volume on the same partition
    edges = [(r, c) for r, c, _ in st.window_edges(0, st.num_snapshots)]
    for P in (2, 3):
        row = df[(df["scheme"] == "vertex") & (df["partitioner"] == "hash") & (df["workers"] == P)].iloc[0]
        assert row["counted_units"] == gp.snapshot_volume(edges, st.num_nodes, gp.hash_partition(st.num_nodes, P), P)
    with pytest.raises(InputError, match="workers for 30 vertices"):
        CV.volume_table(store_path, None, (31,))
    with pytest.raises(InputError, match="snapshots"):
        CV.volume_table(store_path, None, (st.num_snapshots + 1,))
