"""Bad-input table, tracebacks that must be one line (issue 34): exit 2, one line, nothing written.

Rows of the issue's list kept elsewhere: ``DYNAGNN_DIST_TIMEOUT=abc`` (test_processes.py), ``ingest
--out .`` (test_outputs.py), a bad plan operator order (test_plans.py)."""

from __future__ import annotations

import json

import numpy as np
import pytest
import zarr

from dynagnn.data.ingest import ingest
from dynagnn.train import engine
from tests.testing.stores import small_store
from tests.testing.stores import event_store

from .common import assert_refused


@pytest.fixture(scope="module")
def bad_event_store(tmp_path_factory):
    """An event store whose events/src holds an id >= N (written past the checks, as damage would)."""
    store = event_store(tmp_path_factory.mktemp("badev") / "ev.zarr")
    src = zarr.open_array(str(store / "events" / "src"), mode="r+")
    ids = np.asarray(src[:])
    ids[5] = 10**6
    src[:] = ids
    return store


@pytest.mark.parametrize("command", [
    ["train", "{store}", "--out-dir", "{tmp}/out", "--model", "tgn", "--strategy", "events", "--epochs", "1",
     "--memory-dim", "8", "--neighbors", "2", "--threads", "1"],
    ["analyze", "{store}", "--out-dir", "{tmp}/out", "--threads-only"],
])
def test_an_event_id_outside_the_nodes(bad_event_store, tmp_path, capfd, command):
    argv = [a.format(store=bad_event_store, tmp=tmp_path) for a in command]
    assert_refused(capfd, argv, tmp_path, r"array events/src holds node id 1000000, outside \[0, 25\)")


def test_a_memory_limit_during_training(tmp_path, capfd, monkeypatch):
    store = small_store(tmp_path / "s.zarr")

    def train_epoch(self, epoch):
        raise MemoryError()  # what numpy or torch raise at a ulimit -v
    monkeypatch.setattr(engine.Trainer, "train_epoch", train_epoch)
    argv = ["train", str(store), "--out-dir", str(tmp_path / "out"), "--model", "tgcn", "--epochs", "1",
            "--strategy", "sequential", "--window", "2", "--threads", "1"]
    assert_refused(capfd, argv, tmp_path, r"^dynagnn train: error: out of memory \(MemoryError\); nothing was written")


def test_a_stage_core_that_does_not_exist(tmp_path, capfd):
    store = tmp_path / "bgl.zarr"
    ingest({"format": "synthetic", "generator": "bgl",
            "params": {"num_nodes": 300, "num_edges": 1200, "feature_dim": 4, "classes": 3, "seed": 0}}, store)
    argv = ["train", str(store), "--out-dir", str(tmp_path / "out"), "--model", "graphsage", "--strategy", "sampled",
            "--fanouts", "3", "2", "--batch-size", "64", "--epochs", "1", "--samplers", "1", "--threads", "1",
            "--options", json.dumps({"stage_cores": {"sample": [0], "train": [4096]}})]
    assert_refused(capfd, argv, tmp_path, r"stage_cores train: CPU 4096 is not one this process may run on "
                                          r"\(allowed: [\d,-]+\)")


@pytest.mark.parametrize("model, strategy, message", [
    ("graphsage", "sequential", r"'graphsage' is a static GNN trained on sampled blocks \(BGL\), which the sequential "
                                r"strategy does not train; the strategies that train it: sampled, sampled_nocache, "
                                r"sampled_static, sampled_random \(--strategy sampled\)"),
    ("gcn", "vertex", r"'gcn' is a static GNN .* which the vertex strategy does not train; the strategies that train "
                      r"it: sampled"),
    ("tgn", "frames", r"'tgn' is an event model .* which the frames strategy does not train; the strategies that train "
                      r"it: events, tgnn"),
])
def test_a_model_of_another_family_names_the_strategies_that_train_it(tmp_path, capfd, model, strategy, message):
    store = small_store(tmp_path / "s.zarr")
    argv = ["train", str(store), "--out-dir", str(tmp_path / "out"), "--model", model, "--strategy", strategy,
            "--epochs", "1", "--window", "2", "--threads", "1"]
    assert_refused(capfd, argv, tmp_path, message)
