"""Bad-input table, wrong results (issue 34, items 9 and 11): data that used to train into NaN or into
misleading values. A store with an empty snapshot inside its span trains for link prediction (the
empty window is scored on its negatives, counted in the log); a NaN the data causes names the data,
never the learning rate."""

from __future__ import annotations

import numpy as np
import pytest

from dynagnn.cli import main
from dynagnn.data import discretize as D
from dynagnn.data.store import open_store, write_store
from dynagnn.data.synthetic import churn

from .common import assert_refused


def empty_store(path, empty=(3,), labels: str | None = None, num_nodes=40, seed=0):
    """A churning graph of 8 snapshots whose snapshots ``empty`` have no edge (kept, as ingest does)."""
    raw = churn(num_nodes, 120, 8, seed=seed)
    raw.directed = False
    for t in empty:
        raw.snapshots.rows[t] = raw.snapshots.rows[t][:0]
        raw.snapshots.cols[t] = raw.snapshots.cols[t][:0]
    if labels == "class":
        raw.node_labels = np.random.default_rng(seed).integers(0, 3, num_nodes).astype(np.int64)
    snaps = D.build_snapshots(raw, by="source", directed=False)
    x = D.make_features("random", raw, snaps, dim=6, seed=seed)
    return write_store(path, raw, snaps, x, spec={"labels": labels, "seed": seed})


@pytest.mark.parametrize("model, strategy", [("tgcn", "sequential"), ("evolvegcn_o", "sequential"),
                                             ("wdgcn", "frames"), ("tmgcn", "snapshot")])
def test_link_prediction_over_an_empty_snapshot(tmp_path, capfd, model, strategy):
    store = empty_store(tmp_path / "s.zarr")  # snapshot 3 is empty: the window ending at 2 predicts it
    capfd.readouterr()
    rc = main(["train", str(store), "--out-dir", str(tmp_path / "out"), "--model", model, "--strategy",
               strategy, "--epochs", "2", "--window", "2", "--threads", "1", "--lr", "1e-5"])
    assert rc in (0, None)
    err = capfd.readouterr().err
    counts = [line.split("dynagnn.train: ", 1)[1] for line in err.splitlines() if "with no edge" in line]
    assert counts == ["1 of 4 training windows predict a snapshot with no edge (ending at 2): "
                      "scored on their negatives only"]
    import pandas as pd
    metrics = pd.read_parquet(tmp_path / "out" / "metrics.parquet")
    assert np.isfinite(metrics["loss"]).all()


def test_an_empty_window_is_scored_on_its_negatives(tmp_path):
    from dynagnn.tasks.snapshot import make_task

    store = open_store(empty_store(tmp_path / "s.zarr"))
    task = make_task("link", store, seed=0, neg_ratio=2)
    assert task.empty_windows(range(6)) == [2]
    inputs = task.loss_inputs(2, epoch=0)
    assert inputs.shape == (3, 2 * 40) and task.loss_inputs_numel(2) == inputs.numel()
    assert (inputs[2] == 0).all() and (inputs[0] != inputs[1]).all()
    assert sorted(inputs[0].tolist()) == sorted(list(range(40)) * 2)  # neg_ratio pairs from each vertex
    capped = make_task("link", store, seed=0, neg_ratio=3, max_edges=5)
    assert capped.loss_inputs(2, 0).shape == (3, 15) and capped.loss_inputs_numel(2) == 45
    import torch
    h = torch.randn(40, 4)
    assert torch.isfinite(task.loss(task.head(4), h, 2, 0))


def test_a_nan_of_the_data_is_not_blamed_on_the_learning_rate(tmp_path, capfd):
    store = empty_store(tmp_path / "s.zarr", labels="class")  # snapshot 3: no vertex to classify
    argv = ["train", str(store), "--out-dir", str(tmp_path / "out"), "--model", "tgcn", "--task", "classify",
            "--strategy", "sequential", "--epochs", "1", "--window", "2", "--threads", "1", "--lr", "1e-5"]
    line = assert_refused(capfd, argv, tmp_path, r"loss is nan .* caused by the data: .*snapshot 3 has no labelled "
                                                 r"vertex with an edge")
    assert "learning rate" not in line


# ---- item 11: silent or misleading values -------------------------------------------------------------

def test_micro_batches_are_capped_at_the_events_a_worker_holds(tmp_path, capfd):
    import pandas as pd
    from tests.testing.stores import event_store

    store = event_store(tmp_path / "ev.zarr")
    capfd.readouterr()
    rc = main(["train", str(store), "--out-dir", str(tmp_path / "out"), "--model", "tgn", "--strategy", "tgnn",
               "--epochs", "1", "--memory-dim", "8", "--neighbors", "2", "--threads", "1",
               "--micro-batches", "100000"])
    assert rc in (0, None)
    err = capfd.readouterr().err
    assert ("micro_batches 100000 is more than the 200 training events a worker holds at most in a batch: "
            "capped at 200") in err
    assert pd.read_parquet(tmp_path / "out" / "metrics.parquet")["micro_batches"].tolist() == [200.0]


def test_a_frame_is_never_longer_than_the_window(tmp_path, capfd):
    import pandas as pd
    from tests.testing.stores import small_store

    store = small_store(tmp_path / "s.zarr")
    capfd.readouterr()
    rc = main(["train", str(store), "--out-dir", str(tmp_path / "out"), "--model", "tgcn", "--strategy", "frames",
               "--window", "4", "--epochs", "1", "--threads", "1", "--frame-size", "1000"])
    assert rc in (0, None)
    assert "frame_size 1000 is longer than the window of 4 snapshots: frames of 4 are used" in capfd.readouterr().err
    assert pd.read_parquet(tmp_path / "out" / "metrics.parquet")["frame_size"].tolist() == [4.0]


@pytest.fixture
def predictor(tmp_path):
    from dynagnn.cost.fit import fit
    from tests.testing.profiles import synthetic_profile

    return fit(synthetic_profile()).save(tmp_path / "predictor.json")


def test_a_predictor_outside_physical_bounds(tmp_path, capfd, predictor):
    import json

    from tests.testing.stores import small_store

    store = small_store(tmp_path / "s.zarr")
    d = json.loads(predictor.read_text())
    d["operators"]["graph_op"]["forward"]["coef"][1] = 1e300
    predictor.write_text(json.dumps(d))
    argv = ["schedule", str(store), "--predictor", str(predictor), "--model", "tgcn", "--workers", "2",
            "--out", str(tmp_path / "plan.json")]
    assert_refused(capfd, argv, tmp_path, r"predictor\.json: operator graph_op/forward: coefficient of 'nnz' is 1e\+300 "
                                          r"s per unit of nnz, outside physical bounds")


def test_a_prediction_outside_physical_bounds():
    from dynagnn.cost.models import ModelConfig
    from dynagnn.cost.predictor import FEATURES, OperatorModel, Predictor
    from dynagnn.errors import CostError

    models = {(op, d): OperatorModel(op, d, feats, np.full(len(feats), 1e-3)) for op, feats in FEATURES.items()
              for d in ("forward", "backward")}
    pred = Predictor("cpu", models, source="p.json")
    cfg = ModelConfig(in_dim=8, hidden_dims=(16,), rnn="gru")
    pred.predict({"edges": np.array([10.0]), "active_nodes": np.array([8.0])}, cfg)  # sane shapes: fine
    with pytest.raises(CostError, match=r"p\.json: operator \w+/forward predicts [\d.e+]+ s for one call on snapshot 1, "
                                        r"outside physical bounds"):
        pred.predict({"edges": np.array([10.0, 1e12]), "active_nodes": np.array([8.0, 1e9])}, cfg)


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """Three finished one-epoch runs: tgcn and wdgcn on one store, tgcn on another."""
    from tests.testing.stores import small_store

    root = tmp_path_factory.mktemp("runs")
    a, b = small_store(root / "a.zarr"), small_store(root / "b.zarr", seed=1)
    out = {}
    for name, store, model in (("tgcn_a", a, "tgcn"), ("wdgcn_a", a, "wdgcn"), ("tgcn_b", b, "tgcn")):
        assert main(["-q", "train", str(store), "--out-dir", str(root / name), "--model", model, "--epochs", "1",
                     "--strategy", "sequential", "--window", "2", "--threads", "1", "--hidden", "4"]) in (0, None)
        out[name] = root / name
    return out


@pytest.mark.parametrize("pair, message", [
    (("tgcn_a", "wdgcn_a"), r"compare: the runs trained different models \(sequential: 'tgcn'; vertex: 'wdgcn'\)"),
    (("tgcn_a", "tgcn_b"), r"compare: the runs trained different dataset \(store checksum\)s \(sequential: '[0-9a-f]+'; "
                           r"vertex: '[0-9a-f]+'\)"),
])
def test_compare_refuses_runs_of_different_datasets_or_models(runs, tmp_path, capfd, pair, message):
    argv = ["compare", f"sequential={runs[pair[0]]}", f"vertex={runs[pair[1]]}", "--out", str(tmp_path / "c.parquet"),
            "--figure", str(tmp_path / "c.png")]
    assert_refused(capfd, argv, tmp_path, message)


@pytest.mark.parametrize("where, columns, message", [
    ("d/garbage.parquet", {"x": [1.0]}, r"not a result table any claim reads: its path under .* \(d/garbage\.parquet\) "
                                         r"is none of \*/stats\.parquet"),
    ("d/stats.parquet", {"x": [1.0]}, r"stats\.parquet: has no column '\w+', which the claim .* reads from a "
                                       r"\*/stats\.parquet table \(columns: x\)"),
])
def test_claims_refuses_a_garbage_table(tmp_path, capfd, where, columns, message):
    import pandas as pd

    path = tmp_path / "results" / where
    path.parent.mkdir(parents=True)
    pd.DataFrame(columns).to_parquet(path)
    argv = ["claims", str(path), "--results", str(tmp_path / "results"), "--out", str(tmp_path / "claims.parquet"),
            "--html", str(tmp_path / "claims.html")]
    assert_refused(capfd, argv, tmp_path, message)


def test_a_nan_of_clean_data_is_a_divergence(tmp_path, capfd, monkeypatch):
    from dynagnn.train.strategies.sequential import Sequential
    from tests.testing.stores import small_store

    store = small_store(tmp_path / "s.zarr")
    monkeypatch.setattr(Sequential, "train_step", lambda self, ends: float("nan"))  # as a diverged optimiser gives
    argv = ["train", str(store), "--out-dir", str(tmp_path / "out"), "--model", "tgcn", "--epochs", "1",
            "--strategy", "sequential", "--window", "2", "--threads", "1", "--lr", "0.5"]
    assert_refused(capfd, argv, tmp_path, r"loss is nan .*; the data there is finite, so training diverged; nothing "
                                          r"was written \(try a lower learning rate than 0\.5\)")
