import numpy as np
import pytest

from dynagnn.graph.diff import GraphDiff, apply, diff, diff_bytes, full_bytes


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
    cur_r, cur_c = snaps[0][0], snaps[0][1]
    for prev, nxt in zip(snaps, snaps[1:]):
        d = diff(prev, nxt, n)
        sp = set(zip(prev[0].tolist(), prev[1].tolist()))
        sn = set(zip(nxt[0].tolist(), nxt[1].tolist()))
        assert set(zip(d.removed_row.tolist(), d.removed_col.tolist())) == sp - sn
        assert set(zip(d.added_row.tolist(), d.added_col.tolist())) == sn - sp
        r, c, v = apply(cur_r, cur_c, d, n)     # rebuilt from the previously rebuilt indices
        assert np.array_equal(r, nxt[0]) and np.array_equal(c, nxt[1]) and np.array_equal(v, nxt[2])
        assert r.dtype == np.int64 and c.dtype == np.int64 and v.dtype == np.float32
        assert diff_bytes(d) == (len(sp - sn) + len(sn - sp)) * 16 + len(sn) * 4
        assert full_bytes(len(sn)) == len(sn) * 20
        cur_r, cur_c = r, c


def test_byte_model_by_hand():
    n = 3
    prev = (np.array([0, 0, 1, 2]), np.array([1, 2, 2, 0]), np.ones(4, np.float32))
    nxt = (np.array([0, 1, 2, 2]), np.array([1, 2, 0, 1]), np.array([5, 6, 7, 8], np.float32))
    d = diff(prev, nxt, n)
    assert (d.removed_row.tolist(), d.removed_col.tolist()) == ([0], [2])
    assert (d.added_row.tolist(), d.added_col.tolist()) == ([2], [1])
    assert d.values.tolist() == [5, 6, 7, 8]
    # GD: 2 indices x 16 B + 4 values x 4 B = 48; base: 4 x 20 = 80; int32 indices: 2x8 + 16 = 32 vs 48
    assert diff_bytes(d) == 48 and full_bytes(4) == 80
    assert diff_bytes(d, index_bytes=8) == 32 and full_bytes(4, index_bytes=8) == 48
    r, c, v = apply(prev[0], prev[1], d, n)
    assert r.tolist() == [0, 1, 2, 2] and c.tolist() == [1, 2, 0, 1] and v.tolist() == [5, 6, 7, 8]


def test_identical_and_empty():
    n = 4
    e = (np.array([0, 3]), np.array([1, 2]), np.array([1, 2], np.float32))
    z = (np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0, np.float32))
    d = diff(e, e, n)
    assert d.num_removed == d.num_added == 0 and diff_bytes(d) == 8
    d = diff(e, z, n)
    assert d.num_removed == 2 and d.nnz == 0 and apply(e[0], e[1], d, n)[0].size == 0
    d = diff(z, e, n)
    r, c, v = apply(z[0], z[1], d, n)
    assert r.tolist() == [0, 3] and c.tolist() == [1, 2]


def test_apply_mismatch_raises():
    d = GraphDiff(*(np.zeros(0, np.int64),) * 4, np.ones(3, np.float32))
    with pytest.raises(ValueError):
        apply(np.array([0]), np.array([0]), d, 2)
