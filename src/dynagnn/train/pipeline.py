"""PiPAD's pipelined feed (PiPAD §4.3; notes/pipad.md §2, §7.1 item 8): a producer prepares the next
items (frames, or snapshots for sequential "-A") while the consumer computes the current one.

- CPU: a producer thread and a bounded queue (``depth`` items ahead). The "device" is the host, so
  the producer's work is the partition decision and building on the host what an item reads (a
  frame reads the host's partitions themselves, not copies).
- GPU: the same thread, but every host-to-device copy it makes runs on a side CUDA stream from
  pinned memory with ``non_blocking=True``; an event recorded after the copies tells the consumer when
  the item has landed, and the consumer's stream is made to wait for it (``record_stream`` keeps the
  caching allocator from handing the buffers back to the side stream while the consumer still reads
  them).

The consumer's wait (for the queue, then for the copies' event) is timed as ``transfer``: the exposed
part of the feed. The producer's own busy time minus that wait is the part the pipeline hid
(:attr:`Prefetcher.stats`: ``exposed_s``, ``busy_s``, ``hidden_s``). The producer never touches the
:class:`~dynagnn.timing.PhaseTimer` (it is single-threaded): byte counts go through
:func:`bytes_only`.

An item is asked for by key; the producer works through the keys given to :meth:`Prefetcher.schedule`
in order. A key that is not the next one prepared (an evaluation window, a checkpointed re-run, a
schedule that changed) is prepared in the consumer's thread instead: the result is the same, only
not hidden.
"""

from __future__ import annotations

import contextlib
import logging
import queue
import sys
import threading
import time
from typing import Any, Callable, Hashable, Iterable

import torch

from dynagnn.timing import PhaseTimer

log = logging.getLogger(__name__)

_DONE = object()

# The GIL's switch interval while a producer runs. At Python's default (5 ms) a consumer that returns
# from a torch operator can wait that long for the producer's thread to give the GIL back: on CPU
# that convoy cost more than the pipeline hid (T-GCN on CollegeMsg: the exposed wait fell from 5% to
# 2% of the epoch at 0.2 ms).
SWITCH_INTERVAL_S = 2e-4


def producer_has_core(device, processes: int = 1) -> bool:
    """Whether a producer thread would have a core of its own: the work runs on a GPU (the thread
    only feeds it), or the ``processes`` of this machine's job (this one and its peers, each with
    as many torch threads and a producer of its own) fit their threads and producers in the cores
    this process may use (logical CPUs). Where it
    would not, a pipeline's "auto" starts off: the thread's preparation competes with the torch
    threads for their cores (CollegeMsg daily, T-GCN in frames of 4, 2 threads on 2 cores: 6.1-7.1 s
    per epoch with the pipeline, 1.5-1.7 s without; TGN's events at 2 of 2 threads 0.98x)."""
    from dynagnn.distributed.launch import available_cores

    return torch.device(device).type == "cuda" or (torch.get_num_threads() + 1) * max(1, int(processes)) <= available_cores()


class bytes_only:
    """A stand-in timer for work done in the producer thread: byte counts go to ``timer``, phases are
    not opened (the consumer times the wait instead)."""

    def __init__(self, timer: PhaseTimer | None):
        self._timer = timer

    def add_bytes(self, kind: str, n: int) -> None:
        if self._timer is not None:
            self._timer.add_bytes(kind, n)

    def phase(self, name: str):
        return contextlib.nullcontext()


def tensors_of(obj) -> Iterable[torch.Tensor]:
    """Every tensor inside ``obj`` (tensors, sparse CSR tensors' parts, dataclasses, lists, tuples,
    dicts), for ``record_stream``."""
    if isinstance(obj, torch.Tensor):
        if obj.layout == torch.sparse_csr:
            yield from (obj.crow_indices(), obj.col_indices(), obj.values())
        else:
            yield obj
    elif isinstance(obj, (list, tuple)):
        for o in obj:
            yield from tensors_of(o)
    elif isinstance(obj, dict):
        for o in obj.values():
            yield from tensors_of(o)
    elif hasattr(obj, "__dict__"):
        for o in vars(obj).values():
            yield from tensors_of(o)


def put_unless_stopped(q: queue.Queue, item, stop: threading.Event, poll: float = 0.1) -> None:
    """Put ``item`` on the bounded queue, waiting for room, unless ``stop`` is set meanwhile (looked
    at every ``poll`` seconds)."""
    while not stop.is_set():
        try:
            q.put(item, timeout=poll)
            return
        except queue.Full:
            continue


class Prefetcher:
    """Runs ``prepare(key)`` ahead of the consumer (module docstring).

    ``prepare``: key -> item, safe to run in another thread (calls are serialised by a lock, so it
    never runs twice at once). ``enabled`` False: every item is prepared when asked for (no thread).
    ``device``: where the items go (a CUDA device turns on the side stream and events). ``timer``:
    where the consumer's wait is timed as ``transfer``.
    """

    def __init__(self, prepare: Callable[[Hashable], Any], *, enabled: bool = True, depth: int = 2,
                 device: torch.device | str = "cpu", timer: PhaseTimer | None = None):
        self.prepare = prepare
        self.enabled = bool(enabled)
        self.depth = max(1, int(depth))
        self.device = torch.device(device)
        self.timer = timer
        self.gpu = self.device.type == "cuda"
        # made whatever ``enabled`` says now: a pipeline that starts off may be turned on by the tuner
        self.stream = torch.cuda.Stream(self.device) if self.gpu else None
        self._lock = threading.RLock()
        self._queue: queue.Queue | None = None
        self._thread: threading.Thread | None = None
        self._stop = threading.Event()
        self._error: BaseException | None = None
        self.stats = {"exposed_s": 0.0, "inline_s": 0.0, "busy_s": 0.0, "copy_s": 0.0, "prefetched": 0,
                      "inline": 0}

    # ---- producer -------------------------------------------------------------------------------
    def _produce_one(self, key):
        """(item, event or None, copy-timing events or None), prepared in this thread."""
        if self.stream is None:
            with self._lock:
                return self.prepare(key), None, None
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        with self._lock, torch.cuda.stream(self.stream):
            start.record(self.stream)
            item = self.prepare(key)
            end.record(self.stream)
        return item, end, start

    def _run(self, keys: list, stop: threading.Event, q: queue.Queue) -> None:
        try:
            for key in keys:
                if stop.is_set():
                    return
                t0 = time.perf_counter()
                out = self._produce_one(key)
                self.stats["busy_s"] += time.perf_counter() - t0
                put_unless_stopped(q, (key, out), stop)
        except BaseException as exc:  # handed to the consumer, never lost in the thread
            self._error = exc
        finally:
            put_unless_stopped(q, (_DONE, None), stop)

    def schedule(self, keys: Iterable[Hashable]) -> None:
        """Start preparing ``keys`` in order (what the consumer will ask for next); forgets any
        earlier schedule."""
        self.close()
        keys = list(keys)
        if not self.enabled or not keys:
            return
        self._stop = threading.Event()
        self._queue = queue.Queue(maxsize=self.depth)
        self._error = None
        self._thread = threading.Thread(target=self._run, args=(keys, self._stop, self._queue),
                                        name="dynagnn-prefetch", daemon=True)
        self._switch = sys.getswitchinterval()
        sys.setswitchinterval(min(self._switch, SWITCH_INTERVAL_S))
        self._thread.start()

    def in_producer(self) -> bool:
        """Whether the calling thread is the producer (preparing ahead of the consumer)."""
        return self._thread is not None and threading.current_thread() is self._thread

    def close(self) -> None:
        """Stop the producer (if any) and drop what it prepared."""
        if self._thread is not None:
            self._stop.set()
            self._thread.join()
            sys.setswitchinterval(self._switch)
        self._thread, self._queue = None, None

    # ---- consumer -------------------------------------------------------------------------------
    @property
    def lock(self):
        """Held while ``prepare`` runs: take it to touch what ``prepare`` touches from the consumer."""
        return self._lock

    def _phase(self):
        return self.timer.phase("transfer") if self.timer is not None else contextlib.nullcontext()

    def get(self, key: Hashable):
        """The item for ``key``: the producer's when it is the next one prepared, else prepared here.
        The wait is timed as ``transfer``."""
        with self._phase():
            t0 = time.perf_counter()
            inline = False
            try:
                if self._queue is not None:
                    got, out = self._queue.get()
                    if got is _DONE or got != key:
                        if self._error is not None:
                            err, self._error = self._error, None
                            self.close()
                            raise err
                        log.debug("prefetch: asked for %r, next prepared is %r: preparing here", key, got)
                        self.close()
                    else:
                        item, ev, start = out
                        if ev is not None:
                            cur = torch.cuda.current_stream(self.device)
                            cur.wait_event(ev)
                            ev.synchronize()     # the exposed part of the copy is waited for here
                            self.stats["copy_s"] += start.elapsed_time(ev) / 1e3
                            for t in tensors_of(item):
                                if t.device.type == "cuda":
                                    t.record_stream(cur)
                        self.stats["prefetched"] += 1
                        return item
                self.stats["inline"] += 1
                inline = True
                with self._lock:
                    return self.prepare(key)
            finally:
                dt = time.perf_counter() - t0
                self.stats["exposed_s"] += dt
                if inline:
                    self.stats["inline_s"] += dt

    def take_stats(self) -> dict:
        """The counters since the last call: exposed (the consumer's whole wait, inline preparation
        included), busy (the producer's preparation), copy (GPU: the side stream's copies), hidden =
        busy + copy - the wait for prefetched items (never below 0)."""
        s = dict(self.stats)
        s["hidden_s"] = max(0.0, s["busy_s"] + s["copy_s"] - (s["exposed_s"] - s["inline_s"]))
        for k in self.stats:
            self.stats[k] = 0 if isinstance(self.stats[k], int) else 0.0
        return s

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass
