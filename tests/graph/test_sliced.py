import numpy as np
import pytest

from dynagnn.graph.sliced import SlicedCSR, coo_size_words, csr_size_words, segment_sum_sorted


def random_graph(seed, n=40, p=0.15, empty_rows=5, long_rows=2):
    """Sorted unique (row, col, val) with some empty rows and a few rows of almost full degree."""
    rng = np.random.default_rng(seed)
    mask = rng.random((n, n)) < p
    mask[rng.choice(n, empty_rows, replace=False)] = False
    for r in rng.choice(n, long_rows, replace=False):
        mask[r] = rng.random(n) < 0.95
    row, col = np.nonzero(mask)
    val = rng.standard_normal(row.size).astype(np.float32)
    return row.astype(np.int64), col.astype(np.int64), val


def dense(row, col, val, n):
    a = np.zeros((n, n), np.float32)
    a[row, col] = val
    return a


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
@pytest.mark.parametrize("slice_size", [1, 2, 4, 32])
def test_round_trip_and_spmm(seed, slice_size):
    n = 40
    row, col, val = random_graph(seed, n)
    s = SlicedCSR.from_edges(row, col, val, n, slice_size=slice_size)
    r2, c2, v2 = s.to_edges()
    assert np.array_equal(r2, row) and np.array_equal(c2, col) and np.array_equal(v2, val)
    assert np.array_equal(s.to_dense(), dense(row, col, val, n))
    # slice structure: inside one row, 1..slice_size nnz, ceil(deg / slice_size) slices per row
    lens = s.slice_lengths()
    assert lens.min() >= 1 and lens.max() <= slice_size
    assert np.all(row[s.slice_ptr[:-1]] == s.row_index) and np.all(row[s.slice_ptr[1:] - 1] == s.row_index)
    deg = np.bincount(row, minlength=n)
    assert np.array_equal(np.bincount(s.row_index, minlength=n), -(-deg // slice_size))
    assert s.slice_ptr[0] == 0 and s.slice_ptr[-1] == row.size
    x = np.random.default_rng(seed + 100).standard_normal((n, 5)).astype(np.float32)
    np.testing.assert_allclose(s.spmm(x), dense(row, col, val, n) @ x, rtol=1e-5, atol=1e-5)


def test_long_rows_span_several_slices():
    n = 10
    row = np.repeat(np.int64(3), 10)
    col = np.arange(10, dtype=np.int64)
    s = SlicedCSR.from_edges(row, col, None, n, slice_size=4)
    assert s.row_index.tolist() == [3, 3, 3]
    assert s.slice_ptr.tolist() == [0, 4, 8, 10]
    assert np.array_equal(s.val, np.ones(10, np.float32))
    x = np.arange(20, dtype=np.float32).reshape(10, 2)
    out = s.spmm(x)
    assert out[3].tolist() == x.sum(0).tolist() and np.count_nonzero(out[np.arange(10) != 3]) == 0


def test_empty_graph():
    s = SlicedCSR.from_edges(np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0, np.float32), 7)
    assert s.num_slices == 0 and s.slice_ptr.tolist() == [0]
    assert s.size_words() == 1
    r, c, v = s.to_edges()
    assert r.size == c.size == v.size == 0
    assert np.array_equal(s.spmm(np.ones((7, 3), np.float32)), np.zeros((7, 3), np.float32))


@pytest.mark.parametrize("seed", [0, 5])
def test_size_formulas(seed):
    n = 40
    row, col, val = random_graph(seed, n)
    for ss in (1, 4, 32):
        s = SlicedCSR.from_edges(row, col, val, n, slice_size=ss)
        counted = s.row_index.size + s.slice_ptr.size + s.col.size + s.val.size
        assert s.size_words() == counted == 2 * row.size + 2 * s.num_slices + 1
    indptr = np.r_[0, np.cumsum(np.bincount(row, minlength=n))]
    assert csr_size_words(row.size, n) == indptr.size + col.size + val.size
    assert coo_size_words(row.size) == row.size + col.size + val.size


def test_tiny_example_by_hand():
    # rows: 0 -> {1, 2, 3}, 1 -> {}, 2 -> {0}; slice_size 2 as in PiPAD's Fig. 6
    row = np.array([0, 0, 0, 2]); col = np.array([1, 2, 3, 0]); val = np.array([1, 2, 3, 4], np.float32)
    s = SlicedCSR.from_edges(row, col, val, 4, slice_size=2)
    assert s.row_index.tolist() == [0, 0, 2] and s.slice_ptr.tolist() == [0, 2, 3, 4]
    assert s.size_words() == 2 * 4 + 2 * 3 + 1 == 15
    assert csr_size_words(4, 4) == 13 and coo_size_words(4) == 12


def test_segment_sum_and_errors():
    out = segment_sum_sorted(np.array([1, 1, 3]), np.array([1.0, 2.0, 5.0], np.float32), 5)
    assert out.tolist() == [0, 3, 0, 5, 0]
    with pytest.raises(ValueError):
        SlicedCSR.from_edges(np.array([1, 0]), np.array([0, 0]), None, 2)
    with pytest.raises(ValueError):
        SlicedCSR.from_edges(np.array([0]), np.array([0]), None, 2, slice_size=0)
