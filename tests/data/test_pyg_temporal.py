"""The pyg-temporal-json reader: every layout PyTorch Geometric Temporal's loaders read, on small
fixtures written in each layout, supervised (lags, horizon, transform) as the loaders do; the
expected arrays are computed here the loaders' way (``S[i:i+lags].T``, ``S[i+lags]``), or written
out by hand."""

import json
import math
import statistics
from pathlib import Path

import numpy as np
import pytest

from dynagnn.api.runs import validate
from dynagnn.data.ingest import ingest
from dynagnn.data.sources import pyg_temporal, read_pyg_temporal_json, read_source
from dynagnn.data.store import open_store
from dynagnn.errors import ConfigError, InputError

FIXTURES = Path(__file__).parent / "fixtures"
SHARED = Path(__file__).resolve().parents[3] / "shared" / "data" / "pyg_temporal"


def fixture(name: str) -> dict:
    return json.loads((FIXTURES / name).read_text())


def write(path: Path, data) -> Path:
    path.write_text(data if isinstance(data, str) else json.dumps(data))
    return path


def standardize(series) -> np.ndarray:
    """Per node over all steps, population std + 1e-10, with the statistics module."""
    s = np.asarray(series, dtype=np.float64)
    out = np.empty_like(s)
    for n in range(s.shape[1]):
        column = list(s[:, n])
        out[:, n] = (s[:, n] - statistics.fmean(column)) / (statistics.pstdev(column) + 1e-10)
    return out


def loader_windows(series, lags: int, horizon: int = 1):
    """The loaders' features [S[i:i+lags].T] and targets [S[i+lags]], generalised to a horizon."""
    s = np.asarray(series, dtype=np.float64)
    count = s.shape[0] - lags - horizon + 1
    return (np.stack([s[i:i + lags].T for i in range(count)]),
            np.stack([s[i + lags - 1 + horizon] for i in range(count)]))


def assert_supervised(g, series, lags: int, horizon: int = 1):
    x, y = loader_windows(series, lags, horizon)
    assert g.node_features.dtype == np.float32 and g.node_labels.dtype == np.float32
    np.testing.assert_allclose(g.node_features, x, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(g.node_labels, y, rtol=1e-6, atol=1e-6)
    assert len(g.snapshots) == x.shape[0]
    assert g.snapshots.times.tolist() == list(range(x.shape[0]))


def assert_static_graph(g, edges, weights):
    for t in range(len(g.snapshots)):
        assert g.snapshots.rows[t].tolist() == [u for u, _ in edges]
        assert g.snapshots.cols[t].tolist() == [v for _, v in edges]
        assert g.snapshots.weights[t].dtype == np.float32
        np.testing.assert_allclose(g.snapshots.weights[t], weights, rtol=1e-6)


# --------------------------------------------------------------------------------------------
# One fixture per layout, read with its loader's defaults


def test_chickenpox_by_hand():
    """lags 4, horizon 1, no transform; weights 1; node_ids by id; self-loop kept (it is data)."""
    g = read_pyg_temporal_json(FIXTURES / "pyg_chickenpox.json")
    assert g.num_nodes == 3 and g.node_ids.tolist() == ["BACS", "ZALA", "PEST"]
    assert len(g.snapshots) == 3 and g.time_unit == "week"
    assert g.node_features[0].tolist() == [[1.5, 2.0, 0.25, -1.0], [-0.5, 0.5, 1.0, 2.0],
                                           [0.0, -1.0, 3.0, 0.5]]
    assert g.node_labels.tolist() == [[0.0, -2.0, 1.5], [3.0, 0.0, -0.5], [1.0, 1.0, 1.0]]
    assert_static_graph(g, [(0, 1), (1, 0), (1, 2), (2, 1), (0, 0)], [1.0] * 5)


@pytest.mark.parametrize("lags, horizon", [(4, 1), (2, 1), (1, 1), (2, 3)])
def test_chickenpox_lags_and_horizon(lags, horizon):
    g = read_pyg_temporal_json(FIXTURES / "pyg_chickenpox.json", lags=lags, horizon=horizon)
    assert_supervised(g, fixture("pyg_chickenpox.json")["FX"], lags, horizon)


def test_horizon_by_hand():
    """lags 2, horizon 3: snapshot i sees steps i, i+1 and predicts step i+4."""
    g = read_pyg_temporal_json(FIXTURES / "pyg_chickenpox.json", lags=2, horizon=3)
    assert len(g.snapshots) == 7 - 2 - 3 + 1
    assert g.node_features[1, 0].tolist() == [2.0, 0.25]
    assert g.node_labels[1].tolist() == [3.0, 0.0, -0.5]


def test_pedalme():
    g = read_pyg_temporal_json(FIXTURES / "pyg_pedalme.json")
    data = fixture("pyg_pedalme.json")
    assert_supervised(g, data["X"], 4)
    assert len(g.snapshots) == 2 and g.node_ids.tolist() == [0, 1, 2] and g.time_unit == "week"
    assert_static_graph(g, data["edges"], data["weights"])


def test_windmill_standardized():
    g = read_pyg_temporal_json(FIXTURES / "pyg_windmill.json")
    data = fixture("pyg_windmill.json")
    assert_supervised(g, standardize(data["block"]), 8)
    assert len(g.snapshots) == 3 and g.time_unit == "hour"
    assert_static_graph(g, data["edges"], data["weights"])


def test_wikivital_steps_in_numeric_order():
    g = read_pyg_temporal_json(FIXTURES / "pyg_wikivital.json")
    data = fixture("pyg_wikivital.json")
    series = [data[str(t)]["y"] for t in range(11)]
    assert_supervised(g, standardize(series), 8)
    assert len(g.snapshots) == 3 and g.time_unit == "day"
    assert_static_graph(g, data["edges"], data["weights"])


def test_montevideo_node_link():
    """Nodes keyed by bus_stop in file order; lags of X.y, targets of y, both standardised."""
    g = read_pyg_temporal_json(FIXTURES / "pyg_montevideo_bus.json")
    data = fixture("pyg_montevideo_bus.json")
    assert g.node_ids.tolist() == [5290, 5289, 7000] and g.directed and g.time_unit == "hour"
    assert_static_graph(g, [(1, 0), (0, 2)], [172.2, 280.5])
    lagged = np.array([node["X"]["y"] for node in data["nodes"]]).T
    target = np.array([node["y"] for node in data["nodes"]]).T
    x, _ = loader_windows(standardize(lagged), 4)
    _, y = loader_windows(standardize(target), 4)
    np.testing.assert_allclose(g.node_features, x, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(g.node_labels, y, rtol=1e-6, atol=1e-6)
    assert not np.allclose(standardize(lagged), standardize(target))  # the fixture tells them apart


def test_england_day_graph_with_its_window():
    """lags 8, standardised cases; snapshot i holds day i's mobility graph (as the loader)."""
    g = read_pyg_temporal_json(FIXTURES / "england_covid_small.json")
    data = fixture("england_covid_small.json")
    assert_supervised(g, standardize(data["y"]), 8)
    assert len(g.snapshots) == 3 and g.time_unit == "day" and g.node_ids.tolist() == [0, 1, 2]
    for day in range(3):
        index = data["edge_mapping"]["edge_index"][str(day)]
        assert g.snapshots.rows[day].tolist() == [u for u, _ in index]
        assert g.snapshots.cols[day].tolist() == [v for _, v in index]
        assert g.snapshots.weights[day].tolist() == data["edge_mapping"]["edge_weight"][str(day)]


def test_england_raw_series():
    """lags 0, horizon 0, no transform: the raw case counts as labels, no features."""
    g = read_pyg_temporal_json(FIXTURES / "england_covid_small.json", lags=0, horizon=0,
                               transform="none")
    assert len(g.snapshots) == 11 and g.node_features is None
    assert g.node_labels.tolist() == fixture("england_covid_small.json")["y"]
    assert g.snapshots.rows[10].tolist() == [2] and g.snapshots.weights[10].tolist() == [10.0]


def test_tennis_loader_defaults():
    """Encoded X of step i, label ln(1 + y) of step i + 1; the last step (no next) is dropped."""
    g = read_pyg_temporal_json(FIXTURES / "twitter_tennis_small.json")
    assert g.node_ids.tolist() == ["rolandgarros", "RafaelNadal", "stanwawrinka"]
    assert len(g.snapshots) == 2 and g.snapshots.times.tolist() == [0, 1]
    np.testing.assert_allclose(g.node_labels, [[math.log(11), 0.0, math.log(2)], [0.0] * 3],
                               rtol=1e-6)
    # X[0] = (29, 0.0222), (2, 0), (1, 0.5): ceil(ln 30) = 4, ceil(ln 3) = 2, ceil(ln 2) = 1;
    # floor(10 t) = 0, 0, 5 -> columns 5 + that
    hot = [sorted(np.flatnonzero(row).tolist()) for row in g.node_features[0]]
    assert hot == [[4, 5], [2, 5], [1, 10]]
    assert g.node_features.shape == (2, 3, 16) and g.node_features.sum() == 2 * 3 * 2
    assert g.snapshots.rows[0].tolist() == [2, 1] and g.snapshots.weights[1].tolist() == [3.0]


def test_tennis_raw():
    g = read_pyg_temporal_json(FIXTURES / "twitter_tennis_small.json", feature_mode="raw",
                               horizon=0, transform="none")
    assert len(g.snapshots) == 3
    assert g.node_labels.tolist() == [[181, 7, 4], [10, 0, 1], [0, 0, 0]]
    np.testing.assert_array_equal(g.node_features[0], np.float32([[29, 0.022167487684729065],
                                                                  [2, 0], [1, 0.5]]))


def test_tennis_with_lags():
    """Lags of ln(1 + y) after the file's (raw) X."""
    g = read_pyg_temporal_json(FIXTURES / "twitter_tennis_small.json", feature_mode="raw", lags=1)
    assert g.node_features.shape == (2, 3, 3)
    np.testing.assert_allclose(g.node_features[1, :, 2], np.log1p([10, 0, 1]), rtol=1e-6)
    np.testing.assert_allclose(g.node_labels[1], [0, 0, 0])


def test_mtm_frames():
    """xyz per joint and frame; the frame's class on every joint; the hand graph with weights 1."""
    g = read_pyg_temporal_json(FIXTURES / "pyg_mtm.json")
    assert g.num_nodes == 3 and len(g.snapshots) == 4
    assert g.node_features.dtype == np.float32 and g.node_features.shape == (4, 3, 3)
    assert g.node_features[0].tolist() == [[0.5, 0.25, -0.125], [0.25, 0.25, 0.0], [0, 0, 0]]
    assert g.node_features[3, 2].tolist() == [0.25, 0.25, 1.0]
    assert g.node_labels.dtype == np.int64
    assert g.node_labels.tolist() == [[2, 2, 2], [2, 2, 2], [0, 0, 0], [4, 4, 4]]
    assert_static_graph(g, [(0, 1), (1, 2)], [1.0, 1.0])


def test_gzip_and_registry(tmp_path):
    import gzip
    packed = tmp_path / "chickenpox.json.gz"
    with gzip.open(packed, "wt") as f:
        f.write((FIXTURES / "pyg_chickenpox.json").read_text())
    g = read_source("pyg-temporal-json", packed, lags=2)
    assert g.name == "chickenpox" and g.node_features.shape == (5, 3, 2)


# --------------------------------------------------------------------------------------------
# Through ingest: the options in a dataset entry reach the store


def test_ingest_writes_lagged_store(tmp_path):
    entry = {"format": "pyg-temporal-json", "path": str(FIXTURES / "pyg_chickenpox.json"),
             "options": {"lags": 2, "horizon": 2}}
    spec = validate({"datasets": {"pox": entry}})["datasets"]["pox"]
    store = open_store(ingest(spec, tmp_path / "pox.zarr", name="pox"))
    x, y = loader_windows(fixture("pyg_chickenpox.json")["FX"], 2, 2)
    assert store.num_snapshots == 4
    np.testing.assert_allclose(np.asarray(store.features()), x, rtol=1e-6)
    np.testing.assert_allclose(np.asarray(store.labels()), y, rtol=1e-6)


# --------------------------------------------------------------------------------------------
# Refusals


def test_unknown_layout_names_keys_and_layouts(tmp_path):
    """A chickenpox-like file without FX is not taken for another layout (the old message named
    Tennis's 'time_periods')."""
    bad = write(tmp_path / "pox.json", {"edges": [[0, 1]], "node_ids": {"a": 0, "b": 1}})
    with pytest.raises(InputError) as info:
        read_pyg_temporal_json(bad)
    message = str(info.value)
    assert "pox.json" in message and "found the keys 'edges', 'node_ids'" in message
    for layout in ("england_covid ('edge_mapping')", "chickenpox ('edges', 'FX')",
                   "montevideo_bus ('nodes', 'links')", "mtm ('edges', 'LABEL')",
                   "twitter_tennis ('node_ids', 'time_periods')", "windmill_output",
                   "pedalme", "wikivital_mathematics"):
        assert layout in message
    assert "missing key" not in message
    many = write(tmp_path / "many.json", {str(i): i for i in range(12)})
    with pytest.raises(InputError, match="'0', '1', '10', '11', '2', .* and 2 more"):
        read_pyg_temporal_json(many)
    listed = write(tmp_path / "list.json", "[1, 2]")
    with pytest.raises(InputError, match="expected a JSON object, got a list"):
        read_pyg_temporal_json(listed)


@pytest.mark.parametrize("options, message", [
    ({"lags": -1}, "option lags: expected an integer >= 0, got -1"),
    ({"lags": 2.5}, "option lags: expected an integer >= 0, got 2.5"),
    ({"horizon": True}, "option horizon: expected an integer >= 0, got True"),
    ({"transform": "standardise"}, "option transform: expected one of none, log1p, standardize, "
                                   "got 'standardise' \\(did you mean 'standardize'\\?\\)"),
    ({"feature_mode": "diagonal"}, "option feature_mode: expected one of encoded, raw"),
    ({"feature_mode": "raw"}, "feature_mode applies to the twitter_tennis layout; this file is "
                              "chickenpox"),
    ({"lags": 3, "horizon": 0}, "horizon must be >= 1 when lags >= 1"),
])
def test_bad_options(options, message):
    with pytest.raises(ConfigError, match=message):
        read_pyg_temporal_json(FIXTURES / "pyg_chickenpox.json", **options)


def test_options_are_checked_before_reading(tmp_path):
    with pytest.raises(ConfigError, match="option lags"):
        read_pyg_temporal_json(tmp_path / "absent.json", lags="8")


def test_mtm_takes_no_options():
    with pytest.raises(ConfigError, match="options lags do not apply to the mtm layout"):
        read_pyg_temporal_json(FIXTURES / "pyg_mtm.json", lags=4)


def test_too_few_steps():
    with pytest.raises(InputError, match="7 time steps leave no snapshot for lags 6 and horizon 2 "
                                         "\\(they need at least 8\\)"):
        read_pyg_temporal_json(FIXTURES / "pyg_chickenpox.json", lags=6, horizon=2)


def _edited(tmp_path: Path, name: str, edit) -> Path:
    data = fixture(name)
    edit(data)
    return write(tmp_path / name, json.dumps(data))


@pytest.mark.parametrize("name, edit, message", [
    ("pyg_chickenpox.json", lambda d: d["FX"][2].__setitem__(1, float("nan")),
     r"FX\[2\]\[1\]: nan is not a finite number"),
    ("pyg_windmill.json", lambda d: d["weights"].__setitem__(3, float("inf")),
     r"weights\[3\]: inf is not a finite number"),
    ("pyg_pedalme.json", lambda d: d["weights"].pop(), "weights: expected 4 weights"),
    ("pyg_pedalme.json", lambda d: d["edges"].append([0, 3]), "edges: node id 3 outside 0..2"),
    ("pyg_chickenpox.json", lambda d: d["FX"][3].pop(), "FX: expected a \\[T\\]\\[N\\] list"),
    ("pyg_chickenpox.json", lambda d: d["node_ids"].__setitem__("ZALA", 5),
     "node_ids: expected a {name: id} mapping onto the ids 0..2"),
    ("pyg_wikivital.json", lambda d: d.pop("7"), "missing key '7'"),
    ("pyg_wikivital.json", lambda d: d["4"]["y"].pop(), "expected as many values at every step"),
    ("pyg_montevideo_bus.json", lambda d: d["links"][1].__setitem__("target", 1),
     r"links\[1\].target: no node 1"),
    ("pyg_montevideo_bus.json", lambda d: d["nodes"][2]["X"].pop("y"),
     r"missing key 'nodes\[2\].X.y'"),
    ("pyg_montevideo_bus.json", lambda d: d["nodes"][0]["y"].pop(), "series of one length"),
    ("pyg_montevideo_bus.json", lambda d: d["nodes"][1].__setitem__("bus_stop", 5290),
     r"nodes\[1\]: node id 5290 is not a new"),
    ("pyg_mtm.json", lambda d: d["1"].__setitem__("2", "(0.5, 0.5)"),
     r"1\['2'\]: expected '\(x, y, z\)' of three finite numbers, got '\(0.5, 0.5\)'"),
    ("pyg_mtm.json", lambda d: d["2"].pop("3"), "2: expected a {frame: '\\(x, y, z\\)'} mapping "
                                               "of 4 frames"),
    ("pyg_mtm.json", lambda d: d["LABEL"].__setitem__("1", -1), "LABEL: expected a"),
    ("twitter_tennis_small.json", lambda d: d["0"]["X"][1].__setitem__(1, 1.5),
     r"0.X\[1\]: transitivity 1.5 is outside what the loader one-hot encodes"),
])
def test_bad_values(tmp_path, name, edit, message):
    path = _edited(tmp_path, name, edit)
    with pytest.raises(InputError, match=message) as info:
        read_pyg_temporal_json(path)
    assert str(path) in str(info.value)


def test_log1p():
    g = read_pyg_temporal_json(FIXTURES / "pyg_pedalme.json", transform="log1p", lags=2)
    assert_supervised(g, [[math.log(1 + v) for v in row] for row in fixture("pyg_pedalme.json")["X"]],
                      2)


def test_log1p_below_minus_one():
    with pytest.raises(InputError, match="log1p needs values above -1: the series has -1.0 at "
                                         "step 1, node 2"):
        read_pyg_temporal_json(FIXTURES / "pyg_chickenpox.json", transform="log1p")


def test_repeated_static_graph_limit(monkeypatch):
    monkeypatch.setattr(pyg_temporal, "MAX_REPEATED_EDGES", 14)
    with pytest.raises(InputError, match="5 edges in each of 3 snapshots make 15 edges"):
        read_pyg_temporal_json(FIXTURES / "pyg_chickenpox.json")


# --------------------------------------------------------------------------------------------
# Real files, where present


def _real_json(name: str) -> Path:
    path = SHARED / name
    if not path.is_file():
        pytest.skip(f"{path} is absent")
    return path


def test_real_england_covid_as_the_loader():
    path = _real_json("england_covid.json")
    g = read_pyg_temporal_json(path)
    data = json.loads(path.read_text())
    assert g.num_nodes == 129 and len(g.snapshots) == 61 - 8
    assert_supervised(g, standardize(data["y"]), 8)
    assert all(len(r) == len(w) > 0 for r, w in zip(g.snapshots.rows, g.snapshots.weights))


def test_real_twitter_tennis_as_the_loader():
    path = _real_json("twitter_tennis_rg17.json")
    g = read_pyg_temporal_json(path)
    data = json.loads(path.read_text())
    assert g.num_nodes == 1000 and len(g.snapshots) == 119 and g.node_ids[0] == "rolandgarros"
    assert g.node_features.shape == (119, 1000, 16)
    np.testing.assert_allclose(g.node_labels[41], np.log1p(data["42"]["y"]), rtol=1e-6)


# --------------------------------------------------------------------------------------------
# The message direction (issue 34, item 12): the operator built from the store is PyG's GCNConv
# normalisation of the file's edge_index as it is (source, target), not of the reversed edges.


def gcn_by_hand(edge_index, weights, n: int) -> np.ndarray:
    """D^-1/2 (A + I) D^-1/2 as PyG's gcn_norm (flow source_to_target) builds it, written out:
    M[v, u] += w for each edge u -> v; 1 on the diagonal of a node without a self-loop of its own;
    d_v = Σ_u M[v, u] (in-degree, the scatter at edge_index[1]); Â[v, u] = M[v, u] / sqrt(d_v d_u)."""
    m = np.zeros((n, n))
    for (u, v), w in zip(edge_index, weights):
        m[v, u] += w
    looped = np.zeros(n, bool)
    for u, v in edge_index:
        looped[u] |= u == v
    m[~looped, ~looped] += 1.0
    d = m.sum(1)
    return m / np.sqrt(np.outer(d, d))


def _operator_against_pyg(tmp_path, path: Path, steps, day_graph):
    """Ingest ``path``; for each snapshot t in ``steps`` compare dynagnn's Â_t with the hand
    computation and, where torch_geometric is installed, with gcn_norm on the same edges."""
    import torch

    from dynagnn.graph.csr import normalize

    spec = validate({"datasets": {"d": {"format": "pyg-temporal-json", "path": str(path)}}})["datasets"]["d"]
    store = open_store(ingest(spec, tmp_path / "d.zarr", name="d"))
    n = store.num_nodes
    try:
        from torch_geometric.nn.conv.gcn_conv import gcn_norm
    except ImportError:
        gcn_norm = None
    directed = False
    for t in steps:
        edge_index, weights = day_graph(t)
        ours = normalize(*store.edges(t), n).dense().double().numpy()
        np.testing.assert_allclose(ours, gcn_by_hand(edge_index, weights, n), rtol=1e-5, atol=1e-7)
        if gcn_norm is not None:
            ei, val = gcn_norm(torch.as_tensor(edge_index, dtype=torch.int64).reshape(-1, 2).t(),
                               torch.as_tensor(weights, dtype=torch.float32), n, add_self_loops=True)
            theirs = np.zeros((n, n))
            np.add.at(theirs, (ei[1].numpy(), ei[0].numpy()), val.double().numpy())
            np.testing.assert_allclose(ours, theirs, rtol=1e-5, atol=1e-7)
        directed = directed or not np.allclose(ours, ours.T)
    return directed


def test_england_fixture_operator_is_pyg_gcn_norm(tmp_path):
    data = fixture("england_covid_small.json")
    mapping = data["edge_mapping"]
    _operator_against_pyg(tmp_path, FIXTURES / "england_covid_small.json", range(3),
                          lambda t: (mapping["edge_index"][str(t)], mapping["edge_weight"][str(t)]))


def test_real_england_covid_operator_is_pyg_gcn_norm(tmp_path):
    path = _real_json("england_covid.json")
    mapping = json.loads(path.read_text())["edge_mapping"]
    assert _operator_against_pyg(tmp_path, path, (0, 30, 52),
                                 lambda t: (mapping["edge_index"][str(t)], mapping["edge_weight"][str(t)]))


def test_real_twitter_tennis_operator_is_pyg_gcn_norm(tmp_path):
    path = _real_json("twitter_tennis_rg17.json")
    data = json.loads(path.read_text())
    assert _operator_against_pyg(tmp_path, path, (0, 60, 118),
                                 lambda t: (data[str(t)]["edges"], data[str(t)]["weights"]))
