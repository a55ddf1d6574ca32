"""Graph-difference transfer rebuilds exactly the snapshot a full transfer sends."""

import numpy as np
import pytest
import torch

from dynagnn.data.store import open_store
from dynagnn.graph.csr import dense_normalized
from dynagnn.timing import PhaseTimer
from dynagnn.graph.diff import diff_keys, full_bytes
from dynagnn.train.transfer import SnapshotFeeder, host_snapshot
from dynagnn.train.transfer import load_host_snapshots
from tests.testing.devices import DEVICES


def feeder(store, mode, capacity=None, timer=None, device="cpu"):
    return SnapshotFeeder(load_host_snapshots(store), store.features(), store.num_nodes, device, mode,
                          capacity, timer)


@pytest.mark.parametrize("device", DEVICES)
def test_diff_rebuilds_every_snapshot(link_store, device):
    """On cuda the difference is applied on the device to the resident previous snapshot."""
    store = open_store(link_store)
    full, diff = feeder(store, "full", device=device), feeder(store, "diff", device=device)
    n = store.num_nodes
    for t in range(store.num_snapshots):
        a, b = full.adjacency(t), diff.adjacency(t)
        ref = dense_normalized(*store.edges(t), n)
        assert torch.equal(a.matrix.crow_indices(), b.matrix.crow_indices())
        assert torch.equal(a.matrix.col_indices(), b.matrix.col_indices())
        assert torch.equal(a.matrix.values(), b.matrix.values())
        torch.testing.assert_close(b.dense().cpu(), ref, rtol=1e-6, atol=1e-7)
    # the first snapshot goes in full, every later one as a difference
    assert diff.stats["full"] == 1 and diff.stats["diff"] == store.num_snapshots - 1
    assert full.stats["full"] == store.num_snapshots and full.stats["diff"] == 0


def test_bytes_follow_the_model(link_store):
    store = open_store(link_store)
    host = load_host_snapshots(store)
    f = feeder(store, "diff")
    for t in range(3):
        f.adjacency(t)
    d1, d2 = (diff_keys(host[a].keys, host[b].keys, host[b].values) for a, b in ((0, 1), (1, 2)))
    # independent count of the difference: edges of one key set missing from the other
    for d, (a, b) in ((d1, (0, 1)), (d2, (1, 2))):
        ka, kb = set(host[a].keys.tolist()), set(host[b].keys.tolist())
        assert sorted(ka - kb) == d.removed.tolist() and sorted(kb - ka) == d.added.tolist()
    expected = full_bytes(host[0].nnz, store.num_nodes) + d1.nbytes + d2.nbytes
    assert full_bytes(host[0].nnz, store.num_nodes) == 8 * (store.num_nodes + 1) + 12 * host[0].nnz
    assert f.stats["bytes"] == expected
    assert d1.nbytes == 8 * (len(d1.removed) + len(d1.added)) + 4 * host[1].nnz


@pytest.mark.parametrize("device", DEVICES)
def test_non_adjacent_request_goes_in_full(link_store, device):
    store = open_store(link_store)
    f = feeder(store, "diff", capacity=1, device=device)
    f.adjacency(0)
    f.adjacency(2)          # t-1 not resident: full
    f.adjacency(3)          # t-1 resident: difference
    assert (f.stats["full"], f.stats["diff"]) == (2, 1)


@pytest.mark.parametrize("device", DEVICES)
def test_device_copy_is_separate_and_timed(link_store, device):
    store = open_store(link_store)
    timer = PhaseTimer(torch.device(device))
    f = feeder(store, "full", timer=timer, device=device)
    host = load_host_snapshots(store)
    with timer.epoch(0):
        adj = f.adjacency(0)
    adj.matrix.values().zero_()     # a separate buffer: the host copy is untouched
    assert np.abs(host[0].values).sum() > 0
    phases = set(timer.frame()["phase"])
    assert "transfer" in phases
    assert timer.bytes_moved["full"] == full_bytes(host[0].nnz, store.num_nodes)


@pytest.mark.parametrize("device", DEVICES)
def test_preload_copies_every_snapshot_when_built_on_a_cpu(link_store, device):
    """``preload`` (the sequential loop's feeder): on a CPU every copy is made when the feeder is built,
    none in a step; on a GPU, with a capacity or in diff mode, copies stay made as read."""
    store = open_store(link_store)
    host = load_host_snapshots(store)
    f = SnapshotFeeder(host, store.features(), store.num_nodes, device, "full", None, preload=True)
    made = len(host) if device == "cpu" else 0
    assert f.stats["full"] == made
    assert f.stats["bytes"] == (sum(full_bytes(h.nnz, store.num_nodes) for h in host) if made else 0)
    f.adjacency(3)
    assert f.stats["full"] == (made or 1)
    for kw in ({"capacity": 2}, {"mode": "diff"}):
        lazy = SnapshotFeeder(host, store.features(), store.num_nodes, device, kw.get("mode", "full"),
                              kw.get("capacity"), preload=True)
        assert lazy.stats["full"] == 0


def test_host_snapshot_keys_sorted():
    row = np.array([2, 0, 1, 0]); col = np.array([0, 1, 2, 2])
    h = host_snapshot(row, col, None, 3)
    assert np.all(np.diff(h.keys) > 0)
    assert h.nnz == 4 + 3  # edges and self-loops


def test_bad_mode(link_store):
    with pytest.raises(ValueError, match="transfer mode"):
        feeder(open_store(link_store), "zip")
