"""Processes that outlive their job (issue 34, items 5 to 8): a killed launcher takes its workers and
their samplers with it, a sampler that dies or stops ends the run in one line, a successful run leaks
no semaphore, and stray torchrun variables are refused at once.

The killing tests run ``python -m dynagnn train`` as a subprocess on tiny stores, wait until rank 0's
progress bar shows that training began, signal the launcher, and then look for every process that
carries the run's tag in its environment (so a child that lost its parent is found too).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import uuid
import weakref
from pathlib import Path

import numpy as np
import psutil
import pytest
import torch

from dynagnn.data.ingest import ingest
from dynagnn.data.store import open_store
from dynagnn.train import stages
from dynagnn.train.stages import Pipeline
from dynagnn.train.strategies.sampled import static_graph
from tests.badinput.common import assert_refused, tree
from tests.testing.stores import small_store
from tests.testing.steps import ends_with
from tests.testing.stores import event_store
from tests.testing.steps import make_plan

ROOT = Path(__file__).resolve().parents[2]
BGL = {"format": "synthetic", "generator": "bgl",
       "params": {"num_nodes": 300, "num_edges": 1200, "feature_dim": 4, "classes": 3, "seed": 0}}


@pytest.fixture(scope="module")
def stores(tmp_path_factory):
    root = tmp_path_factory.mktemp("processes")
    small_store(root / "link.zarr")
    event_store(root / "ev.zarr")
    ingest(BGL, root / "bgl.zarr")
    make_plan(root / "link.zarr", "tgcn", 1, root / "plan-1.json")
    return root


def family_argv(family: str, root: Path, out: Path, epochs: int = 1000) -> list[str]:
    """``train`` of a 2-process run of each multi-process family; it trains for ``epochs`` epochs
    (no early stop)."""
    options = {"patience": 1000}
    if family == "window":
        argv = [str(root / "link.zarr"), "--strategy", "vertex", "--model", "tgcn", "--workers", "2"]
    elif family == "group":   # one worker of BLAD's co-located pair: 2 processes
        argv = [str(root / "link.zarr"), "--strategy", "group", "--model", "tgcn", "--workers", "1", "--window", "3",
                "--hidden", "5"]
        options["plan"] = str(root / "plan-1.json")
    elif family == "tgnn":
        argv = [str(root / "ev.zarr"), "--strategy", "tgnn", "--model", "tgn", "--workers", "2", "--memory-dim", "8",
                "--neighbors", "2"]
    elif family == "sampled":
        argv = [str(root / "bgl.zarr"), "--strategy", "sampled", "--model", "graphsage", "--workers", "2",
                "--fanouts", "3", "2", "--batch-size", "32", "--samplers", "1"]
    else:
        raise AssertionError(family)
    return [*argv, "--out-dir", str(out), "--epochs", str(epochs), "--threads", "1", "--options", json.dumps(options)]


def tagged(tag: str) -> list[psutil.Process]:
    """Every live process (zombies count as gone) whose environment carries ``tag``."""
    found = []
    for p in psutil.process_iter():
        try:
            if p.environ().get("DYNAGNN_TEST_TAG") == tag and p.status() != psutil.STATUS_ZOMBIE:
                found.append(p)
        except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
            continue
    return found


def shm_of(procs) -> set[str]:
    """The /dev/shm names these processes map (semaphores, shared rings), deleted ones left out."""
    names = set()
    for p in procs:
        try:
            with open(f"/proc/{p.pid}/maps") as f:
                for line in f:
                    path = line.split(maxsplit=5)[5].strip() if len(line.split(maxsplit=5)) == 6 else ""
                    if path.startswith("/dev/shm/") and not path.endswith("(deleted)"):
                        names.add(path[len("/dev/shm/"):])
        except OSError:
            continue
    return names


def workers_of(launcher: psutil.Process) -> list[psutil.Process]:
    """The launcher's worker processes: the children of its fork server (distributed/launch.py)."""
    servers = [p for p in launcher.children() if "forkserver" in " ".join(p.cmdline())]
    return [w for server in servers for w in server.children()]


def _default_sigint() -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)


class Run:
    """``dynagnn train argv`` as a subprocess with its stderr read as it comes."""

    def __init__(self, argv: list[str], env: dict | None = None):
        self.tag = uuid.uuid4().hex
        # the command's temporary files (its plan folder, multiprocessing's) in a folder of its own, removed
        # with this object: a launcher killed by SIGKILL cannot remove them itself
        tmp = tempfile.mkdtemp(prefix="dynagnn-test-run-")
        weakref.finalize(self, shutil.rmtree, tmp, ignore_errors=True)
        env = {**os.environ, **(env or {}), "DYNAGNN_TEST_TAG": self.tag, "TMPDIR": tmp}
        # as a shell starts a command: SIGINT at its default, whatever this test process inherited or was left
        # with (an ignored SIGINT is inherited across exec, and the command would then never see a Ctrl-C)
        self.proc = subprocess.Popen([sys.executable, "-m", "dynagnn", "train", *argv], cwd=ROOT, env=env,
                                     stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True,
                                     preexec_fn=_default_sigint)
        self.err = b""
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self):
        while chunk := os.read(self.proc.stderr.fileno(), 65536):
            self.err += chunk

    def wait_for(self, text: str, timeout: float = 120.0) -> None:
        deadline = time.monotonic() + timeout
        while text.encode() not in self.err:
            assert self.proc.poll() is None, f"the run ended ({self.proc.returncode}): {self.err.decode()[-2000:]}"
            assert time.monotonic() < deadline, f"{text!r} never came: {self.err.decode()[-2000:]}"
            time.sleep(0.05)

    def stderr(self) -> str:
        self._reader.join(10)
        return self.err.decode()

    def ends(self, code: int, within: float = 30.0) -> str:
        """Assert that the command exits with ``code`` within ``within`` s and that none of its
        processes is left 10 s later; its stderr."""
        assert self.proc.wait(within) == code, self.stderr()
        deadline = time.monotonic() + 10
        while tagged(self.tag) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not tagged(self.tag)
        return self.stderr()

    def kill_all(self) -> None:
        for p in tagged(self.tag):
            p.kill()


@pytest.mark.parametrize("sig", ["SIGTERM", "SIGHUP", "SIGKILL"])
@pytest.mark.parametrize("family", ["window", "group", "tgnn", "sampled"])
def test_a_killed_launcher_takes_its_workers_with_it(stores, tmp_path, family, sig):
    shm_before = set(os.listdir("/dev/shm"))
    run = Run(family_argv(family, stores, tmp_path / "out"))
    try:
        run.wait_for("it/s")   # rank 0's progress bar: training is under way
        time.sleep(0.5)
        procs = tagged(run.tag)
        launcher = psutil.Process(run.proc.pid)
        workers = workers_of(launcher)
        assert len(workers) == 2, [p.cmdline() for p in launcher.children(recursive=True)]
        if family == "sampled":   # each worker's sampler process
            assert sum(len(w.children()) for w in workers) == 2
        mapped = shm_of(procs)
        killed = time.monotonic()
        run.proc.send_signal(getattr(signal, sig))
        run.proc.wait(10)
        while tagged(run.tag) and time.monotonic() - killed < 10:
            time.sleep(0.05)
        left = tagged(run.tag)
        assert not left, f"still running 10 s after {sig}: {[p.cmdline() for p in left]}"
    finally:
        for p in tagged(run.tag):
            p.kill()
    err = run.stderr()
    if sig == "SIGKILL":
        assert run.proc.returncode == -signal.SIGKILL
    else:   # the launcher stops its workers itself and says so
        assert run.proc.returncode == 2 and f"dynagnn train: error: stopped by {sig}" in err, err
        assert "Traceback" not in err, err
    assert tree(tmp_path) == set(), f"written after the job failed: {sorted(tree(tmp_path))}"
    new = set(os.listdir("/dev/shm")) - shm_before
    pids = {str(p.pid) for p in procs}   # a pair channel's file names its creator (other tests run beside this one)
    ours = {n for n in new if n in mapped or n.startswith("dynagnn") and n.split("-")[2:3] and n.split("-")[2] in pids}
    assert not ours, f"left in /dev/shm: {sorted(ours)}"


def catches_sigint(pid: int) -> bool:
    """Whether the process has a handler for SIGINT (its bit in /proc's SigCgt mask)."""
    with open(f"/proc/{pid}/status") as f:
        mask = next(int(line.split()[1], 16) for line in f if line.startswith("SigCgt:"))
    return bool(mask & (1 << (signal.SIGINT - 1)))


def test_sigint_to_a_worker_during_start_up_is_one_line(stores, tmp_path):
    """A SIGINT to one worker while the job starts: the job ends, naming the worker, in one line."""
    run = Run(family_argv("window", stores, tmp_path / "out"))
    try:
        launcher = psutil.Process(run.proc.pid)
        deadline = time.monotonic() + 60
        while True:   # the second worker, once it can act on a SIGINT (before it is ready to train)
            assert run.proc.poll() is None and time.monotonic() < deadline, run.stderr()
            workers = sorted(workers_of(launcher), key=lambda p: p.create_time())
            if len(workers) == 2 and catches_sigint(workers[1].pid):
                break
            time.sleep(0.01)
        assert b"it/s" not in run.err
        workers[1].send_signal(signal.SIGINT)
        err = run.ends(2)
    finally:
        run.kill_all()
    assert "dynagnn train: error: worker 1 was interrupted (SIGINT)" in err and "Traceback" not in err, err
    assert tree(tmp_path) == set()


def test_ctrl_c_while_the_fork_server_starts_is_not_lost(stores, tmp_path):
    """A Ctrl-C while the workers' fork server imports torch (the first second of a job): the command
    says so and exits 130; nothing is left."""
    run = Run(family_argv("window", stores, tmp_path / "out"))
    try:
        launcher = psutil.Process(run.proc.pid)
        deadline = time.monotonic() + 60
        while not any("forkserver" in " ".join(p.cmdline()) for p in launcher.children()):
            assert run.proc.poll() is None and time.monotonic() < deadline, run.stderr()
            time.sleep(0.005)
        time.sleep(0.3)   # past the moment it is started (SIGINT ignored), well before its imports end
        assert b"it/s" not in run.err
        os.killpg(run.proc.pid, signal.SIGINT)
        err = run.ends(130)
    finally:
        run.kill_all()
    assert "dynagnn train: interrupted" in err and "Traceback" not in err, err
    assert tree(tmp_path) == set()


@pytest.mark.parametrize("family", ["window", "sampled"])
def test_a_successful_run_leaks_no_semaphore(stores, tmp_path, family):
    run = Run(family_argv(family, stores, tmp_path / "out", epochs=2))
    assert run.proc.wait(300) == 0, run.stderr()
    err = run.stderr()
    assert "leaked" not in err and "resource_tracker" not in err, err
    assert (tmp_path / "out" / "model.pt").exists()


# ---------------------------------------------------------------- BGL's samplers

class StoppingSampling(stages._Sampling):
    """A sampler that stops itself (SIGSTOP) on its third batch: alive, but silent."""

    def __call__(self, seeds, key):
        if key[2] >= 2 * 2:   # batch 2 of worker 0 of 2 or later (the startup handshake samples nothing)
            os.kill(os.getpid(), signal.SIGSTOP)
        return super().__call__(seeds, key)


def sampled_argv(store, out, *extra):
    return ["train", str(store), "--out-dir", str(out), "--model", "graphsage", "--strategy", "sampled",
            "--fanouts", "3", "2", "--batch-size", "32", "--epochs", "1", "--samplers", "1", "--threads", "1",
            "--options", json.dumps({"cache_l1_mb": 0.01, "cache_l2_mb": 0.01}), *extra]


def test_a_stopped_sampler_ends_the_run_after_the_timeout(capfd, tmp_path, stores, monkeypatch):
    monkeypatch.setattr(stages, "_Sampling", StoppingSampling)
    # long enough for a busy machine's sampler to reach the batch it stops at, which a shorter wait
    # would meet still running ("alive, state R")
    monkeypatch.setenv("DYNAGNN_SAMPLER_TIMEOUT", "6")
    t0 = time.monotonic()
    assert_refused(capfd, sampled_argv(stores / "bgl.zarr", tmp_path / "out"), tmp_path,
                   r"sampler process 0 \(pid \d+\) sent nothing for 6 s \(it is stopped: SIGSTOP")
    assert time.monotonic() - t0 < 60


@pytest.mark.parametrize("name, value", [("DYNAGNN_SAMPLER_TIMEOUT", "soon"), ("DYNAGNN_DIST_TIMEOUT", "abc"),
                                         ("DYNAGNN_SAMPLER_TIMEOUT", "-1"), ("DYNAGNN_DIST_TIMEOUT", "nan")])
def test_a_bad_timeout_is_one_line(capfd, tmp_path, stores, monkeypatch, name, value):
    monkeypatch.setenv(name, value)
    assert_refused(capfd, sampled_argv(stores / "bgl.zarr", tmp_path / "out"), tmp_path,
                   rf"{name}='{value}': expected a positive number of seconds")


def test_dist_timeout_abc_is_one_line_before_any_worker_starts(capfd, tmp_path, stores, monkeypatch):
    monkeypatch.setenv("DYNAGNN_DIST_TIMEOUT", "abc")
    argv = ["train", str(stores / "link.zarr"), "--out-dir", str(tmp_path / "out"), "--strategy", "vertex",
            "--model", "tgcn", "--workers", "2", "--epochs", "1", "--threads", "1"]
    assert_refused(capfd, argv, tmp_path, r"DYNAGNN_DIST_TIMEOUT='abc': expected a positive number of seconds")


def _pipeline(store_path, **kw):
    indptr, indices = static_graph(open_store(store_path))
    return Pipeline(indptr, indices, (25, 25), "mean", lambda ids, update: torch.zeros(ids.size, 1), "cpu", **kw)


def _big_batches(n=40):
    """Batches whose blocks pickle to well over a pipe's 64 KiB: a sampler blocked handing one over
    has written part of it."""
    return [np.arange(300) for _ in range(n)], [(0, 0, b) for b in range(n)]


def test_a_sampler_killed_halfway_through_a_batch_while_the_trainer_is_busy(stores):
    pipe = _pipeline(stores / "bgl.zarr", samplers=1, depth=1, timeout=60)
    try:
        batches, keys = _big_batches()
        it = pipe.batches(batches, keys)
        next(it)
        time.sleep(1.5)   # the trainer is busy: the fetch queue fills, the sampler blocks mid-batch
        os.kill(pipe.procs[0].pid, signal.SIGKILL)
        ends_with(it, r"sampler process 0 died \(killed by signal 9\)", within=10)
    finally:
        pipe.close()


def test_a_sampler_stopped_halfway_through_a_batch(stores):
    pipe = _pipeline(stores / "bgl.zarr", samplers=1, depth=1, timeout=5, poll=0.1)
    try:
        batches, keys = _big_batches()
        it = pipe.batches(batches, keys)
        next(it)
        time.sleep(1.5)   # the sampler is blocked handing over a batch, part of it in the pipe
        pid = pipe.procs[0].pid
        os.kill(pid, signal.SIGSTOP)
        ends_with(it, rf"sampler process 0 \(pid {pid}\) sent nothing for \d+ s \(it is stopped", within=15)
        assert pipe.procs == [] and not psutil.pid_exists(pid) or psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    finally:
        pipe.close()


def test_ctrl_c_ends_a_sampled_run(stores, tmp_path):
    """SIGINT to the whole process group (a Ctrl-C): the command says so and exits; no sampler is left."""
    argv = sampled_argv(stores / "bgl.zarr", tmp_path / "out")[1:]
    argv[argv.index("--epochs") + 1] = "1000"
    run = Run([*argv, "--options", json.dumps({"patience": 1000, "cache_l1_mb": 0.01, "cache_l2_mb": 0.01})])
    try:
        run.wait_for("it/s")
        assert len(tagged(run.tag)) >= 2   # the training process and its sampler (and the resource tracker)
        os.killpg(run.proc.pid, signal.SIGINT)
        err = run.ends(130, within=20)
    finally:
        run.kill_all()
    assert "dynagnn train: interrupted" in err and "Traceback" not in err, err
    assert tree(tmp_path) == set()


# ---------------------------------------------------------------- stray torchrun variables

def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def stray(monkeypatch):
    """RANK, WORLD_SIZE and MASTER_ADDR left in the shell by a torchrun job (no torchrun marker)."""
    for name in ("TORCHELASTIC_RUN_ID", "GROUP_RANK", "LOCAL_WORLD_SIZE", "LOCAL_RANK"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("RANK", "0")
    monkeypatch.setenv("MASTER_ADDR", "127.0.0.1")
    monkeypatch.setenv("MASTER_PORT", str(_free_port()))
    monkeypatch.setenv("DYNAGNN_CONNECT_TIMEOUT", "2")
    return monkeypatch


def vertex_argv(root, out, *extra):
    return ["train", str(root / "link.zarr"), "--out-dir", str(out), "--strategy", "vertex", "--model", "tgcn",
            "--epochs", "1", "--threads", "1", *extra]


@pytest.mark.parametrize("world, flags, message", [
    ("2", [], r"WORLD_SIZE=2 in the environment, but --workers 1 asks for 1 process and torchrun did not start "
              r"this process \(no TORCHELASTIC_RUN_ID\): unset RANK, WORLD_SIZE and MASTER_ADDR"),
    ("1", ["--workers", "2"], r"WORLD_SIZE=1 in the environment, but --workers 2 asks for 2 processes"),
    ("3", ["--workers", "2"], r"WORLD_SIZE=3 in the environment, but --workers 2 asks for 2 processes"),
    ("two", ["--workers", "2"], r"WORLD_SIZE='two' in the environment: expected a positive number"),
])
def test_stray_torchrun_variables_that_disagree_with_workers_are_refused_at_once(
        capfd, tmp_path, stores, stray, world, flags, message):
    stray.setenv("WORLD_SIZE", world)
    t0 = time.monotonic()
    assert_refused(capfd, vertex_argv(stores, tmp_path / "out", *flags), tmp_path, message)
    assert time.monotonic() - t0 < 60   # refused before any rendezvous is tried (quiet: 3 s)


@pytest.mark.parametrize("torchrun", [False, True])
def test_a_rendezvous_that_cannot_complete_fails_in_seconds_naming_the_missing_ranks(
        capfd, tmp_path, stores, stray, torchrun):
    stray.setenv("WORLD_SIZE", "3")
    if torchrun:
        stray.setenv("TORCHELASTIC_RUN_ID", "test")
        stray.setenv("LOCAL_WORLD_SIZE", "3")
    t0 = time.monotonic()
    told = "torchrun started this job" if torchrun else "torchrun did not start this process"
    assert_refused(capfd, vertex_argv(stores, tmp_path / "out", *([] if torchrun else ["--workers", "3"])), tmp_path,
                   rf"the job's 3 processes did not all meet at 127\.0\.0\.1:\d+ within 2 s: ranks 1, 2 never came "
                   rf"\({told}")
    assert time.monotonic() - t0 < 30
