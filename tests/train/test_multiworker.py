"""Training on several worker processes end to end: outputs from rank 0, bad input as one line, and
a worker killed in mid-epoch stopping the job with nothing written."""

import json
import os
import signal

import pandas as pd
import pytest

from dynagnn.cli import main
from dynagnn.distributed import DistError
from dynagnn.distributed.launch import launch
from dynagnn.train import engine
from dynagnn.train.engine import TrainConfig, train

FAST = dict(hidden=5, window=3, epochs=2, patience=10)


def test_two_workers_write_what_one_writes(link_store, tmp_path):
    one, _ = train(link_store, tmp_path / "one", TrainConfig.of(model="wdgcn", **FAST), progress=False)
    two, timings = train(link_store, tmp_path / "two",
                         TrainConfig.of(model="wdgcn", strategy="snapshot", workers=2, **FAST), progress=False)
    pd.testing.assert_series_equal(two["loss"], one["loss"], rtol=1e-5)
    assert sorted(timings["worker"].unique()) == [0, 1]
    assert {"communication", "sync_wait"} <= set(timings["phase"])
    comm = pd.read_parquet(tmp_path / "two" / "comm.parquet")
    assert set(comm["worker"]) == {0, 1} and set(comm["stage"]) >= {"train", "eval"}
    train_rows = comm[(comm["stage"] == "train") & (comm["collective"] == "redistribute1")]
    assert sorted(train_rows["epoch"].unique()) == [0, 1] and (train_rows["bytes"] > 0).all()


@pytest.mark.parametrize("args,message", [
    (["--workers", "0"], "--workers: 0 is less than the minimum of 1"),
    (["--strategy", "snapshot", "--model", "tgcn", "--workers", "2"],
     "its GCN runs inside the recurrence, with no seam between the per-snapshot GCN and the per-vertex RNN to redistribute at; strategies that can: sequential, vertex, group"),
    (["--strategy", "snapshot", "--model", "wdgcn", "--workers", "4", "--window", "3"],
     "a step holds batch_windows × window = 3 snapshots, fewer than the 4 workers"),
    (["--strategy", "vertex", "--model", "wdgcn", "--workers", "41"], "41 workers for 40 vertices"),
    (["--strategy", "sequential", "--workers", "2"], "use --strategy vertex or snapshot"),
    (["--strategy", "vertex", "--model", "evolvegcn_h", "--workers", "2"],
     "the vertex strategy cannot train model evolvegcn_h: its step mixes vertices outside adj.spmm"),
])
def test_bad_input_is_one_line(link_store, tmp_path, capsys, args, message):
    rc = main(["-q", "train", str(link_store), "--out-dir", str(tmp_path / "o"), "--epochs", "1", *args])
    err = capsys.readouterr().err.strip()
    assert rc == 2 and message in err and len(err.splitlines()) == 1
    assert not (tmp_path / "o").exists()


def test_unreachable_torchrun_master(link_store, tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("RANK", "1")
    monkeypatch.setenv("WORLD_SIZE", "2")
    monkeypatch.setenv("LOCAL_RANK", "1")
    monkeypatch.setenv("TORCHELASTIC_RUN_ID", "test")  # what torchrun sets beside the group's variables
    monkeypatch.setenv("MASTER_ADDR", "no-such-host.invalid")
    monkeypatch.setenv("MASTER_PORT", "29511")
    rc = main(["-q", "train", str(link_store), "--out-dir", str(tmp_path / "o"), "--strategy", "vertex"])
    assert rc == 2 and "cannot resolve the torchrun master address 'no-such-host.invalid'" in capsys.readouterr().err
    monkeypatch.setenv("MASTER_ADDR", "127.0.0.1")
    monkeypatch.setenv("DYNAGNN_CONNECT_TIMEOUT", "1")
    rc = main(["-q", "train", str(link_store), "--out-dir", str(tmp_path / "o"), "--strategy", "vertex"])
    assert rc == 2 and "cannot reach the torchrun master at 127.0.0.1:29511" in capsys.readouterr().err
    assert not (tmp_path / "o").exists()


class _Dies(engine.Trainer):
    def train_epoch(self, epoch):
        if epoch == 1 and self.ctx.rank == 1:
            os.kill(os.getpid(), signal.SIGKILL)
        return super().train_epoch(epoch)


def _train_and_die(ctx, store, out, cfg):
    engine.Trainer = _Dies  # this process only: rank 1 dies at the start of its second epoch
    return engine._train_here(ctx, store, out, cfg, None, False)


@pytest.mark.parametrize("strategy,workers,procs,kw", [
    ("vertex", 2, 1, {}),
    # BLAD's pair over a carried sequence: p1 waits in the channel for the end state p2 never sends
    ("group", 1, 2, {"sequence": "carry", "tbptt": 2}),
])
def test_a_worker_killed_mid_training_stops_the_job_and_writes_nothing(link_store, tmp_path, strategy, workers,
                                                                       procs, kw):
    out = tmp_path / "o"
    cfg = TrainConfig.of(model="wdgcn", strategy=strategy, workers=workers, **{**FAST, "epochs": 3, **kw})
    with pytest.raises(DistError, match="worker 1 was killed by SIGKILL"):
        launch(_train_and_die, workers, link_store, out, cfg, procs_per_worker=procs, threads=1, timeout=60)
    assert not out.exists() or not any(out.iterdir())
