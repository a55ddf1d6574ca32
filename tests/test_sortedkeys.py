import numpy as np

from dynagnn.sortedkeys import intersection_size, isin_sorted, unique_sorted


def test_against_numpy_sets():
    rng = np.random.default_rng(0)
    for _ in range(20):
        x = rng.integers(0, 50, rng.integers(0, 60))
        y = rng.integers(0, 50, rng.integers(0, 60))
        ux, uy = unique_sorted(x), unique_sorted(y)
        assert ux.tolist() == sorted(set(x.tolist()))
        assert isin_sorted(x, uy).tolist() == [v in set(y.tolist()) for v in x.tolist()]
        assert intersection_size(ux, uy) == len(set(x.tolist()) & set(y.tolist()))


def test_in_place_and_copy():
    x = np.array([3, 1, 3, 2])
    assert unique_sorted(x).tolist() == [1, 2, 3] and x.tolist() == [3, 1, 3, 2]
    unique_sorted(x, in_place=True)
    assert x.tolist() == [1, 2, 3, 3]
