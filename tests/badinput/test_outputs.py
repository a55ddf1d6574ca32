"""Bad-input table, outputs in odd places (issue 34, "Data loss", items 1-4 and item 5's "a worker must
never publish outputs unless the job as a whole succeeded").

1. An output replaces only its own kind (dynagnn.atomic): ``ingest --out`` a folder that is not a store
   (it deleted the folder's contents), ``--out .`` (a traceback), a Zarr group of another program.
2. ``train`` into an out-dir holding a finished run of another model, strategy, store or config, or a
   folder that is not a run's: refused before training, naming the run and ``--overwrite``.
3. A disk that fills while the outputs are written: "no space left on device" naming the path, the
   previous outputs intact, the trained run kept in ``$DYNAGNN_RESCUE_DIR``.
4. The temporaries a killed writer left (``.X.tmp-PID-*``) are removed by the next run of the stage.
5. A worker that fails or dies after its own training, or whose launcher is gone: nothing is published.
"""

from __future__ import annotations

import errno
import json
import os
import pathlib
import shutil
import signal
import time
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from dynagnn import atomic
from dynagnn.cli import main
from dynagnn.distributed.launch import launch
from dynagnn.errors import DynagnnError
from dynagnn.train import engine
from dynagnn.train.engine import TrainConfig, TrainingError, load_checkpoint_file
from tests.testing.stores import small_store

from .common import assert_refused, dead_pid, snapshot

SPEC = json.dumps({"format": "synthetic", "generator": "blad", "features": {"kind": "degree", "dim": 4},
                   "params": {"num_nodes": 30, "num_edges": 100, "num_snapshots": 6, "seed": 1}})
# sequential named (auto, the default, times candidates first and chooses the threads itself); a later
# --strategy in a test's argv wins
FAST = ["--epochs", "1", "--window", "2", "--hidden", "4", "--threads", "1", "--strategy", "sequential"]


@pytest.fixture(scope="module")
def store(tmp_path_factory) -> Path:
    return small_store(tmp_path_factory.mktemp("store") / "store.zarr")


@pytest.fixture(scope="module")
def finished(tmp_path_factory, store) -> Path:
    """The out-dir of a finished tgcn/sequential run (FAST), to copy."""
    out = tmp_path_factory.mktemp("finished") / "run"
    assert main(["-q", "train", str(store), "--out-dir", str(out), "--model", "tgcn", *FAST]) == 0
    return out


@pytest.fixture
def run(finished, tmp_path) -> Path:
    """A copy of the finished run in this test's folder: tmp_path/w/run."""
    return Path(shutil.copytree(finished, tmp_path / "w" / "run"))


# ------------------------------------------------------------------ 1. an output replaces only its own kind

def _models_folder(tmp: Path) -> Path:
    mine = tmp / "results" / "mygraph"
    (mine / "tgcn" / "sequential-1").mkdir(parents=True)
    (mine / "tgcn" / "sequential-1" / "model.pt").write_bytes(b"weights of a week")
    (mine / "notes.txt").write_text("keep me")
    return mine


def _foreign_zarr(tmp: Path) -> Path:
    other = tmp / "other.zarr"
    (other / "a").mkdir(parents=True)
    (other / "zarr.json").write_text(json.dumps({"zarr_format": 3, "node_type": "group", "attributes": {}}))
    (other / "a" / "c.0").write_bytes(b"their data")
    return other


INGEST_OUTPUTS = {
    "a folder of trained models": (_models_folder, r"mygraph: a folder holding 2 entries \(notes\.txt, tgcn\) is "
                                                   r"there, not a dynagnn store .*such as .*mygraph/store\.zarr"),
    "a Zarr group of another program": (_foreign_zarr, r"other\.zarr: a folder holding 2 entries \(a, zarr\.json\) "
                                                       r"is there, not a dynagnn store"),
}


@pytest.mark.parametrize("case", INGEST_OUTPUTS)
def test_ingest_replaces_only_a_store(capfd, tmp_path, case):
    make, message = INGEST_OUTPUTS[case]
    out = make(tmp_path)
    before = snapshot(tmp_path)
    assert_refused(capfd, ["ingest", "--spec", SPEC, "--dataset", "d", "--out", str(out)], tmp_path, message)
    assert snapshot(tmp_path) == before


def test_ingest_out_dot_is_one_line(capfd, tmp_path, monkeypatch):
    work = tmp_path / "work"
    (work / "results").mkdir(parents=True)
    (work / "Snakefile").write_text("")
    monkeypatch.chdir(work)
    assert_refused(capfd, ["ingest", "--spec", SPEC, "--dataset", "d", "--out", "."], tmp_path,
                   rf"dynagnn ingest: error: {work}: a folder holding 2 entries \(Snakefile, results\) is there, "
                   rf"not a dynagnn store .*such as {work}/store\.zarr")


def test_ingest_still_replaces_its_store_and_fills_an_empty_folder(tmp_path, store):
    out = Path(shutil.copytree(store, tmp_path / "store.zarr"))
    assert main(["-q", "ingest", "--spec", SPEC, "--dataset", "d", "--out", str(out)]) == 0
    (tmp_path / "empty").mkdir()
    assert main(["-q", "ingest", "--spec", SPEC, "--dataset", "d", "--out", str(tmp_path / "empty")]) == 0
    assert atomic.is_dynagnn_store(out) and atomic.is_dynagnn_store(tmp_path / "empty")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["empty", "store.zarr"]


# ------------------------------------------------------------------ 2. a finished run of another model

def _other_store(tmp: Path) -> str:
    return str(small_store(tmp / "other.zarr", seed=1))


TRAIN_OUTPUTS = {
    "another model": (["--model", "gcrn"], r"holds a finished run of tgcn/sequential \(1 epoch in its "
                                           r"metrics\.parquet\) that differs from this one: model tgcn \(this run: "
                                           r"gcrn\); nothing was changed: give another --out-dir, or --overwrite"),
    "another width": (["--model", "tgcn", "--hidden", "5"], r"holds a finished run of tgcn/sequential .*: hidden 4 "
                                                            r"\(this run: 5\);.* --overwrite"),
    "another strategy": (["--model", "tgcn", "--strategy", "frames"], r"holds a finished run of tgcn/sequential .*: "
                                                               r"strategy sequential \(this run: frames\)"),
}


@pytest.mark.parametrize("case", TRAIN_OUTPUTS)
def test_train_refuses_a_finished_run_of_another_model(capfd, store, run, case):
    flags, message = TRAIN_OUTPUTS[case]
    before = snapshot(run)
    argv = ["train", str(store), "--out-dir", str(run), *FAST, *flags]
    assert_refused(capfd, argv, run.parent, rf"dynagnn train: error: --out-dir {run} {message}")
    assert snapshot(run) == before
    assert main(["-q", *argv, "--overwrite"]) == 0  # the flag the message names
    config = load_checkpoint_file(run / "model.pt")["config"]
    given = dict(zip(flags[::2], flags[1::2]))
    assert (config["model"], config["strategy"], config["hidden"]) == (
        given["--model"], given.get("--strategy", "sequential"), int(given.get("--hidden", 4)))


def test_train_refuses_a_run_of_another_store(capfd, store, run, tmp_path):
    other = _other_store(tmp_path)
    assert_refused(capfd, ["train", other, "--out-dir", str(run), "--model", "tgcn", *FAST], run.parent,
                   r"finished run of tgcn/sequential .*: another store \(checksum \w+, this run's \w+\)")


def test_train_refuses_a_folder_that_is_not_a_runs(capfd, store, tmp_path):
    out = tmp_path / "w" / "thesis"
    out.mkdir(parents=True)
    (out / "chapter1.tex").write_text("")
    (out / "model.pt").write_bytes(b"my own model")
    assert_refused(capfd, ["train", str(store), "--out-dir", str(out), *FAST], tmp_path,
                   rf"{out}: not a training run's out-dir: it holds 1 other entry \(chapter1\.tex\)")
    assert (out / "model.pt").read_bytes() == b"my own model"


def test_train_refuses_a_metrics_table_no_run_wrote(capfd, store, tmp_path):
    import pandas as pd

    from dynagnn.tables import write_table

    out = tmp_path / "w" / "run"
    write_table(pd.DataFrame({"snapshot": [0, 1]}), out / "metrics.parquet", "abc")
    assert_refused(capfd, ["train", str(store), "--out-dir", str(out), *FAST], tmp_path,
                   r"holds metrics\.parquet, a table without the dynagnn\.model and dynagnn\.config metadata "
                   r"a training run writes; .*--overwrite")


def test_a_job_of_several_processes_is_refused_before_any_starts(capfd, store, run, monkeypatch):
    def no_launch(*a, **k):
        raise AssertionError("a process was started")

    monkeypatch.setattr(engine, "launch", no_launch)
    assert_refused(capfd, ["train", str(store), "--out-dir", str(run), *FAST, "--model", "wdgcn", "--strategy",
                           "vertex", "--workers", "2"], run.parent,
                   r"finished run of tgcn/sequential .*model tgcn \(this run: wdgcn\); strategy sequential \(this "
                   r"run: vertex\); workers 1 \(this run: 2\)")


def test_the_same_run_again_replaces_it(store, run, capfd):
    """Only the tuning differs (epochs): the run is replaced, with a warning naming what changed."""
    assert main(["-q", "train", str(store), "--out-dir", str(run), "--model", "tgcn", *FAST, "--epochs", "2"]) == 0
    assert "other tuning: epochs 1 (this run: 2)" in capfd.readouterr().err
    assert pq.ParquetFile(run / "metrics.parquet").metadata.num_rows == 2


# ------------------------------------------------------------------ 3. a disk that fills

def _fill(monkeypatch, full, error):
    """Writes into the folders ``full`` fail with ``error`` (Path.write_bytes: how model.pt is written)."""
    real = pathlib.Path.write_bytes

    def write_bytes(self, data):
        if any(self.parent == f or f in self.parents for f in full):
            raise error()
        return real(self, data)

    monkeypatch.setattr(pathlib.Path, "write_bytes", write_bytes)


ENOSPC = lambda: OSError(errno.ENOSPC, "No space left on device")  # noqa: E731
TORCH = lambda: RuntimeError("[enforce fail at inline_container.cc:595] . unexpected pos 1088 vs 1024")  # noqa: E731


@pytest.mark.parametrize("error", [ENOSPC, TORCH], ids=["ENOSPC", "torch's enforce fail"])
def test_a_full_disk_keeps_the_previous_run_and_what_was_trained(capfd, store, run, tmp_path, monkeypatch, error):
    rescue = tmp_path / "rescue"
    monkeypatch.setenv("DYNAGNN_RESCUE_DIR", str(rescue))
    _fill(monkeypatch, [run], error)
    real_free = atomic.free_bytes
    monkeypatch.setattr(atomic, "free_bytes", lambda folder: 0 if Path(folder) == run else real_free(folder))
    before = snapshot(run)
    line = assert_refused(capfd, ["train", str(store), "--out-dir", str(run), "--model", "tgcn", *FAST], run.parent,
                          rf"dynagnn train: error: no space left on device writing {run / 'model.pt'} \(0\.0 MiB "
                          rf"free there\); {run / 'model.pt'} was left as it was; the trained run \(metrics\.parquet, "
                          r"timings\.parquet, comm\.parquet, model\.pt\) was kept in \S+ \(DYNAGNN_RESCUE_DIR chooses "
                          rf"where\): move the files into {run} once it can take them")
    assert snapshot(run) == before  # the previous outputs, byte for byte
    kept = Path(line.split(" was kept in ")[1].split(" ")[0])
    assert kept.parent == rescue and kept.name.startswith("run-")
    assert sorted(p.name for p in kept.iterdir()) == ["comm.parquet", "metrics.parquet", "model.pt", "timings.parquet"]
    ck = load_checkpoint_file(kept / "model.pt")
    assert ck["model"] == "tgcn" and ck["epoch"] == 0
    assert pq.read_schema(kept / "metrics.parquet").metadata[b"dynagnn.model"] == b"tgcn"


def test_a_full_disk_everywhere_says_so(capfd, store, run, tmp_path, monkeypatch):
    rescue = tmp_path / "rescue"
    monkeypatch.setenv("DYNAGNN_RESCUE_DIR", str(rescue))
    _fill(monkeypatch, [run, rescue], ENOSPC)
    assert_refused(capfd, ["train", str(store), "--out-dir", str(run), "--model", "tgcn", *FAST], run.parent,
                   rf"no space left on device writing {run / 'model.pt'}\b.*; keeping the trained run in "
                   rf"{rescue}/run-\S+ failed too \(no space left on device writing .*model\.pt.*\): set "
                   r"DYNAGNN_RESCUE_DIR to a folder on a disk with space")
    assert not [p for p in rescue.rglob("*") if p.is_file()]


# ------------------------------------------------------------------ 4. temporaries a killed writer left

def test_train_removes_what_a_killed_run_left(store, run):
    dead = dead_pid()
    stale = [run / f".model.pt.tmp-{dead}-0123abcd", run / f".metrics.parquet.tmp-{dead}-89abcdef"]
    for p in stale:
        p.write_bytes(b"PK\x03\x04 half")
    live = run / f".model.pt.tmp-{os.getpid()}-aaaabbbb"  # a running writer's
    live.write_bytes(b"")
    assert main(["-q", "train", str(store), "--out-dir", str(run), "--model", "tgcn", *FAST]) == 0
    assert not any(p.exists() for p in stale) and live.exists()
    load_checkpoint_file(run / "model.pt")


def test_a_refused_train_leaves_the_temporaries_alone(capfd, store, run):
    """A refusal changes nothing, not even what a dead run left (its own run may come back for it)."""
    (run / f".model.pt.tmp-{dead_pid()}-0123abcd").write_bytes(b"")
    assert_refused(capfd, ["train", str(store), "--out-dir", str(run), *FAST, "--model", "gcrn"], run.parent,
                   r"finished run of tgcn/sequential")


def test_stats_removes_what_a_killed_run_left(store, tmp_path):
    out = tmp_path / "s"
    out.mkdir()
    dead = dead_pid()
    stale = [out / f".stats.parquet.tmp-{dead}-0123abcd", out / f".stats.png.tmp-{dead}-0123abcd"]
    for p in stale:
        p.write_bytes(b"half")
    assert main(["-q", "stats", str(store), "--out", str(out / "stats.parquet"), "--figure", str(out / "stats.png"),
                 "--threads-only"]) == 0
    assert not any(p.exists() for p in stale)
    assert sorted(p.name for p in out.iterdir()) == ["stats.parquet", "stats.pdf", "stats.png"]


# ------------------------------------------------------------------ 5. nothing published unless the job succeeded

class _FailsAfterFit(engine.Trainer):
    """Rank 1 finishes its training, then fails (a late error, a kill, its launcher gone) while rank 0
    would already be writing."""

    how = "raise"

    def fit(self):
        result = super().fit()
        if self.ctx.rank == 1:
            time.sleep(1.0)  # rank 0 has long returned from its own fit
            if self.how == "raise":
                raise TrainingError("rank 1 failed after its training")
            if self.how == "kill":
                os.kill(os.getpid(), signal.SIGKILL)
            if self.how == "launcher gone":
                engine._launcher_alive = lambda: False
        return result


def _train_then_fail(ctx, store_path, out, cfg, how):
    _FailsAfterFit.how = how
    engine.Trainer = _FailsAfterFit  # this process only
    return engine._train_here(ctx, store_path, out, cfg, None, False)


@pytest.mark.parametrize("how, message", [
    ("raise", r"rank 1 failed after its training"),
    ("kill", r"worker 1 was killed by SIGKILL"),
    ("launcher gone", r"the launcher of worker\(s\) 1 is gone \(the job was stopped\); nothing was written"),
])
def test_nothing_is_published_unless_every_worker_succeeded(store, tmp_path, how, message):
    out = tmp_path / "o"
    cfg = TrainConfig.of(model="wdgcn", strategy="vertex", workers=2, hidden=4, window=2, epochs=1)
    with pytest.raises(DynagnnError, match=message):
        launch(_train_then_fail, 2, store, out, cfg, how, threads=1, timeout=60)
    assert not out.exists() or not [p for p in out.iterdir() if not p.name.startswith(".")], sorted(out.iterdir())
