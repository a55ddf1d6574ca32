import itertools

import numpy as np
import pytest

from dynagnn.errors import InputError
from dynagnn.splits import even_ranges, minmax_ranges


def test_even_ranges():
    for T, P in [(10, 3), (6, 6), (7, 1), (100, 8)]:
        g = even_ranges(T, P)
        sizes = [b - a for a, b in g]
        assert g[0][0] == 0 and g[-1][1] == T and all(g[i][1] == g[i + 1][0] for i in range(P - 1))
        assert max(sizes) - min(sizes) <= 1 and min(sizes) >= 1


def test_minmax_ranges_matches_brute_force():
    rng = np.random.default_rng(0)
    for trial in range(30):
        T = int(rng.integers(1, 9))
        P = int(rng.integers(1, T + 1))
        costs = rng.integers(0, 10, size=T).astype(float)
        g = minmax_ranges(costs, P)
        assert len(g) == P and g[0][0] == 0 and g[-1][1] == T
        assert all(b > a for a, b in g) and all(g[i][1] == g[i + 1][0] for i in range(P - 1))
        got = max(costs[a:b].sum() for a, b in g)
        best = min(max(costs[a:b].sum() for a, b in zip((0,) + cut, cut + (T,)))
                   for cut in itertools.combinations(range(1, T), P - 1))
        assert got == best


def test_errors():
    with pytest.raises(InputError, match="P <= T"):
        even_ranges(3, 4)
    with pytest.raises(InputError):
        minmax_ranges([1.0, 2.0], 3)
    with pytest.raises(InputError):
        minmax_ranges([1.0, 2.0], 0)
