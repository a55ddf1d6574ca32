"""The training engine: deterministic, equal under its optimisations, safe on failure."""

import json

import pandas as pd
import pyarrow.parquet as pq
import pytest
import torch

from dynagnn.cli import main
from dynagnn.data.store import open_store
from dynagnn.errors import ConfigError
from dynagnn.train.engine import TrainConfig, Trainer, TrainingError, train
from tests.testing.fresh import fresh_python

FAST = dict(hidden=6, window=3, epochs=3, patience=10)


def run(store, out, **kw):
    return train(store, out, TrainConfig.of(**{**FAST, **kw}), progress=False)


def test_outputs_and_determinism(link_store, tmp_path):
    m1, t1 = run(link_store, tmp_path / "a")
    m2, _ = run(link_store, tmp_path / "b")
    pd.testing.assert_frame_equal(m1.drop(columns="train_seconds"), m2.drop(columns="train_seconds"))
    assert list(m1["epoch"]) == [0, 1, 2] and m1["best"].sum() == 1
    assert {"loss", "val_auc", "val_ap", "val_mrr", "test_auc"} <= set(m1.columns)
    assert {"graph_op", "nn_op", "rnn", "backward", "optimizer", "load"} <= set(t1["phase"])
    store = open_store(link_store)
    meta = pq.read_schema(tmp_path / "a" / "metrics.parquet").metadata
    assert meta[b"dynagnn.store_checksum"].decode() == store.checksum
    ck = torch.load(tmp_path / "a" / "model.pt", weights_only=True)
    assert ck["model"] == "tgcn" and ck["epoch"] == int(m1.loc[m1["best"], "epoch"].iloc[0])


def test_best_epoch_is_what_is_saved(link_store, tmp_path):
    """The saved weights reproduce the best epoch's validation metric."""
    metrics, _ = run(link_store, tmp_path / "a", model="wdgcn")
    tr = Trainer(link_store, TrainConfig.of(**{**FAST, "model": "wdgcn"}), progress=False)
    tr.load_checkpoint(tmp_path / "a" / "model.pt")
    best = metrics[metrics["best"]].iloc[0]
    assert tr.evaluate(tr.split.val)["auc"] == pytest.approx(best["val_auc"], abs=1e-6)


@pytest.mark.parametrize("options", [{"transfer": "diff"}, {"checkpoint_blocks": 3}])
def test_optimisations_train_the_same_model(link_store, tmp_path, options):
    """Graph-difference transfer and checkpointing change how, not what: same losses and metrics."""
    base, _ = run(link_store, tmp_path / "a", model="evolvegcn_o")
    opt, _ = run(link_store, tmp_path / "b", model="evolvegcn_o", **options)
    cols = ["loss", "val_auc", "test_auc", "val_mrr"]
    pd.testing.assert_frame_equal(base[cols], opt[cols], rtol=1e-4, atol=1e-5)


def test_classification_and_regression(class_store, regress_store, tmp_path):
    m, _ = run(class_store, tmp_path / "c")
    assert {"val_accuracy", "val_macro_f1"} <= set(m.columns)
    m, _ = run(regress_store, tmp_path / "r", model="gcrn")
    assert {"val_mse", "val_mae"} <= set(m.columns)


def test_early_stopping(link_store, tmp_path):
    m, _ = run(link_store, tmp_path / "a", epochs=30, patience=1, lr=0.0)
    assert len(m) == 2  # lr 0: epoch 1 is no better than epoch 0


def test_nan_loss_leaves_earlier_outputs(link_store, tmp_path):
    out = tmp_path / "a"
    run(link_store, out)
    before = {p.name: p.read_bytes() for p in out.iterdir()}
    with pytest.raises(TrainingError, match="loss is nan"):
        run(link_store, out, lr=1e30)
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before


def test_checkpoint_of_another_model_is_refused(link_store, tmp_path):
    run(link_store, tmp_path / "a", model="tgcn")
    tr = Trainer(link_store, TrainConfig.of(**{**FAST, "model": "gcrn"}), progress=False)
    with pytest.raises(TrainingError, match="checkpoint of model 'tgcn'"):
        tr.load_checkpoint(tmp_path / "a" / "model.pt")
    tr = Trainer(link_store, TrainConfig.of(**{**FAST, "hidden": 7}), progress=False)
    with pytest.raises(TrainingError, match="another model, task, width or dataset"):
        tr.load_checkpoint(tmp_path / "a" / "model.pt")


def test_a_cli_run_loads_neither_the_compiler_stack_nor_matplotlib(link_store, tmp_path):
    """A run's start (issue 48): torch._dynamo (1.6-2.0 s of a process's start here, which torch's
    Adam imports) and matplotlib (1 s, and 0.9 s drawing) load only where asked for: neither a
    named strategy's run nor the chooser's loads them, and --figure draws."""
    runs = [["--strategy", "sequential", "--out-dir", str(tmp_path / "named")],
            ["--out-dir", str(tmp_path / "auto"), "--cores", "1"]]
    code = ("import sys\nfrom dynagnn.cli import main\n"
            f"for extra in {runs!r}:\n"
            f"    assert main(['-q', 'train', {str(link_store)!r}, '--epochs', '1', '--hidden', '4', *extra]) == 0\n"
            "print('torch._dynamo' in sys.modules, 'matplotlib' in sys.modules)")
    assert fresh_python(code).split() == ["False", "False"]
    assert (tmp_path / "auto" / "auto.json").exists() and not (tmp_path / "named" / "training.png").exists()


def test_bad_options(link_store):
    with pytest.raises(ConfigError, match=r"train: unknown key 'windw' \(did you mean 'window'\?\)"):
        TrainConfig.from_dict({"windw": 3})
    with pytest.raises(ConfigError, match="longer than"):
        Trainer(link_store, TrainConfig.of(window=20), progress=False)
    with pytest.raises(ConfigError, match="did you mean 'tgcn'"):
        Trainer(link_store, TrainConfig.of(model="tgnc"), progress=False)


def test_cli_train(link_store, tmp_path, capsys):
    out = tmp_path / "cli"
    rc = main(["-q", "train", str(link_store), "--out-dir", str(out), "--model", "gcrn",
               "--options", json.dumps({**FAST, "model": "tgcn"}), "--epochs", "2", "--figure"])
    assert rc == 0
    m = pd.read_parquet(out / "metrics.parquet")
    assert len(m) == 2 and (out / "training.png").exists() and (out / "training.pdf").exists()
    assert torch.load(out / "model.pt", weights_only=True)["model"] == "gcrn"  # the flag wins
    rc = main(["-q", "train", str(link_store), "--out-dir", str(out), "--model", "gcrn", "--overwrite",
               "--options", json.dumps({**FAST, "model": "tgcn"}), "--epochs", "1"])
    assert rc == 0 and len(pd.read_parquet(out / "metrics.parquet")) == 1
    assert not (out / "training.png").exists() and not (out / "training.pdf").exists()   # not this run's
    rc = main(["-q", "train", str(link_store), "--out-dir", str(out), "--task", "classify"])
    assert rc == 2 and "needs labels" in capsys.readouterr().err


def test_non_finite_validation_scores_never_win(link_store, monkeypatch):
    def fit_with(val_scores):
        tr = Trainer(link_store, TrainConfig.of(**{**FAST, "epochs": len(val_scores), "patience": 10}), progress=False)
        real, scores = tr.evaluate, iter(val_scores)
        monkeypatch.setattr(tr, "evaluate", lambda steps: {**real(steps), **(
            {tr.task.primary: next(scores)} if steps is tr.split.val else {})})
        return tr.fit()[0]

    nan = float("nan")
    metrics = fit_with([nan, 0.6, nan, 0.5])
    assert metrics.loc[metrics["best"], "epoch"].tolist() == [1]
    with pytest.raises(TrainingError, match="no epoch gave a finite validation"):
        fit_with([nan, nan])
