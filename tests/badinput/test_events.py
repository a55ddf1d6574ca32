"""Bad input of the event models: one line each, nothing written (issue 14)."""

import numpy as np
import pytest
import zarr

from dynagnn.data import discretize as D
from dynagnn.data.store import write_store
from dynagnn.data.types import RawGraph
from tests.badinput.common import assert_refused
from tests.testing.stores import random_events
from tests.testing.stores import small_store
from tests.testing.stores import event_store

TGN = ["--model", "tgn", "--strategy", "events", "--epochs", "1", "--memory-dim", "8", "--neighbors", "2",
       "--threads", "1"]


def train(store, out, *flags):
    return ["train", str(store), "--out-dir", str(out), *TGN, *flags]


def test_a_store_without_events(tmp_path, capfd):
    store = small_store(tmp_path / "snap.zarr")
    assert_refused(capfd, train(store, tmp_path / "out"), tmp_path, r"no event stream")


def test_events_out_of_time_order(tmp_path, capfd):
    store = event_store(tmp_path / "ev.zarr")
    t = zarr.open_array(str(store / "events" / "t"), mode="r+")
    vals = np.asarray(t[:])
    vals[10], vals[11] = vals[11] + 5, vals[10]
    t[:] = vals
    # the store's checksums now disagree: reading refuses it, or the order check does; never trained on
    assert_refused(capfd, train(store, tmp_path / "out"), tmp_path, r"events/t")


@pytest.mark.parametrize("batch, message", [("0", r"--event-batch: 0 is less than the minimum of 1"),
                                             ("100000", r"event_batch 100000 is larger than the \d+ training events")])
def test_bad_batch_size(tmp_path, capfd, batch, message):
    store = event_store(tmp_path / "ev.zarr")
    assert_refused(capfd, train(store, tmp_path / "out", "--event-batch", batch), tmp_path, message)


def test_snapshot_checkpoint_into_an_event_model(tmp_path, capfd):
    from dynagnn.cli import main

    store = event_store(tmp_path / "ev.zarr")
    assert main(["-q", "train", str(store), "--out-dir", str(tmp_path / "snap"), "--model", "tgcn", "--epochs", "1",
                 "--window", "2", "--threads", "1", "--strategy", "sequential"]) in (0, None)
    assert_refused(capfd, train(store, tmp_path / "out", "--resume", str(tmp_path / "snap" / "model.pt")), tmp_path,
                   r"checkpoint of model 'tgcn'.*this run is 'tgn'")


def test_a_snapshot_model_with_the_events_strategy(tmp_path, capfd):
    store = event_store(tmp_path / "ev.zarr")
    argv = ["train", str(store), "--out-dir", str(tmp_path / "out"), "--model", "tgcn", "--strategy", "events"]
    assert_refused(capfd, argv, tmp_path, r"events strategy trains the event models")


def test_an_event_model_with_a_snapshot_strategy(tmp_path, capfd):
    store = event_store(tmp_path / "ev.zarr")
    argv = ["train", str(store), "--out-dir", str(tmp_path / "out"), "--model", "jodie", "--strategy",
            "sequential"]
    assert_refused(capfd, argv, tmp_path, r"'jodie' is an event model.*--strategy events")
