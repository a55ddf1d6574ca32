"""What a run was timed on (issue 27): metrics.parquet records the processes, threads and cores, and
marks a run with more threads than cores as oversubscribed, so that no comparison uses its times."""

from __future__ import annotations

import torch

from dynagnn.distributed.context import DistContext
from dynagnn.distributed.launch import available_cores
from dynagnn.train import engine
from dynagnn.train.engine import TrainConfig, train


def test_a_run_records_its_hardware(link_store, tmp_path):
    metrics, _ = train(link_store, tmp_path / "o", TrainConfig.of(model="wdgcn", hidden=4, window=2, epochs=2,
                                                                  threads=1), progress=False)
    assert (metrics["processes"] == 1).all() and (metrics["threads"] == 1).all()
    assert (metrics["cores"] == available_cores()).all() and not metrics["oversubscribed"].any()


def test_more_threads_than_cores_is_oversubscribed(monkeypatch):
    ctx = DistContext.single("cpu")
    before = torch.get_num_threads()
    try:
        torch.set_num_threads(2)
        monkeypatch.setattr(engine, "available_cores", lambda: 2)
        assert engine.hardware(ctx) == {"processes": 1, "threads": 2, "cores": 2, "oversubscribed": False}
        monkeypatch.setattr(engine, "available_cores", lambda: 1)
        assert engine.hardware(ctx)["oversubscribed"] is True
        monkeypatch.setenv("LOCAL_WORLD_SIZE", "4")   # a stray variable in the shell: not torchrun's
        assert engine.hardware(ctx)["processes"] == 1
        for key, value in (("RANK", "0"), ("WORLD_SIZE", "8"), ("MASTER_ADDR", "127.0.0.1")):
            monkeypatch.setenv(key, value)                # torchrun: 4 of its 8 processes on this machine
        assert engine.hardware(ctx) == {"processes": 4, "threads": 2, "cores": 1, "oversubscribed": True}
        for bad in ("0", "", "four"):                     # not a count: the job's own size (1 here)
            monkeypatch.setenv("LOCAL_WORLD_SIZE", bad)
            assert engine.hardware(ctx)["processes"] == 1
    finally:
        torch.set_num_threads(before)
