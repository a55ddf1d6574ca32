"""Synthetic dynamic graphs: determinism, snapshot invariants, trend, churn rate, bad parameters."""

from __future__ import annotations

import numpy as np
import pytest

from dynagnn.data import synthetic
from dynagnn.data.synthetic import GENERATORS, as733_trend, blad_style, churn, esdg_random, generate
from dynagnn.data.types import RawGraph
from dynagnn.errors import ConfigError

SMALL = {
    "blad": dict(num_nodes=300, num_edges=1500, num_snapshots=6),
    "blad_sbm": dict(num_nodes=300, num_edges=1500, num_snapshots=6, graph="sbm", blocks=4),
    "esdg": dict(num_nodes=300, num_snapshots=6, avg_degree=6.0),
    "churn": dict(num_nodes=300, num_edges=1500, num_snapshots=6),
}


def _make(case: str, seed: int = 0) -> RawGraph:
    name = case.split("_")[0]
    return generate(name, **SMALL[case], seed=seed)


def _keys(g: RawGraph, t: int) -> np.ndarray:
    return g.snapshots.rows[t] * g.num_nodes + g.snapshots.cols[t]


def _active(g: RawGraph) -> np.ndarray:
    return np.array([np.unique(np.concatenate((r, c))).size
                     for r, c in zip(g.snapshots.rows, g.snapshots.cols)])


@pytest.mark.parametrize("case", sorted(SMALL))
def test_same_seed_same_graph_other_seed_other_graph(case):
    a, b, c = _make(case, 3), _make(case, 3), _make(case, 4)
    for t in range(len(a.snapshots)):
        np.testing.assert_array_equal(a.snapshots.rows[t], b.snapshots.rows[t])
        np.testing.assert_array_equal(a.snapshots.cols[t], b.snapshots.cols[t])
    assert any(not np.array_equal(_keys(a, t), _keys(c, t)) for t in range(len(a.snapshots)))


@pytest.mark.parametrize("case", sorted(SMALL))
def test_snapshot_invariants(case):
    g = _make(case)
    n, t = g.num_nodes, SMALL[case]["num_snapshots"]
    assert len(g.snapshots) == t and g.snapshots.weights is None
    np.testing.assert_array_equal(g.snapshots.times, np.arange(t))
    assert g.snapshots.times.dtype == np.int64
    np.testing.assert_array_equal(g.node_ids, np.arange(n))
    assert (g.directed, g.time_unit, g.sources) == (False, "index", [])
    assert g.name
    for row, col in zip(g.snapshots.rows, g.snapshots.cols):
        assert row.dtype == np.int64 and col.dtype == np.int64
        assert row.size > 0
        assert np.all(row < col)                       # stored once as (min, max), no self-loop
        assert row.min() >= 0 and col.max() < n
        assert np.all(np.diff(row * n + col) > 0)      # sorted by (row, col), unique


def test_registry_and_generate_match_direct_calls():
    assert {k: GENERATORS[k] for k in ("blad", "esdg", "churn")} == {"blad": blad_style, "esdg": esdg_random, "churn": churn}
    direct = esdg_random(50, 2, 4.0, seed=1)
    via = generate("esdg", num_nodes=50, num_snapshots=2, avg_degree=4.0, seed=1)
    for t in range(2):
        np.testing.assert_array_equal(_keys(direct, t), _keys(via, t))


def test_blad_follows_explicit_trend():
    trend = np.array([0.2, 0.35, 0.5, 0.3, 0.8, 1.0, 0.6])
    g = blad_style(2000, 20000, len(trend), trend=trend, seed=5)
    counts = np.array([r.size for r in g.snapshots.rows])
    np.testing.assert_allclose(counts, trend * 20000, rtol=0.05)
    assert counts[-2] == 20000                         # trend 1.0 is the whole static graph


def test_blad_neighbouring_snapshots_overlap_strongly():
    g = blad_style(2000, 20000, 4, trend=[0.6, 0.6, 0.65, 0.6], seed=2)
    for t in range(3):
        a, b = _keys(g, t), _keys(g, t + 1)
        jaccard = np.intersect1d(a, b).size / np.union1d(a, b).size
        assert jaccard > 0.8


def test_blad_default_trend_varies_active_vertices_strongly():
    g = blad_style(2000, 10000, 30, seed=0)
    active = _active(g)
    assert active.max() / active.min() >= 3.0
    counts = np.array([r.size for r in g.snapshots.rows])
    assert counts.max() / counts.min() >= 5.0


def test_as733_trend_shape():
    trend = as733_trend(40, seed=1)
    assert trend.shape == (40,) and np.all((trend > 0) & (trend <= 1))
    assert trend[-1] > 0.8 and trend[0] < 0.25        # rising overall
    assert trend.min() < 0.15 * 0.5 + 1e-9             # at least one sharp dip
    np.testing.assert_array_equal(trend, as733_trend(40, seed=1))


def test_powerlaw_static_graph_is_heavy_tailed():
    g = blad_style(5000, 25000, 1, trend=[1.0], seed=0)
    deg = np.bincount(np.concatenate((g.snapshots.rows[0], g.snapshots.cols[0])), minlength=5000)
    assert g.snapshots.rows[0].size == 25000
    assert deg.max() > 10 * deg.mean()


def test_sbm_keeps_most_edges_within_blocks():
    g = blad_style(1000, 5000, 1, graph="sbm", blocks=5, p_in_ratio=20.0, trend=[1.0], seed=0)
    blocks = g.node_labels
    assert blocks.shape == (1000,) and set(np.unique(blocks)) == set(range(5))
    within = np.mean(blocks[g.snapshots.rows[0]] == blocks[g.snapshots.cols[0]])
    assert abs(within - 20 / (20 + 4)) < 0.05          # ratio * W / (ratio * W + X), equal blocks


def test_esdg_snapshots_have_exactly_m_edges_and_are_independent():
    g = esdg_random(400, 5, 7.5, seed=0)
    assert [r.size for r in g.snapshots.rows] == [1500] * 5
    a, b = _keys(g, 0), _keys(g, 1)
    assert np.intersect1d(a, b).size < 0.1 * a.size    # expected overlap 1500 / 79800 of a


@pytest.mark.parametrize("change", [0.1, 0.3])
def test_churn_changes_the_requested_fraction(change):
    g = churn(500, 3000, 6, change=change, seed=0)
    for t in range(5):
        a, b = _keys(g, t), _keys(g, t + 1)
        assert a.size == b.size == 3000
        assert abs(np.setxor1d(a, b).size / a.size - change) < 0.01


@pytest.mark.parametrize("make", [
    lambda: blad_style(12, 66, 3, seed=1),
    lambda: blad_style(12, 60, 2, graph="sbm", blocks=3, trend=[1.0, 0.5], seed=1),
    lambda: esdg_random(10, 3, 9.0, seed=1),
    lambda: churn(20, 150, 4, change=0.5, seed=1),
])
def test_dense_graphs_are_exact(make):
    g = make()
    n = g.num_nodes
    for t in range(len(g.snapshots)):
        k = _keys(g, t)
        assert np.all(np.diff(k) > 0) and np.all(g.snapshots.rows[t] < g.snapshots.cols[t])
        assert k.max() < n * n


def test_complete_graph_at_full_trend():
    g = blad_style(12, 66, 2, trend=[0.5, 1.0], seed=0)
    assert g.snapshots.rows[1].size == 66


@pytest.mark.parametrize("name, params, key", [
    ("blad", dict(num_nodes=0, num_edges=5, num_snapshots=2), "num_nodes"),
    ("blad", dict(num_nodes=10, num_edges=0, num_snapshots=2), "num_edges"),
    ("blad", dict(num_nodes=10, num_edges=5, num_snapshots=0), "num_snapshots"),
    ("blad", dict(num_nodes=10, num_edges=46, num_snapshots=2), "num_edges"),
    ("blad", dict(num_nodes=10, num_edges=5, num_snapshots=2, trend=[0.5]), "trend"),
    ("blad", dict(num_nodes=10, num_edges=5, num_snapshots=2, trend=[0.5, 0.0]), "trend"),
    ("blad", dict(num_nodes=10, num_edges=5, num_snapshots=2, trend=[0.5, 1.2]), "trend"),
    ("blad", dict(num_nodes=10, num_edges=5, num_snapshots=2, trend="up"), "trend"),
    ("blad", dict(num_nodes=10, num_edges=5, num_snapshots=2, graph="grid"), "graph"),
    ("blad", dict(num_nodes=10, num_edges=5, num_snapshots=2, min_fraction=0.0), "min_fraction"),
    ("blad", dict(num_nodes=10, num_edges=5, num_snapshots=2, graph="sbm", blocks=0), "blocks"),
    ("blad", dict(num_nodes=10, num_edges=5, num_snapshots=2, exponent=1.5), "exponent"),
    ("blad", dict(num_nodes=2.5, num_edges=5, num_snapshots=2), "num_nodes"),
    ("esdg", dict(num_nodes=-3, num_snapshots=2, avg_degree=2.0), "num_nodes"),
    ("esdg", dict(num_nodes=10, num_snapshots=2, avg_degree=0.0), "avg_degree"),
    ("esdg", dict(num_nodes=10, num_snapshots=2, avg_degree=10.0), "avg_degree"),
    ("churn", dict(num_nodes=10, num_edges=5, num_snapshots=2, change=-0.1), "change"),
    ("churn", dict(num_nodes=10, num_edges=5, num_snapshots=2, change=1.5), "change"),
    ("churn", dict(num_nodes=10, num_edges=44, num_snapshots=2, change=0.5), "change"),
    ("churn", dict(num_nodes=10, num_edges=5, num_snapshots=2, seed=-1), "seed"),
])
def test_bad_parameters_raise_config_error_naming_them(name, params, key):
    with pytest.raises(ConfigError, match=key):
        generate(name, **params)


def test_unknown_generator_lists_known_names():
    with pytest.raises(ConfigError, match="blad, churn, esdg"):
        generate("barabasi", num_nodes=10)


def test_unknown_or_missing_parameter_is_config_error():
    with pytest.raises(ConfigError, match="num_edge"):
        generate("churn", num_nodes=10, num_edge=5, num_snapshots=2)
    with pytest.raises(ConfigError, match="esdg"):
        generate("esdg", num_nodes=10)


def test_module_draws_no_global_randomness():
    state = np.random.get_state()[1].copy()
    synthetic.blad_style(50, 100, 3, seed=0)
    np.testing.assert_array_equal(np.random.get_state()[1], state)
