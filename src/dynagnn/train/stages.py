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

Channels: each sampler has two pipes, tasks in and batches out, and nothing else (no
multiprocessing queue, so no semaphore or feeder thread to leak or to hang the exit). The fetch
thread hands sampler i at most ``depth`` batches ahead of the ones it has taken (the queue bound);
the sampler's ``sample_wait`` is the time it spends with its batches done and no new task, so
blocked on the full queue.

Failure: a sampler that raises or dies (a signal, ``os._exit``) stops the run with one
:class:`SamplerError` line naming the sampler and the cause, within ``poll`` seconds; nothing hangs
(the fetch thread and the other samplers are stopped). The training process holds no copy of a
sampler's end of its pipes, so a sampler that dies, even half-way through a batch, is an end of
file at once. Every wait has a producer it checks and a timeout (``DYNAGNN_SAMPLER_TIMEOUT``
seconds, default ``DYNAGNN_DIST_TIMEOUT``'s 600): a sampler that is alive but sends nothing (stopped
by SIGSTOP, or stuck) ends the run with one line after that time, naming it and its state. A sampler
dies with its parent, whatever killed the parent (:mod:`dynagnn.distributed.lifeline`), and ignores
SIGINT (a Ctrl-C reaches the whole process group: the training process decides).
"""

from __future__ import annotations

import contextlib
import os
import queue
import select
import signal
import threading
import time
import traceback
import weakref
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Callable, Iterator

import numpy as np
import torch
import torch.multiprocessing as tmp

from dynagnn.distributed.launch import connect_timeout, default_timeout, env_seconds
from dynagnn.distributed.lifeline import die_with_parent
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


def sampler_timeout() -> float:
    """Seconds a stage waits for a sampler's next batch: ``DYNAGNN_SAMPLER_TIMEOUT`` (default
    ``DYNAGNN_DIST_TIMEOUT``, 600)."""
    return env_seconds("DYNAGNN_SAMPLER_TIMEOUT", default_timeout())


def _sampler_main(index: int, sampling: _Sampling, tasks, out, cores) -> None:
    """A sampler process: (b, seeds, key) tasks in, (b, seeds, inputs, blocks) out; "times" asks for
    (busy, wait) since the last ask; None, or the parent's end of ``tasks`` closing, ends it."""
    die_with_parent()
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C: the training process decides
    pin(cores)
    torch.set_num_threads(1)
    # a thread drains the task pipe, so the training process never blocks handing over a task
    # while this process is blocked handing over a batch
    inbox: queue.Queue = queue.Queue()
    threading.Thread(target=_drain_tasks, args=(tasks, inbox), daemon=True, name="dynagnn-tasks").start()
    busy = wait = 0.0
    done = None  # when the last batch was done: from then until a new task, blocked on the full queue
    try:
        while True:
            task = inbox.get()
            if task is None:
                return
            if task == "times":
                out.send(("times", busy, wait))
                busy = wait = 0.0
                done = None
                continue
            t0 = time.perf_counter()
            if done is not None:
                wait += t0 - done
            b, seeds, key = task
            try:
                result = sampling(seeds, key)
            except Exception as exc:  # the parent names it in one line
                out.send(("error", f"{one_line(exc)} ({traceback.extract_tb(exc.__traceback__)[-1].name})"))
                return
            done = time.perf_counter()
            busy += done - t0
            out.send((b, *result))
    except (BrokenPipeError, ConnectionError, EOFError):
        return  # the training process closed our pipe: it stopped the run


def _drain_tasks(tasks, inbox: queue.Queue) -> None:
    """A sampler's task pipe into its inbox; None at the end (the parent sent None, closed its end
    or died)."""
    try:
        while True:
            task = tasks.recv()
            inbox.put(task)
            if task is None:
                return
    except Exception:
        inbox.put(None)


def _state(pid: int) -> str:
    """A process's state as /proc says (R, S, T stopped, Z, ...); "" where it cannot be read."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return ""


@contextlib.contextmanager
def _children_allowed():
    """multiprocessing forbids a daemonic process (distributed.launch starts its workers as daemons)
    to start processes, lest they be orphaned; the samplers cannot be: they die with their parent
    (:func:`~dynagnn.distributed.lifeline.die_with_parent`)."""
    import multiprocessing as mp

    config = mp.current_process()._config
    was = config.get("daemon")
    config["daemon"] = False
    try:
        yield
    finally:
        config["daemon"] = was


def _shutdown(procs: list, tasks: list, outs: list, grace: float = 1.0) -> None:
    """Stop the sampler processes ``procs`` (None down ``tasks`` where it cannot block, then SIGTERM,
    then SIGKILL, which also ends a stopped one) and close the pipes; the lists are emptied."""
    for conn, p in zip(tasks, procs):
        with contextlib.suppress(Exception):
            if p.is_alive() and select.select([], [conn.fileno()], [], 0)[1]:
                conn.send(None)  # a few bytes: the pipe has room for them
    deadline = time.monotonic() + grace
    for p in procs:
        p.join(max(0.0, deadline - time.monotonic()))
    for p in procs:
        if p.is_alive():
            p.terminate()
            with contextlib.suppress(OSError):
                os.kill(p.pid, signal.SIGCONT)  # a stopped sampler acts on the SIGTERM
    for p in procs:
        p.join(grace)
        if p.is_alive():
            p.kill()
            p.join(grace)
    for conn in tasks + outs:
        with contextlib.suppress(Exception):
            conn.close()
    procs.clear()
    tasks.clear()
    outs.clear()


class Pipeline:
    """The three stages over one run (sampler processes live as long as the pipeline).

    ``sampling``: what samples a batch (module doc); ``fetch(inputs, update)`` -> x on the device
    (the feature cache); ``device``; ``samplers``: processes (0: sample in the fetch thread);
    ``depth``: the bound of each queue; ``cores``: {stage: [cpu ids]} or None (no isolation);
    ``timeout``: seconds any stage waits for its producer (default :func:`sampler_timeout`).
    """

    def __init__(self, indptr, indices, fanouts, norm: str, fetch: Callable, device, *, samplers: int = 1,
                 depth: int = 4, cores: dict | None = None, poll: float = 0.2, timeout: float | None = None):
        self.sampling = _Sampling(indptr, indices, fanouts, norm)
        self.fetch = fetch
        self.device = torch.device(device)
        self.depth = max(1, int(depth))
        self.cores = cores or {}
        self.poll = poll
        self.timeout = sampler_timeout() if timeout is None else float(timeout)
        self.times = StageTimes()
        self._thread: threading.Thread | None = None
        self._waiting: tuple[int, float] | None = None  # (sampler, since when) the fetch thread waits for
        self.procs, self.tasks, self.outs = [], [], []
        # stops the samplers when the pipeline is collected, or at the interpreter's exit
        self._finalizer = weakref.finalize(self, _shutdown, self.procs, self.tasks, self.outs)
        if samplers > 0:
            ctx = tmp.get_context("spawn")
            self.sampling.share()
            try:
                with _children_allowed():
                    for i in range(int(samplers)):
                        task_r, task_w = ctx.Pipe(duplex=False)
                        out_r, out_w = ctx.Pipe(duplex=False)
                        p = ctx.Process(target=_sampler_main, args=(i, self.sampling, task_r, out_w,
                                                                     self.cores.get("sample")),
                                        daemon=True, name=f"dynagnn-sampler-{i}")
                        p.start()
                        task_r.close()  # the sampler's ends: only it holds them, so its death is an end of file
                        out_w.close()
                        self.procs.append(p)
                        self.tasks.append(task_w)
                        self.outs.append(out_r)
                # started (torch imported) before any epoch is timed; a start is waited for as long as a
                # worker's connect, not a batch: a busy machine's spawn and imports take seconds
                for i in range(len(self.procs)):
                    self._send(i, "times")
                    self._get(i, threading.Event(), max(self.timeout, connect_timeout()))
            except BaseException:
                self.close()
                raise
        if self.cores.get("train"):
            pin(self.cores["train"])
            torch.set_num_threads(len(self.cores["train"]))

    # ---- the sampler side, run by the fetch thread
    def _dead(self, i: int) -> SamplerError:
        p = self.procs[i]
        p.join(5 * self.poll)  # an end of file comes a moment before the exit status
        code = p.exitcode
        cause = "still running, but it closed its pipe" if code is None else \
            f"killed by signal {-code}" if code < 0 else f"exit code {code}"
        return SamplerError(f"sampler process {i} died ({cause}); the run stops, nothing was written")

    def _silent(self, i: int, seconds: float, variable: str = "DYNAGNN_SAMPLER_TIMEOUT") -> SamplerError:
        p = self.procs[i]
        state = _state(p.pid)
        how = " (it is stopped: SIGSTOP or a debugger; SIGCONT resumes it)" if state in ("T", "t") else \
            f" (alive, state {state})" if state else ""
        return SamplerError(f"sampler process {i} (pid {p.pid}) sent nothing for {seconds:.0f} s{how}; the run stops, "
                            f"nothing was written ({variable} sets the wait)")

    def _stalled(self, what: str) -> SamplerError:
        """The error for a fetch stage that ``what`` (the training side's wait ran out): the sampler it
        is stuck on, where it is inside one's batch (stopped half-way through), else the stage."""
        waiting = self._waiting
        if waiting is not None:
            return self._silent(waiting[0], time.monotonic() - waiting[1])
        return SamplerError(f"the fetch stage {what}; the run stops, nothing was written "
                            "(DYNAGNN_SAMPLER_TIMEOUT sets the wait)")

    def _send(self, i: int, task) -> None:
        self._waiting = (i, time.monotonic())
        try:
            self.tasks[i].send(task)
        except (BrokenPipeError, ConnectionError, EOFError, OSError):
            raise self._dead(i) from None
        finally:
            self._waiting = None

    def _get(self, i: int, stop: threading.Event, timeout: float | None = None):
        """The next message of sampler i; SamplerError once it is dead, failed or silent for
        ``timeout`` seconds (the pipeline's by default); None when ``stop`` is set first."""
        timeout = self.timeout if timeout is None else timeout
        conn, t0 = self.outs[i], time.monotonic()
        self._waiting = (i, t0)
        try:
            while not stop.is_set():
                try:
                    ready = conn.poll(self.poll)
                    msg = conn.recv() if ready else None
                except (EOFError, OSError):
                    raise self._dead(i) from None
                except Exception as exc:  # a batch that cannot be read: its sampler died while sending it
                    if not self.procs[i].is_alive():
                        raise self._dead(i) from None
                    raise SamplerError(f"sampler process {i} sent a batch that cannot be read ({one_line(exc)}); "
                                       "the run stops, nothing was written") from None
                if not ready:
                    if not self.procs[i].is_alive():
                        raise self._dead(i)
                    if time.monotonic() - t0 > timeout:
                        variable = "DYNAGNN_SAMPLER_TIMEOUT" if timeout == self.timeout else \
                            "DYNAGNN_CONNECT_TIMEOUT, at a sampler's start,"
                        raise self._silent(i, time.monotonic() - t0, variable)
                    continue
                if msg[0] == "error":
                    raise SamplerError(f"sampler process {i} failed: {msg[1]}; the run stops, nothing was written")
                return msg
            return None
        finally:
            self._waiting = None

    def _fetch_loop(self, batches, keys, update: bool, out: queue.Queue, stop: threading.Event) -> None:
        pin(self.cores.get("fetch"))
        k = len(self.procs)
        try:
            ahead = list(range(k))  # the next batch to hand each sampler (b = i mod k)

            def hand(i: int) -> None:  # sampler i gets its next batch, if it has one left
                b = ahead[i]
                if b < len(batches):
                    self._send(i, (b, np.asarray(batches[b], dtype=np.int64), keys[b]))
                    ahead[i] = b + k

            for i in range(k):   # each sampler starts with up to depth batches
                for _ in range(self.depth):
                    hand(i)
            for b, seeds in enumerate(batches):
                t0 = time.perf_counter()
                if k:
                    msg = self._get(b % k, stop)
                    if msg is None:
                        return
                    hand(b % k)
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
                self._send(i, "times")
                msg = self._get(i, stop)
                if msg is None:
                    return
                self.times.add("sample_busy", msg[1])
                self.times.add("sample_wait", msg[2])
        except BaseException as exc:  # handed to the training stage, which raises it
            put_unless_stopped(out, exc, stop, self.poll)

    def _take(self, out: queue.Queue, thread: threading.Thread):
        """The training stage's wait for the next batch: the fetch thread must be alive, and hand one
        over within the timeout (a little longer than its own wait for a sampler, whose error names
        the sampler)."""
        t0 = time.monotonic()
        while True:
            try:
                return out.get(timeout=self.poll)
            except queue.Empty:
                pass
            if not thread.is_alive():
                try:
                    return out.get_nowait()
                except queue.Empty:
                    raise SamplerError("the fetch stage ended without handing over a batch; the run stops, "
                                       "nothing was written") from None
            waited = time.monotonic() - t0
            if waited > self.timeout + 10 * self.poll + 1:
                raise self._stalled(f"handed over no batch for {waited:.0f} s")

    def batches(self, batches: list[np.ndarray], keys: list[tuple[int, int, int]], update: bool = True
                ) -> Iterator[Batch]:
        """The prepared batches of ``batches`` (seed arrays), in order; ``keys[b]`` seeds batch b's
        sampling; ``update``: whether the feature cache learns from them (training) or is only read."""
        self.finish()
        out: queue.Queue = queue.Queue(self.depth)
        stop = threading.Event()
        self._out = out
        self._thread = thread = threading.Thread(target=self._fetch_loop, args=(batches, keys, update, out, stop),
                                                 daemon=True, name="dynagnn-fetch")
        thread.start()
        taken = 0
        try:
            for _ in range(len(batches)):
                t0 = time.perf_counter()
                item = self._take(out, thread)
                self.times.add("train_wait", time.perf_counter() - t0)
                if isinstance(item, BaseException):
                    raise item
                taken += 1
                yield item
            self.finish()
        except GeneratorExit:
            if taken < len(batches):   # abandoned half-way: stop the stages (else: the next period joins)
                stop.set()
                self.close()
                thread.join(timeout=5 * self.poll + 1)
            raise
        except BaseException:
            stop.set()
            self.close()   # first: a fetch thread inside a stopped sampler's batch reads the end of file
            thread.join(timeout=5 * self.poll + 1)
            raise

    def finish(self) -> None:
        """Wait for the last period's fetch thread (its samplers' times come in after its last batch)."""
        if self._thread is not None:
            thread, t0 = self._thread, time.monotonic()
            while thread.is_alive():
                thread.join(self.poll)
                if thread.is_alive() and time.monotonic() - t0 > self.timeout + 10 * self.poll + 1:
                    error = self._stalled(f"did not finish its period in {self.timeout:.0f} s")
                    self._thread = None
                    self.close()
                    raise error
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
        """Stop the sampler processes (idempotent); later periods sample in the fetch thread."""
        self._finalizer()
