"""BGL's isolated preprocessing stages (NSDI'23 §3.4): sampling → feature fetch → training.

- **Sampling** runs in ``samplers`` worker processes (spawned; the graph's CSR is shared with them
  through shared memory, not copied). Batch b goes to sampler ``b mod samplers``, which draws its
  neighbours with the batch's own generator (:func:`~dynagnn.graph.sample.batch_rng`), builds the
  model's blocks (:func:`~dynagnn.models.sage.make_blocks`) and puts them on its bounded queue.
  ``samplers = 0`` samples in the fetch thread (no process).
- **Feature fetch** is a thread of the training process: it takes the batches in order, reads their
  input rows through the feature cache (:class:`~dynagnn.train.cache.FeatureCache`), moves the
  blocks to the device and puts the batch on a bounded queue.
- **Training** takes them from that queue.

Isolation (BGL's static allocation of cores to stages): ``cores`` maps each stage to the CPU ids it
may run on (``os.sched_setaffinity``; on Linux it binds the calling thread, so the fetch thread and
the training thread each keep their own) and the training stage's torch threads to their number.
Without it every stage runs wherever the OS puts it (BGL's "w/o isolation").

Waiting is timed per stage: a sampler blocked on its full queue (``sample_wait``), the fetch stage
waiting for a sampler (``fetch_wait``) or blocked on the full training queue (``fetch_block``), the
training stage waiting for a batch (``train_wait``); and each stage's busy time.

Failure: a sampler that raises or dies (a signal, ``os._exit``) stops the run with one
:class:`SamplerError` line naming the sampler and the cause, within ``poll`` seconds; nothing hangs
(the fetch thread and the other samplers are stopped).
"""

from __future__ import annotations

import contextlib
import os
import queue
import threading
import time
import traceback
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Callable, Iterator

import numpy as np
import torch
import torch.multiprocessing as tmp

from dynagnn.errors import DynagnnError, one_line
from dynagnn.graph.sample import NeighborSampler, batch_rng
from dynagnn.models.sage import make_blocks
from dynagnn.train.pipeline import put_unless_stopped

STAGES = ("sample", "fetch", "train")


class SamplerError(DynagnnError):
    """A sampler process failed; the run cannot go on."""


@dataclass
class Batch:
    """One mini-batch ready for training: ``seeds`` int64 [B] sorted distinct (the order of the
    model's output rows), ``blocks`` on the device, ``x`` float32 [M, F] the input rows there."""

    index: int
    seeds: np.ndarray
    blocks: list
    x: torch.Tensor


@dataclass
class StageTimes:
    """Seconds per stage of one period: waiting and busy."""

    seconds: dict = field(default_factory=lambda: defaultdict(float))

    def add(self, key: str, s: float) -> None:
        self.seconds[key] += s

    def metrics(self) -> dict[str, float]:
        keys = ("sample_busy", "sample_wait", "fetch_busy", "fetch_wait", "fetch_block", "train_wait")
        return {f"{k}_s": float(self.seconds.get(k, 0.0)) for k in keys}


def pin(cores) -> None:
    """Bind the calling thread (Linux) or process to ``cores`` (None: leave it)."""
    if cores and hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, set(int(c) for c in cores))


class _Sampling:
    """What a sampler needs: the CSR (shared tensors), full degrees, fan-outs, the block operator."""

    def __init__(self, indptr: np.ndarray, indices: np.ndarray, fanouts, norm: str):
        self.indptr = torch.from_numpy(np.ascontiguousarray(indptr, dtype=np.int64))
        self.indices = torch.from_numpy(np.ascontiguousarray(indices, dtype=np.int64))
        self.fanouts = tuple(int(f) for f in fanouts)
        self.norm = norm
        self._sampler = None

    def share(self) -> "_Sampling":
        self.indptr.share_memory_()
        self.indices.share_memory_()
        return self

    def __getstate__(self):
        return {"indptr": self.indptr, "indices": self.indices, "fanouts": self.fanouts, "norm": self.norm}

    def __setstate__(self, d):
        self.__dict__.update(d)
        self._sampler = None

    def __call__(self, seeds: np.ndarray, key: tuple[int, int, int]):
        if self._sampler is None:
            ptr = self.indptr.numpy()
            self._sampler = NeighborSampler(ptr, self.indices.numpy(), self.fanouts)
            self._degree = np.diff(ptr)
        hops = self._sampler.sample(seeds, batch_rng(*key))
        inputs, blocks = make_blocks(hops, self._degree, self.norm)
        return hops[0].nodes, inputs, blocks


def _sampler_main(index: int, sampling: _Sampling, tasks, out, cores) -> None:
    """A sampler process: (b, seeds, key) tasks in, (b, seeds, inputs, blocks, busy, wait) out."""
    pin(cores)
    torch.set_num_threads(1)
    busy = wait = 0.0
    while True:
        task = tasks.get()
        if task is None:
            return
        if task == "times":
            out.put(("times", busy, wait))
            busy = wait = 0.0
            continue
        b, seeds, key = task
        t0 = time.perf_counter()
        try:
            result = sampling(seeds, key)
        except Exception as exc:  # the parent names it in one line
            out.put(("error", f"{one_line(exc)} ({traceback.extract_tb(exc.__traceback__)[-1].name})"))
            return
        t1 = time.perf_counter()
        busy += t1 - t0
        out.put((b, *result))
        wait += time.perf_counter() - t1


@contextlib.contextmanager
def _children_allowed():
    """distributed.launch starts its workers as daemons (they must die with the job), and multiprocessing
    forbids a daemon to start processes, lest they be orphaned; the samplers are daemons that end
    with their worker, so that reason does not apply to them."""
    import multiprocessing as mp

    config = mp.current_process()._config
    was = config.get("daemon")
    config["daemon"] = False
    try:
        yield
    finally:
        config["daemon"] = was


class Pipeline:
    """The three stages over one run (sampler processes live as long as the pipeline).

    ``sampling``: what samples a batch (module doc); ``fetch(inputs, update)`` -> x on the device
    (the feature cache); ``device``; ``samplers``: processes (0: sample in the fetch thread);
    ``depth``: the bound of each queue; ``cores``: {stage: [cpu ids]} or None (no isolation).
    """

    def __init__(self, indptr, indices, fanouts, norm: str, fetch: Callable, device, *, samplers: int = 1,
                 depth: int = 4, cores: dict | None = None, poll: float = 0.2):
        self.sampling = _Sampling(indptr, indices, fanouts, norm)
        self.fetch = fetch
        self.device = torch.device(device)
        self.depth = max(1, int(depth))
        self.cores = cores or {}
        self.poll = poll
        self.times = StageTimes()
        self._thread: threading.Thread | None = None
        self.procs, self.tasks, self.outs = [], [], []
        if samplers > 0:
            ctx = tmp.get_context("spawn")
            self.sampling.share()
            with _children_allowed():
                for i in range(int(samplers)):
                    tasks, out = ctx.Queue(), ctx.Queue(self.depth)
                    p = ctx.Process(target=_sampler_main, args=(i, self.sampling, tasks, out, self.cores.get("sample")),
                                    daemon=True, name=f"dynagnn-sampler-{i}")
                    p.start()
                    self.procs.append(p)
                    self.tasks.append(tasks)
                    self.outs.append(out)
            for i in range(len(self.procs)):   # started (torch imported) before any epoch is timed
                self.tasks[i].put("times")
                self._get(i, threading.Event())
        if self.cores.get("train"):
            pin(self.cores["train"])
            torch.set_num_threads(len(self.cores["train"]))

    # ---- the sampler side, run by the fetch thread
    def _get(self, i: int, stop: threading.Event):
        """The next message of sampler i; SamplerError once it is dead or failed."""
        while not stop.is_set():
            try:
                msg = self.outs[i].get(timeout=self.poll)
            except queue.Empty:
                p = self.procs[i]
                if not p.is_alive():
                    code = p.exitcode
                    cause = f"killed by signal {-code}" if code and code < 0 else f"exit code {code}"
                    raise SamplerError(f"sampler process {i} died ({cause}); the run stops, nothing was written")
                continue
            if msg[0] == "error":
                raise SamplerError(f"sampler process {i} failed: {msg[1]}; the run stops, nothing was written")
            return msg
        return None

    def _fetch_loop(self, batches, keys, update: bool, out: queue.Queue, stop: threading.Event) -> None:
        pin(self.cores.get("fetch"))
        k = len(self.procs)
        try:
            for b, seeds in enumerate(batches):
                t0 = time.perf_counter()
                if k:
                    msg = self._get(b % k, stop)
                    if msg is None:
                        return
                    _, seeds_sorted, inputs, blocks = msg
                    t1 = time.perf_counter()
                    self.times.add("fetch_wait", t1 - t0)
                else:
                    seeds_sorted, inputs, blocks = self.sampling(seeds, keys[b])
                    t1 = time.perf_counter()
                    self.times.add("sample_busy", t1 - t0)
                x = self.fetch(inputs, update)
                item = Batch(b, seeds_sorted, [blk.to(self.device) for blk in blocks], x)
                t2 = time.perf_counter()
                self.times.add("fetch_busy", t2 - t1)
                put_unless_stopped(out, item, stop, self.poll)
                self.times.add("fetch_block", time.perf_counter() - t2)
            for i in range(k):   # the samplers' own times of this period
                self.tasks[i].put("times")
                msg = self._get(i, stop)
                if msg is None:
                    return
                self.times.add("sample_busy", msg[1])
                self.times.add("sample_wait", msg[2])
        except BaseException as exc:  # handed to the training stage, which raises it
            put_unless_stopped(out, exc, stop, self.poll)

    def batches(self, batches: list[np.ndarray], keys: list[tuple[int, int, int]], update: bool = True
                ) -> Iterator[Batch]:
        """The prepared batches of ``batches`` (seed arrays), in order; ``keys[b]`` seeds batch b's
        sampling; ``update``: whether the feature cache learns from them (training) or is only read."""
        self.finish()
        out: queue.Queue = queue.Queue(self.depth)
        stop = threading.Event()
        k = len(self.procs)
        for b, seeds in enumerate(batches):
            if k:
                self.tasks[b % k].put((b, np.asarray(seeds, dtype=np.int64), keys[b]))
        self._out = out
        self._thread = thread = threading.Thread(target=self._fetch_loop, args=(batches, keys, update, out, stop),
                                                 daemon=True, name="dynagnn-fetch")
        thread.start()
        taken = 0
        try:
            for _ in range(len(batches)):
                t0 = time.perf_counter()
                item = out.get()
                self.times.add("train_wait", time.perf_counter() - t0)
                if isinstance(item, BaseException):
                    raise item
                taken += 1
                yield item
            self.finish()
        except GeneratorExit:
            if taken < len(batches):   # abandoned half-way: stop the stages (else: the next period joins)
                stop.set()
                thread.join(timeout=5 * self.poll + 1)
                self.close()
            raise
        except BaseException:
            stop.set()
            thread.join(timeout=5 * self.poll + 1)
            self.close()
            raise

    def finish(self) -> None:
        """Wait for the last period's fetch thread (its samplers' times come in after its last batch)."""
        if self._thread is not None:
            self._thread.join()
            self._thread = None
            while not self._out.empty():   # a sampler lost after the last batch
                item = self._out.get_nowait()
                if isinstance(item, BaseException):
                    self.close()
                    raise item

    def take_times(self) -> StageTimes:
        """The stage times since the last call (after the last period has finished)."""
        self.finish()
        t, self.times = self.times, StageTimes()
        return t

    def close(self) -> None:
        """Stop the sampler processes (idempotent)."""
        for t, p in zip(self.tasks, self.procs):
            if p.is_alive():
                with contextlib.suppress(Exception):
                    t.put(None)
        for p in self.procs:
            p.join(timeout=1.0)
            if p.is_alive():
                p.terminate()
                p.join(timeout=1.0)
        self.procs, self.tasks, self.outs = [], [], []

    def __del__(self):
        with contextlib.suppress(Exception):
            self.close()
