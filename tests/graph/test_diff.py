import numpy as np
import pytest
import torch

from dynagnn.graph.diff import (GraphDiff, adjacency_keys, apply, diff, diff_bytes, diff_keys, full_bytes,
                                keys_of, merge_keys)


def chain(seed, t=6, n=25, p=0.2, churn=0.15):
    """t sorted (row, col, val) snapshots, each churned from the previous one (an empty one at t=3)."""
    rng = np.random.default_rng(seed)
    m = rng.random((n, n)) < p
    out = []
    for i in range(t):
        m = (m & (rng.random((n, n)) > churn)) | (rng.random((n, n)) < p * churn)
        mi = np.zeros_like(m) if i == 3 else m
        r, c = np.nonzero(mi)
        out.append((r.astype(np.int64), c.astype(np.int64), rng.standard_normal(r.size).astype(np.float32)))
    return out


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_round_trip_chain(seed):
    n = 25
    snaps = chain(seed, n=n)
    cur = keys_of(snaps[0][0], snaps[0][1], n)
    for prev, nxt in zip(snaps, snaps[1:]):
        d = diff(prev, nxt, n)
        sp = set(zip(prev[0].tolist(), prev[1].tolist()))
        sn = set(zip(nxt[0].tolist(), nxt[1].tolist()))
        assert set(d.removed.tolist()) == {r * n + c for r, c in sp - sn}
        assert set(d.added.tolist()) == {r * n + c for r, c in sn - sp}
        assert np.all(np.diff(d.removed) > 0) and np.all(np.diff(d.added) > 0)
        keys, v = apply(cur, d)     # rebuilt from the previously rebuilt keys
        assert np.array_equal(keys, keys_of(nxt[0], nxt[1], n)) and np.array_equal(v, nxt[2])
        assert keys.dtype == np.int64 and v.dtype == np.float32
        assert d.nbytes == diff_bytes(d.num_removed, d.num_added, d.nnz) \
            == (len(sp - sn) + len(sn - sp)) * 8 + len(sn) * 4
        assert full_bytes(len(sn), n) == 8 * (n + 1) + len(sn) * 12
        cur = keys


def test_byte_model_by_hand():
    n = 3
    prev = (np.array([0, 0, 1, 2]), np.array([1, 2, 2, 0]), np.ones(4, np.float32))
    nxt = (np.array([0, 1, 2, 2]), np.array([1, 2, 0, 1]), np.array([5, 6, 7, 8], np.float32))
    d = diff(prev, nxt, n)
    assert d.removed.tolist() == [0 * 3 + 2] and d.added.tolist() == [2 * 3 + 1]
    assert d.values.tolist() == [5, 6, 7, 8]
    # difference: 2 int64 keys x 8 B + 4 values x 4 B = 32; full CSR: 4 offsets x 8 B + 4 x (8 + 4) = 80
    assert d.nbytes == 32 and full_bytes(4, n) == 80
    keys, v = apply(keys_of(prev[0], prev[1], n), d)
    assert (keys // n).tolist() == [0, 1, 2, 2] and (keys % n).tolist() == [1, 2, 0, 1] and v.tolist() == [5, 6, 7, 8]


def test_identical_and_empty():
    n = 4
    e = (np.array([0, 3]), np.array([1, 2]), np.array([1, 2], np.float32))
    z = (np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0, np.float32))
    ke, kz = keys_of(e[0], e[1], n), keys_of(z[0], z[1], n)
    d = diff(e, e, n)
    assert d.num_removed == d.num_added == 0 and d.nbytes == 8
    d = diff(e, z, n)
    assert d.num_removed == 2 and d.nnz == 0 and apply(ke, d)[0].size == 0
    d = diff(z, e, n)
    keys, _ = apply(kz, d)
    assert keys.tolist() == ke.tolist()


def test_apply_mismatch_raises():
    d = GraphDiff(np.zeros(0, np.int64), np.zeros(0, np.int64), np.ones(3, np.float32))
    with pytest.raises(ValueError):
        apply(np.array([0]), d)


def test_merge_keys_against_sets():
    rng = np.random.default_rng(5)
    for _ in range(20):
        a = np.unique(rng.integers(0, 200, rng.integers(0, 60)))
        b = np.unique(rng.integers(0, 200, rng.integers(0, 60)))
        d = diff_keys(a, b, np.zeros(b.shape[0], np.float32))
        got = merge_keys(torch.from_numpy(a), torch.from_numpy(d.removed), torch.from_numpy(d.added))
        assert got.tolist() == b.tolist()


def test_adjacency_keys_are_the_normalised_pattern():
    row, col = np.array([2, 0, 1, 1]), np.array([0, 1, 2, 1])  # one self-loop already there
    keys, vals, r = adjacency_keys(row, col, None, 3)
    # Â is indexed [target, source]: edge 2 -> 0 is key 0·3 + 2 (before issue 34 the pattern
    # was the untransposed 2·3 + 0, 0·3 + 1, 1·3 + 2)
    assert keys.tolist() == sorted({0 * 3 + 0, 1 * 3 + 1, 2 * 3 + 2, 0 * 3 + 2, 1 * 3 + 0, 2 * 3 + 1})
    assert np.array_equal(r, keys // 3) and vals.dtype == np.float32 and vals.shape == keys.shape
