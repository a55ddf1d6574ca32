"""The linear-regression cost model: NNLS, fit, held-out accuracy, JSON, predict, bad inputs."""

import json

import numpy as np
import pandas as pd
import pytest

from dynagnn.cost.fit import fit, fit_operator, nnls
from dynagnn.cost.models import ModelConfig
from dynagnn.cost.predictor import FEATURES, PREDICTOR_VERSION, OperatorModel, Predictor, design_matrix
from dynagnn.cost.profile import DIRECTIONS, OPERATORS
from dynagnn.errors import ConfigError, CostError

from tests.testing.profiles import TRUE, synthetic_profile


def test_nnls_exact_and_constrained():
    rng = np.random.default_rng(0)
    A = rng.random((30, 4)) * np.array([1.0, 1e3, 1e6, 1e9])
    x_true = np.array([0.5, 0.0, 2e-3, 1e-9])
    np.testing.assert_allclose(nnls(A, A @ x_true), x_true, rtol=1e-8, atol=1e-14)
    # the unconstrained optimum has a negative coordinate: NNLS clamps it and refits the others
    A = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]])
    b = np.array([2.0, -1.0, 1.0])
    x = nnls(A, b)
    assert (x >= 0).all()
    np.testing.assert_allclose(x, [1.5, 0.0], atol=1e-12)  # argmin (x0-2)^2 + (x0-1)^2 at x1 = 0


def test_nnls_matches_scipy():
    so = pytest.importorskip("scipy.optimize")
    rng = np.random.default_rng(1)
    for _ in range(50):
        m, n = int(rng.integers(5, 30)), int(rng.integers(1, 7))
        A = rng.normal(size=(m, n)) * 10.0 ** rng.integers(-3, 6, size=n)
        b = rng.normal(size=m)
        x = nnls(A, b)
        assert (x >= 0).all()
        ref = so.nnls(A, b)[0]
        assert np.linalg.norm(A @ x - b) <= np.linalg.norm(A @ ref - b) * (1 + 1e-9) + 1e-12


@pytest.mark.parametrize("weighting", ["relative", "absolute"])
def test_fit_recovers_known_coefficients_noise_free(weighting):
    pred = fit(synthetic_profile(), weighting=weighting)
    assert pred.device == "cpu"
    assert set(pred.models) == set(TRUE)
    for key, coef in TRUE.items():
        m = pred.models[key]
        assert m.features == FEATURES[key[0]]
        np.testing.assert_allclose(m.coef, coef, rtol=1e-6, err_msg=str(key))
        assert m.mape < 1e-8 and m.r2 > 1 - 1e-10


def test_fit_with_noise_within_tolerance():
    pred = fit(synthetic_profile(noise=0.03, seed=3, copies=3))
    for key, coef in TRUE.items():
        m = pred.models[key]
        assert m.mape < 0.06, key  # 3% log-normal noise per row
        big = np.argmax(coef * design_matrix(m.features, 6400, 6400 * 24, 64, 64))  # the dominant term
        assert abs(m.coef[big] / coef[big] - 1) < 0.1, key


def test_heldout_metrics_by_hand_and_split_by_shape():
    df = synthetic_profile(noise=0.05, seed=4, copies=3)
    rows = df[(df.operator == "nn_op") & (df.direction == "forward")]
    m = fit_operator(rows, "nn_op", "forward", test_fraction=0.3, seed=7)
    shapes = rows[["N", "nnz", "in_width", "out_width"]].drop_duplicates()
    # stratified by width pair: each pair holds out round(0.3 k) of its k shapes, keeping 3 to fit
    per_pair = shapes.groupby(["in_width", "out_width"]).size()
    assert (per_pair == 4).all()  # 4 sizes per pair in this profile
    assert m.n_train + m.n_test == len(shapes) and m.n_test == len(per_pair) * min(max(1, round(0.3 * 4)), 4 - 3)
    held_pairs = pd.Series([(s[2], s[3]) for s in m.test_shapes]).value_counts()
    assert (held_pairs == 1).all() and len(held_pairs) == len(per_pair)
    test = set(m.test_shapes)
    is_test = np.array([tuple(r) in test for r in rows[["N", "nnz", "in_width", "out_width"]].to_numpy().tolist()])
    assert is_test.sum() == 3 * m.n_test  # every copy of a held-out shape is held out
    sub = rows[is_test]
    coefs = np.array([m.width_coef.get((a, b), m.coef) for a, b in zip(sub.in_width, sub.out_width)])
    feats = np.stack([np.ones(len(sub)), sub.N * sub.in_width, sub.N * sub.out_width,
                      sub.N * sub.in_width * sub.out_width], axis=1)
    p = (coefs * feats).sum(axis=1)
    y = sub.median_s.to_numpy()
    assert m.mape == pytest.approx(np.mean(np.abs(p - y) / y), rel=1e-12)
    assert m.r2 == pytest.approx(1 - np.sum((y - p) ** 2) / np.sum((y - y.mean()) ** 2), rel=1e-12)
    # held-out rows take no part in the fit: corrupting them leaves the coefficients unchanged
    bad = rows.copy()
    bad.loc[is_test, "median_s"] *= 100
    m2 = fit_operator(bad, "nn_op", "forward", test_fraction=0.3, seed=7)
    np.testing.assert_array_equal(m2.coef, m.coef)
    assert m2.mape > 0.9  # predictions stay at 1/100 of the corrupted times


def test_forward_and_backward_hold_out_the_same_shapes():
    pred = fit(synthetic_profile())
    for op in OPERATORS:
        assert pred.models[(op, "forward")].test_shapes == pred.models[(op, "backward")].test_shapes
        assert pred.models[(op, "forward")].n_test > 0


def test_json_round_trip(tmp_path):
    pred = fit(synthetic_profile(noise=0.02))
    path = pred.save(tmp_path / "cost" / "predictor.json")
    d = json.loads(path.read_text())
    assert d["version"] == PREDICTOR_VERSION and d["device"] == "cpu"
    assert d["operators"]["graph_op"]["forward"]["features"] == list(FEATURES["graph_op"])
    assert 0 <= d["operators"]["lstm"]["mape"] < 1 and "r2" in d["operators"]["lstm"]["backward"]
    back = Predictor.load(path)
    assert back.to_dict() == pred.to_dict()
    stats = pd.DataFrame({"edges": [10, 500, 3000], "active_nodes": [8, 200, 900]})
    cfg = ModelConfig(in_dim=8, hidden_dims=(16, 16), rnn="lstm")
    for a, b in zip(back.predict(stats, cfg), pred.predict(stats, cfg)):
        np.testing.assert_array_equal(a, b)
    assert not list(tmp_path.glob("cost/.*tmp*"))


def _unit_predictor() -> Predictor:
    """Every model's coefficients are 1, 2, 3, ... so hand computations stay readable."""
    models = {}
    for op, feats in FEATURES.items():
        for k, d in enumerate(DIRECTIONS):
            models[(op, d)] = OperatorModel(op, d, feats, np.arange(1, len(feats) + 1, dtype=float) * (k + 1))
    return Predictor("cpu", models)


def test_predict_equals_hand_computation():
    pred = _unit_predictor()
    stats = pd.DataFrame({"edges": [20, 50], "active_nodes": [10, 30]})
    cfg = ModelConfig(in_dim=4, hidden_dims=(8, 6), rnn="gru", rnn_hidden=5)
    l, b = pred.predict(stats, cfg)

    def g(n, e, f, s):  # graph_op: 1, nnz, nnz*F, N*F
        return s * (1 + 2 * e + 3 * e * f + 4 * n * f)

    def u(n, fi, fo, s):  # nn_op: 1, N*Fi, N*Fo, N*Fi*Fo
        return s * (1 + 2 * n * fi + 3 * n * fo + 4 * n * fi * fo)

    def r(n, fi, h, s):  # gru: 1, N*Fi, N*H, N*H*(Fi+H)
        return s * (1 + 2 * n * fi + 3 * n * h + 4 * n * h * (fi + h))

    for i, (n, edges) in enumerate([(10, 20), (30, 50)]):
        e = edges + n  # self-loops of Â
        for s, got in ((1, l[i]), (2, b[i])):
            want = u(n, 4, 8, s) + g(n, e, 8, s) + u(n, 8, 6, s) + g(n, e, 6, s) + r(n, 6, 5, s)
            assert got == pytest.approx(want, rel=1e-12)
    # the store's N for every snapshot instead of the active vertices
    l2, _ = pred.predict(stats, cfg, num_nodes=100)
    assert l2[0] == pytest.approx(u(100, 4, 8, 1) + g(100, 120, 8, 1) + u(100, 8, 6, 1) + g(100, 120, 6, 1) + r(100, 6, 5, 1))
    bd = pred.breakdown(stats, cfg)
    np.testing.assert_allclose(bd.filter(like=".forward").sum(axis=1), l)
    np.testing.assert_allclose(bd.filter(like=".backward").sum(axis=1), b)


def test_predict_aggregate_first_and_evolve():
    pred = _unit_predictor()
    stats = {"edges": np.array([40]), "num_nodes": np.array([10])}
    cfg = ModelConfig(in_dim=4, hidden_dims=(8,), rnn="evolve", order="aggregate_first")
    l, b = pred.predict(stats, cfg)
    n, e = 10, 50
    g = 1 + 2 * e + 3 * e * 4 + 4 * n * 4  # aggregation at the input width
    u = 1 + 2 * n * 4 + 3 * n * 8 + 4 * n * 4 * 8
    ev = 1 + 2 * 8 * 8 + 3 * 4 * 8 + 4 * 4 * 8 * 8  # evolve: 1, Fo², Fi·Fo, Fi·Fo²
    assert l[0] == pytest.approx(g + u + ev)
    assert b[0] == pytest.approx(2 * (u + ev))  # Â·X of the input features has no backward


def test_missing_operator_in_profile_is_a_clear_error():
    df = synthetic_profile(operators=("graph_op", "nn_op", "gru"))
    with pytest.raises(CostError, match=r"lstm/backward, lstm/forward"):
        fit(df, require=ModelConfig(in_dim=4, hidden_dims=(8,), rnn="lstm"), source="results/cost/cpu/profile.parquet")
    pred = fit(df)
    with pytest.raises(CostError, match="no lstm/forward model"):
        pred.predict({"edges": [1], "active_nodes": [1]}, ModelConfig(in_dim=4, hidden_dims=(8,), rnn="lstm"))
    no_bwd = df[~((df.operator == "gru") & (df.direction == "backward"))]
    with pytest.raises(CostError, match="gru/backward"):
        fit(no_bwd, require=["gru"])


def test_bad_predictor_files(tmp_path):
    pred = fit(synthetic_profile())
    d = pred.to_dict()
    p = tmp_path / "predictor.json"
    p.write_text(json.dumps({**d, "version": PREDICTOR_VERSION + 1}))
    with pytest.raises(CostError, match=r"predictor\.json: predictor version 2"):
        Predictor.load(p)
    p.write_text(json.dumps({k: v for k, v in d.items() if k != "version"}))
    with pytest.raises(CostError, match="version None"):
        Predictor.load(p)
    p.write_text("{not json")
    with pytest.raises(CostError, match="not a readable predictor JSON"):
        Predictor.load(p)
    with pytest.raises(CostError, match="not found"):
        Predictor.load(tmp_path / "missing.json")
    bad = json.loads(json.dumps(d))
    bad["operators"]["nn_op"]["forward"]["features"][1] = "N**3"
    p.write_text(json.dumps(bad))
    with pytest.raises(CostError, match="unknown features"):
        Predictor.load(p)


def test_bad_tables_and_configs():
    df = synthetic_profile(operators=("nn_op",))
    with pytest.raises(CostError, match="columns"):
        fit(df.drop(columns=["median_s"]))
    two = pd.concat([df, df.assign(device="cuda")])
    with pytest.raises(CostError, match="say which one"):
        fit(two)
    assert fit(two, device="cuda").device == "cuda"
    with pytest.raises(CostError, match="positive"):
        fit(df.assign(median_s=0.0))
    with pytest.raises(ConfigError):
        ModelConfig(in_dim=4, hidden_dims=(8,), rnn="transformer")
    with pytest.raises(ConfigError):
        ModelConfig(in_dim=4, hidden_dims=(8, 8), order=("update_first",))
    with pytest.raises(CostError, match="edges"):
        _unit_predictor().predict({"active_nodes": [3]}, ModelConfig(in_dim=4))


def test_width_pairs_get_their_own_coefficients():
    """A GEMM 4x slower per multiply-add at 8 output columns (as measured on CPU): the global
    products cannot express it, the width pair's own coefficients can."""
    rows = []
    for fi in (16, 32, 64):
        for fo in (8, 32, 64):
            for n in (1000, 2000, 4000, 8000, 16000):
                t = 2e-6 + 2.5e-11 * n * fi * fo * (4.0 if fo == 8 else 1.0)
                rows.append({"operator": "nn_op", "direction": "forward", "device": "cpu", "N": n, "nnz": 0,
                             "in_width": fi, "out_width": fo, "median_s": t, "min_s": t})
    df = pd.DataFrame(rows)
    m = fit_operator(df, "nn_op", "forward", test_fraction=0.25, seed=0)
    assert set(m.width_coef) == {(a, b) for a in (16, 32, 64) for b in (8, 32, 64)}
    assert m.mape < 1e-6  # every held-out shape shares its width pair with >= 3 fit shapes
    want = 2e-6 + 2.5e-11 * 50_000 * 32 * 8 * 4.0
    assert m.predict(50_000, 0, 32, 8) == pytest.approx(want, rel=1e-6)  # extrapolated in N
    glob = OperatorModel("nn_op", "forward", m.features, m.coef)
    rel = np.abs(glob.predict(df.N, 0, df.in_width, df.out_width) / df.median_s - 1)
    assert rel.max() > 0.2  # the global products alone cannot follow the 8-wide pairs
    # unprofiled widths fall back to the global coefficients; JSON keeps the pairs
    assert m.predict(1000, 0, 48, 48) == pytest.approx(glob.predict(1000, 0, 48, 48))
    back = OperatorModel.from_dict("nn_op", "forward", json.loads(json.dumps(m.to_dict())))
    np.testing.assert_array_equal(back.predict(df.N, 0, df.in_width, df.out_width),
                                  m.predict(df.N, 0, df.in_width, df.out_width))
    bad = m.to_dict()
    bad["width_coef"][0]["coef"] = [1.0]
    with pytest.raises(CostError, match="width_coef"):
        OperatorModel.from_dict("nn_op", "forward", bad)


def test_split_pools_width_pairs_too_small_to_stratify():
    from dynagnn.cost.fit import split_shapes

    # one shape per width pair (EvolveGCN's weight step): pooled, a random quarter held out
    one = pd.DataFrame({"N": 0, "nnz": 0, "in_width": np.arange(16), "out_width": 8})
    mask = split_shapes(one, "evolve", 0.25, seed=0)
    assert mask.sum() == 4
    assert split_shapes(one.iloc[:3], "evolve", 0.25, seed=0).sum() == 0  # fewer than 4: all fit
    assert split_shapes(one, "evolve", 0.0, seed=0).sum() == 0
    # a pair of 5 sizes beside 3 single-shape pairs: the pair holds out 1, the 3 pooled ones none
    mixed = pd.DataFrame({"N": [1, 2, 3, 4, 5, 0, 0, 0], "nnz": 0,
                          "in_width": [32] * 5 + [1, 2, 3], "out_width": 32})
    m = split_shapes(mixed, "nn_op", 0.25, seed=0)
    assert m[:5].sum() == 1 and not m[5:].any()
