"""PiPAD's partition matrices on the training path: A_Over shared only where the weights agree, the
degree scaling outside it, and the parallel aggregation equal to each snapshot's own Â_i Z_i (dense,
computed independently), forward and backward, directed or not, weighted, with self-loops."""

import numpy as np
import pytest
import torch

from dynagnn.graph.csr import dense_normalized, normalized_triples
from dynagnn.graph.overlap import partition_graph, raw_snapshot, split_shared


def snapshots(seed, s, n=25, directed=False, empty_at=None):
    rng = np.random.default_rng(seed)
    base = rng.random((n, n)) < 0.2
    out = []
    for i in range(s):
        m = base & (rng.random((n, n)) > 0.15)
        m |= rng.random((n, n)) < 0.03
        if not directed:
            m = np.triu(m)
            m = m | m.T
        if i == empty_at:
            m[:] = False
        r, c = np.nonzero(m)
        w = np.where(rng.random(r.size) < 0.1, 2.0, 1.0).astype(np.float32)
        if not directed:   # the same weight both ways
            wm = np.zeros((n, n), np.float32)
            wm[r, c] = w
            wm = np.triu(wm) + np.triu(wm, 1).T
            w = wm[r, c]
        out.append((r.astype(np.int64), c.astype(np.int64), w))
    return out


def test_split_shared_keeps_only_equal_weights():
    a = (np.array([0, 0, 1]), np.array([1, 2, 0]), np.array([1.0, 2.0, 1.0], np.float32))
    b = (np.array([0, 0, 1]), np.array([1, 2, 2]), np.array([1.0, 3.0, 1.0], np.float32))
    sp = split_shared([a, b], 3)
    assert list(zip(sp.overlap_row, sp.overlap_col)) == [(0, 1)]          # (0, 2) differs in weight
    assert [list(zip(e[0], e[1], e[2])) for e in sp.exclusive] == [[(0, 2, 2.0), (1, 0, 1.0)],
                                                                   [(0, 2, 3.0), (1, 2, 1.0)]]


@pytest.mark.parametrize("s", [1, 2, 4])
@pytest.mark.parametrize("directed", [False, True])
def test_parallel_aggregation_is_each_snapshots_own(s, directed):
    n = 25
    snaps = snapshots(s + 10 * directed, s, n, directed, empty_at=1 if s == 4 else None)
    part, split = partition_graph([raw_snapshot(r, c, w, n) for r, c, w in snaps], n)
    assert (split is None) == (s == 1)
    if s > 1:   # the shared part is shared: the self-loops at least
        assert split.num_overlap > 0
    z = torch.randn(s, n, 3, dtype=torch.float32, requires_grad=True)
    out = part.aggregate(z)
    dense = [dense_normalized(r, c, w, n) for r, c, w in snaps]
    ref = torch.stack([a @ z[i] for i, a in enumerate(dense)])
    torch.testing.assert_close(out, ref, rtol=1e-5, atol=1e-6)
    g = torch.randn_like(out)
    (gz,) = torch.autograd.grad(out, z, g)
    (gr,) = torch.autograd.grad(ref, z, g)
    torch.testing.assert_close(gz, gr, rtol=1e-5, atol=1e-6)


def test_one_snapshot_partition_is_exactly_the_normalised_adjacency():
    n = 25
    r, c, w = snapshots(3, 1, n)[0]
    part, _ = partition_graph([raw_snapshot(r, c, w, n)], n)
    _, _, v = normalized_triples(r, c, w, n)
    assert np.array_equal(part.shared.matrix.values().numpy(), v) and part.dinv is None
    assert part.clone().nbytes == part.nbytes


def test_wide_frames_are_coalesced_in_blocks(monkeypatch):
    """Past MAX_COALESCED columns the shared product is taken in blocks of snapshots: same result."""
    from dynagnn.graph import overlap

    n = 25
    snaps = snapshots(7, 4, n)
    part, _ = partition_graph([raw_snapshot(r, c, w, n) for r, c, w in snaps], n)
    z = torch.randn(4, n, 3)
    whole = part.aggregate(z)
    monkeypatch.setattr(overlap, "MAX_COALESCED", 6)      # 2 snapshots of 3 columns per product
    torch.testing.assert_close(part.aggregate(z), whole)
    ref = torch.stack([dense_normalized(r, c, w, n) @ z[i] for i, (r, c, w) in enumerate(snaps)])
    torch.testing.assert_close(whole, ref, rtol=1e-5, atol=1e-6)
