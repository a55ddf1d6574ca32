"""The BGL-shaped generator: exact edge count, power-law degrees, communities on contiguous ids, and
labels that the neighbourhood predicts better than a vertex's own features."""

import numpy as np
import pytest

from dynagnn.data.synthetic import bgl_classes, generate
from dynagnn.errors import ConfigError


def centre_accuracy(z, y, k):
    cent = np.stack([z[y == c].mean(0) for c in range(k)])
    return float((np.argmax(z @ cent.T - 0.5 * (cent ** 2).sum(1), 1) == y).mean())


def test_shape_labels_and_neighbourhood_signal():
    n, m, k = 6000, 60000, 4
    g = bgl_classes(n, m, feature_dim=32, classes=k, signal=0.1, seed=3)
    row, col = g.snapshots.rows[0], g.snapshots.cols[0]
    assert row.size == m and np.all(row < col) and len(np.unique(row * n + col)) == m
    y, x = g.node_labels, g.node_features
    assert x.shape == (n, 32) and x.dtype == np.float32
    assert np.array_equal(y, np.arange(n) * k // n)            # contiguous communities
    assert 0.75 < np.mean(y[row] == y[col]) < 0.85              # within = 0.8 (plus chance)
    deg = np.bincount(row, minlength=n) + np.bincount(col, minlength=n)
    assert deg.max() > 10 * deg.mean()                          # heavy tail
    mean_nbr = np.zeros_like(x)
    np.add.at(mean_nbr, row, x[col])
    np.add.at(mean_nbr, col, x[row])
    mean_nbr /= np.maximum(deg, 1)[:, None]
    assert centre_accuracy(mean_nbr, y, k) > centre_accuracy(x, y, k) + 0.2


def test_seeded_and_registered():
    a = generate("bgl", num_nodes=500, num_edges=2000, feature_dim=4, seed=1)
    b = bgl_classes(500, 2000, feature_dim=4, seed=1)
    assert np.array_equal(a.snapshots.rows[0], b.snapshots.rows[0])
    assert np.array_equal(a.node_features, b.node_features)
    c = bgl_classes(500, 2000, feature_dim=4, seed=2)
    assert not np.array_equal(a.snapshots.rows[0], c.snapshots.rows[0])


@pytest.mark.parametrize("params,key", [({"classes": 1}, "classes"), ({"feature_dim": 0}, "feature_dim"),
                                        ({"within": 1.5}, "within"), ({"signal": -1}, "signal")])
def test_bad_parameters_name_themselves(params, key):
    with pytest.raises(ConfigError, match=key):
        bgl_classes(100, 300, **params)
