"""Per-phase wall time of training, exclusive of nested phases, with device synchronisation.

Phases (DESIGN.md): ``load`` (store to host), ``transfer`` (host to device), ``graph_op``
(aggregation), ``nn_op`` (dense update), ``rnn`` (the rest of a model step: gates, recurrent
cells, EvolveGCN's weight evolution, activations),
``head`` (the task's loss and head, forward and backward, down to the gradient of the embeddings),
``backward`` (the model's backward), ``optimizer``, and for multi-worker strategies
``communication`` and ``sync_wait``.
Event models (TGN, JODIE, APAN) add ``sample`` (temporal neighbour sampling and the batch's unique
ids), ``memory`` (memory and mailbox read and memory update), ``embed`` (embedding module and edge
scores) and ``mailbox`` (the batch's memory and mail written back).
``other`` collects the rest of an epoch (bookkeeping), so that the phases of an epoch
add up to its wall time.

Nesting is exclusive: T-GCN's graph convolutions run inside its GRU gates, so time spent in
``graph_op`` inside ``rnn`` counts as ``graph_op`` only. The library's operators call
:func:`section`, which costs one ``ContextVar`` lookup when no timer is active.

On a GPU, kernels are asynchronous: a section synchronises the device when it opens and closes, so
the time lands in the phase that launched the work. That adds synchronisation the untimed run would
not have; ``PhaseTimer(sync=False)`` keeps the coarse phases honest without it.
"""

from __future__ import annotations

import contextlib
import contextvars
import resource
import sys
import time
from collections import defaultdict

import torch

PHASES = ("load", "transfer", "graph_op", "nn_op", "rnn", "sample", "memory", "embed", "head", "backward",
          "optimizer", "mailbox", "communication", "sync_wait", "other")

_active: contextvars.ContextVar["PhaseTimer | None"] = contextvars.ContextVar("dynagnn_timer", default=None)


def peak_memory_bytes(device: torch.device | str) -> int:
    """Peak memory so far: ``torch.cuda.max_memory_allocated`` on a GPU, the process's peak RSS on CPU.

    Peak RSS cannot be reset within a process: compare nb settings in separate processes (the
    checkpointing benchmark does).
    """
    dev = torch.device(device)
    if dev.type == "cuda":
        return int(torch.cuda.max_memory_allocated(dev))
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return int(rss if sys.platform == "darwin" else rss * 1024)


class PhaseTimer:
    """Accumulates exclusive seconds per phase for the current epoch; ``rows()`` gives the table.

    Use ``with timer.epoch(e):`` around an epoch and ``with timer.phase("transfer"):`` (or the
    module-level :func:`section`) inside it.
    """

    def __init__(self, device: torch.device | str = "cpu", sync: bool = True):
        self.device = torch.device(device)
        self.sync = sync and self.device.type == "cuda"
        self._stack: list[list] = []  # [name, start, child_seconds]
        self._current: dict[str, float] = defaultdict(float)
        self._rows: list[dict] = []
        self.bytes_moved: dict[str, int] = defaultdict(int)
        # when a list: (time, innermost open phase or None) at every phase change, so the operator
        # timelines of co-located processes can be laid side by side (BLAD's measured overlap)
        self.trace: list | None = None

    def _now(self) -> float:
        if self.sync:
            torch.cuda.synchronize(self.device)
        return time.perf_counter()

    @contextlib.contextmanager
    def phase(self, name: str):
        start = self._now()
        self._stack.append([name, start, 0.0])
        if self.trace is not None:
            self.trace.append((start, name))
        try:
            yield
        finally:
            end = self._now()
            _, t0, child = self._stack.pop()
            total = end - t0
            self._current[name] += total - child
            if self._stack:
                self._stack[-1][2] += total
            if self.trace is not None:
                self.trace.append((end, self._stack[-1][0] if self._stack else None))

    @contextlib.contextmanager
    def epoch(self, epoch: int, worker: int = 0, warmup: bool = False):
        """Time one epoch; phases not opened explicitly go to ``other``."""
        self._current = defaultdict(float)
        token = _active.set(self)
        if self.device.type == "cuda":
            torch.cuda.reset_peak_memory_stats(self.device)
        start = self._now()
        try:
            yield self
        finally:
            _active.reset(token)
            wall = self._now() - start
            named = sum(self._current.values())
            self._current["other"] += max(0.0, wall - named)
            peak = peak_memory_bytes(self.device)
            for name in PHASES:
                if name in self._current:
                    self._rows.append({"epoch": epoch, "worker": worker, "phase": name,
                                       "seconds": self._current[name], "warmup": warmup,
                                       "peak_memory_bytes": peak})

    def add_bytes(self, kind: str, n: int) -> None:
        self.bytes_moved[kind] += int(n)

    def rows(self) -> list[dict]:
        return list(self._rows)

    def frame(self):
        import pandas as pd
        cols = ["epoch", "worker", "phase", "seconds", "warmup", "peak_memory_bytes"]
        return pd.DataFrame(self._rows, columns=cols)


def trace_segments(trace: list, kinds: dict[str, int]) -> tuple:
    """(start, end, kind) float64/float64/int64 arrays of the stretches of a timer's ``trace`` whose
    innermost phase has a kind in ``kinds`` (e.g. graph_op: 0, nn_op: 1), in time order."""
    import numpy as np

    rows = [(t0, t1, kinds[name]) for (t0, name), (t1, _) in zip(trace, trace[1:])
            if name in kinds and t1 > t0]
    if not rows:
        return np.zeros(0), np.zeros(0), np.zeros(0, dtype=np.int64)
    a = np.array(rows, dtype=np.float64)
    return a[:, 0], a[:, 1], a[:, 2].astype(np.int64)


def active() -> PhaseTimer | None:
    return _active.get()


def section(name: str):
    """A timed phase of the active timer, or a no-op when none is active."""
    timer = _active.get()
    return timer.phase(name) if timer is not None else contextlib.nullcontext()


def summary(frame, exclude_warmup: bool = True):
    """Median seconds per phase over epochs (warm-up epochs excluded): a Series indexed by phase."""
    f = frame[~frame["warmup"]] if exclude_warmup and frame["warmup"].any() and not frame["warmup"].all() else frame
    per_epoch = f.groupby(["epoch", "phase"])["seconds"].sum().unstack(fill_value=0.0)
    return per_epoch.median()
