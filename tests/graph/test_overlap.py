import numpy as np
import pytest

from dynagnn.graph.overlap import (FrameSplit, frames, overlap_jaccard, overlap_rate,
                                   parallel_aggregate, reconstruct, split_frame, transfer_words)


def churned_snapshots(seed, s, n=30, p=0.2, churn=0.2, empty_at=None):
    """s sorted (row, col, val) snapshots: a base edge set, each snapshot drops and adds ~churn of it;
    values differ per snapshot. Some rows are empty in all snapshots."""
    rng = np.random.default_rng(seed)
    base = rng.random((n, n)) < p
    base[:3] = False
    out = []
    for i in range(s):
        m = base & (rng.random((n, n)) > churn)
        m |= rng.random((n, n)) < p * churn
        m[:3] = False
        if i == empty_at:
            m[:] = False
        r, c = np.nonzero(m)
        out.append((r.astype(np.int64), c.astype(np.int64),
                    rng.standard_normal(r.size).astype(np.float32)))
    return out


def dense(e, n):
    a = np.zeros((n, n), np.float32)
    a[e[0], e[1]] = e[2]
    return a


def check_split(snaps, n):
    sp = split_frame(snaps, n)
    sets = [set(zip(r.tolist(), c.tolist())) for r, c, _ in snaps]
    inter = set.intersection(*sets)
    assert set(zip(sp.overlap_row.tolist(), sp.overlap_col.tolist())) == inter
    keys = sp.overlap_row * n + sp.overlap_col
    assert np.all(np.diff(keys) > 0)
    for i, e in enumerate(snaps):
        er, ec, ev = sp.exclusive[i]
        assert set(zip(er.tolist(), ec.tolist())) == sets[i] - inter
        r, c, v = reconstruct(sp, i)
        assert np.array_equal(r, e[0]) and np.array_equal(c, e[1]) and np.array_equal(v, e[2])
        assert r.dtype == np.int64 and v.dtype == np.float32
        # each snapshot keeps its own value of the common edges
        assert np.array_equal(dense(e, n)[sp.overlap_row, sp.overlap_col], sp.overlap_vals[i])
    union = set.union(*sets)
    mean = np.mean([len(x) for x in sets])
    assert overlap_rate(sp) == pytest.approx(len(inter) / mean if mean else 0.0)
    assert overlap_jaccard(sp) == pytest.approx(len(inter) / len(union) if union else 0.0)
    xs = [np.random.default_rng(i).standard_normal((n, 3)).astype(np.float32) for i in range(len(snaps))]
    for i, out in enumerate(parallel_aggregate(sp, xs)):
        np.testing.assert_allclose(out, dense(snaps[i], n) @ xs[i], rtol=1e-5, atol=1e-5)
    return sp


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("s", [1, 2, 4])
def test_split_reconstruct_aggregate(seed, s):
    sp = check_split(churned_snapshots(seed, s), 30)
    assert sp.num_snapshots == s
    if s == 1:
        assert overlap_rate(sp) == 1.0 and all(e[0].size == 0 for e in sp.exclusive)
    else:
        assert 0 < overlap_rate(sp) < 1


def test_empty_snapshot_in_frame():
    sp = check_split(churned_snapshots(7, 4, empty_at=2), 30)
    assert sp.num_overlap == 0 and overlap_rate(sp) == 0.0 and overlap_jaccard(sp) == 0.0


def test_all_empty():
    e = (np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0, np.float32))
    sp = check_split([e, e], 5)
    assert overlap_rate(sp) == 0.0 and overlap_jaccard(sp) == 0.0


def test_tiny_by_hand():
    n = 4
    a = (np.array([0, 0, 1]), np.array([1, 2, 3]), np.array([1, 2, 3], np.float32))
    b = (np.array([0, 1, 2]), np.array([1, 3, 0]), np.array([4, 5, 6], np.float32))
    sp = split_frame([a, b], n)
    assert sp.overlap_row.tolist() == [0, 1] and sp.overlap_col.tolist() == [1, 3]
    assert [v.tolist() for v in sp.overlap_vals] == [[1, 3], [4, 5]]
    assert sp.exclusive[0][0].tolist() == [0] and sp.exclusive[0][1].tolist() == [2]
    assert sp.exclusive[1][0].tolist() == [2] and sp.exclusive[1][1].tolist() == [0]
    assert overlap_rate(sp) == pytest.approx(2 / 3) and overlap_jaccard(sp) == pytest.approx(2 / 4)
    # 2 overlap index arrays of length 2, 2x2 overlap values, 2 exclusive edges x 3 words
    assert transfer_words(sp) == 4 + 4 + 6


def test_frames():
    assert frames(10, 4) == [(0, 4), (4, 8), (8, 10)]
    assert frames(8, 4) == [(0, 4), (4, 8)]
    assert frames(0, 2) == []
    with pytest.raises(ValueError):
        frames(3, 0)


def test_errors():
    e = (np.array([0]), np.array([0]), np.array([1], np.float32))
    with pytest.raises(ValueError):
        split_frame([], 2)
    sp = split_frame([e, e], 2)
    assert isinstance(sp, FrameSplit)
    with pytest.raises(ValueError):
        parallel_aggregate(sp, [np.ones((2, 1), np.float32)])
