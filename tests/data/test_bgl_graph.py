"""The BGL-shaped generator: exact edge count, power-law degrees, communities (on random ids unless
contiguous), and labels that the neighbourhood predicts better than a vertex's own features."""

import numpy as np
import pytest

from dynagnn.data.synthetic import bgl_classes, generate
from dynagnn.errors import ConfigError


def centre_accuracy(z, y, k):
    cent = np.stack([z[y == c].mean(0) for c in range(k)])
    return float((np.argmax(z @ cent.T - 0.5 * (cent ** 2).sum(1), 1) == y).mean())


@pytest.mark.parametrize("contiguous", [True, False])
def test_shape_labels_and_neighbourhood_signal(contiguous):
    n, m, k = 6000, 60000, 4
    g = bgl_classes(n, m, feature_dim=32, classes=k, signal=0.1, seed=3, contiguous=contiguous)
    row, col = g.snapshots.rows[0], g.snapshots.cols[0]
    assert row.size == m and np.all(row < col) and len(np.unique(row * n + col)) == m
    y, x = g.node_labels, g.node_features
    assert x.shape == (n, 32) and x.dtype == np.float32
    if contiguous:
        assert np.array_equal(y, np.arange(n) * k // n)
    else:   # random ids: a label change at about every (1 - 1/k) of consecutive ids
        assert np.bincount(y).tolist() == [n // k] * k
        assert 0.7 < np.mean(y[1:] != y[:-1]) < 0.8
    assert 0.75 < np.mean(y[row] == y[col]) < 0.85              # within = 0.8 (plus chance)
    deg = np.bincount(row, minlength=n) + np.bincount(col, minlength=n)
    assert deg.max() > 10 * deg.mean()                          # heavy tail
    mean_nbr = np.zeros_like(x)
    np.add.at(mean_nbr, row, x[col])
    np.add.at(mean_nbr, col, x[row])
    mean_nbr /= np.maximum(deg, 1)[:, None]
    assert centre_accuracy(mean_nbr, y, k) > centre_accuracy(x, y, k) + 0.2


def test_random_ids_relabel_the_contiguous_graph():
    # the same graph up to a permutation of the ids: invariants of a relabelling are equal
    a = bgl_classes(3000, 20000, feature_dim=4, classes=5, seed=4, contiguous=True)
    b = bgl_classes(3000, 20000, feature_dim=4, classes=5, seed=4)
    ra, ca, rb, cb = a.snapshots.rows[0], a.snapshots.cols[0], b.snapshots.rows[0], b.snapshots.cols[0]
    assert rb.size == ra.size and np.all(rb < cb) and np.all(np.diff(rb * 3000 + cb) > 0)
    deg = [np.bincount(np.r_[r, c], minlength=3000) for r, c in ((ra, ca), (rb, cb))]
    assert np.array_equal(np.sort(deg[0]), np.sort(deg[1]))
    ya, yb = a.node_labels, b.node_labels
    assert np.count_nonzero(ya[ra] == ya[ca]) == np.count_nonzero(yb[rb] == yb[cb])
    for c in range(5):    # each community keeps its degree multiset
        assert np.array_equal(np.sort(deg[0][ya == c]), np.sort(deg[1][yb == c]))


def test_seeded_and_registered():
    a = generate("bgl", num_nodes=500, num_edges=2000, feature_dim=4, seed=1)
    b = bgl_classes(500, 2000, feature_dim=4, seed=1)
    assert np.array_equal(a.snapshots.rows[0], b.snapshots.rows[0])
    assert np.array_equal(a.node_features, b.node_features)
    c = bgl_classes(500, 2000, feature_dim=4, seed=2)
    assert not np.array_equal(a.snapshots.rows[0], c.snapshots.rows[0])


def test_locality_window():
    # contiguous ids: a share `local` of the edges joins ids at most `window` apart in one community
    n, m, w = 4000, 30000, 30
    near = {}
    for local in (0.0, 0.9):
        g = bgl_classes(n, m, feature_dim=2, classes=4, local=local, window=w, seed=5, contiguous=True)
        row, col, y = g.snapshots.rows[0], g.snapshots.cols[0], g.node_labels
        assert row.size == m and np.all(row < col)
        near[local] = np.mean((col - row <= w) & (y[row] == y[col]))
    assert near[0.0] < 0.1 and 0.8 < near[0.9] < 0.95   # 0.9 drawn local, less the repeated (hub) pairs dropped
    a = bgl_classes(500, 2000, feature_dim=2, seed=1)      # local = 0: the former stream, unchanged
    b = bgl_classes(500, 2000, feature_dim=2, seed=1, local=0.0, window=3)
    assert np.array_equal(a.snapshots.rows[0], b.snapshots.rows[0]) and np.array_equal(a.snapshots.cols[0],
                                                                                       b.snapshots.cols[0])


@pytest.mark.parametrize("params,key", [({"classes": 1}, "classes"), ({"feature_dim": 0}, "feature_dim"),
                                        ({"within": 1.5}, "within"), ({"signal": -1}, "signal"),
                                        ({"local": 1.5}, "local"), ({"window": 0}, "window"),
                                        ({"contiguous": "yes"}, "contiguous")])
def test_bad_parameters_name_themselves(params, key):
    with pytest.raises(ConfigError, match=key):
        bgl_classes(100, 300, **params)
