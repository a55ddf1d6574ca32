"""The strategy contract (DESIGN.md, "Training on many workers").

The engine owns epochs, the optimiser step, evaluation, early stopping and the outputs. A strategy
decides where the windows, snapshots or vertices of a step go and what crosses between workers; it
never changes what the step computes. So every strategy, on any number of workers, gives the loss
and gradients of :class:`~dynagnn.train.strategies.sequential.Sequential` with the same B.

- ``check(config, model, num_nodes, workers)`` (class method, before any process starts): raise a
  :class:`~dynagnn.errors.ConfigError` naming what to change when the strategy cannot serve the run.
- ``setup(run)``: ``run`` is a :class:`Run` (store, task, model, head, timer, DistContext, Comm, ...).
- ``train_step(ends)``: collective. The forward, backward and communication of one step, the B
  windows ending at ``ends``; its loss is the mean of the windows' losses. On return every worker
  holds the full gradient of that loss in ``.grad`` (the engine then steps the optimiser); the
  loss is returned as a float, the same on every worker.
- ``embed(ts)``: collective, evaluation: the embeddings [N, H] at the end of the window ``ts``
  (consecutive snapshot indices), on rank 0 (other ranks may return None).
- ``steps(ends, B)`` (after setup): the epoch's steps, lists of window ends; by default the training
  windows in order, B at a time. A strategy that places windows by a plan composes its steps from
  the plan (BLAD's groups: each step takes its share of every worker's groups).
- ``procs_per_worker`` (class attribute): processes per worker (device); BLAD's pair is 2.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Sequence

import numpy as np
import torch

from dynagnn.dist.comm import Comm
from dynagnn.dist.context import DistContext
from dynagnn.models.base import DynamicGNN
from dynagnn.timing import PhaseTimer


@dataclass
class Run:
    """What a strategy works with: one process's view of the training run.

    ``host``: every snapshot's normalised adjacency on the host (HostSnapshot list); ``features``
    float32 [N, F] or [T, N, F]; ``window``: snapshots per window l; ``options``: the strategy's
    settings from the training config (checkpoint_blocks, tbptt, transfer, partitioner, seed).
    """

    store: Any
    task: Any
    model: DynamicGNN
    head: torch.nn.Module
    timer: PhaseTimer
    ctx: DistContext
    comm: Comm
    host: list
    features: np.ndarray
    window: int
    batch_windows: int = 1
    options: dict = field(default_factory=dict)
    epoch: int = 0
    train_ends: list = field(default_factory=list)

    @property
    def num_nodes(self) -> int:
        return int(self.store.num_nodes)

    @property
    def device(self) -> torch.device:
        return self.ctx.device

    def windows(self, ends: Sequence[int]) -> list[list[int]]:
        return [list(range(t - self.window + 1, t + 1)) for t in ends]

    def parameters(self) -> list[torch.nn.Parameter]:
        return list(self.model.parameters()) + list(self.head.parameters())


class Strategy:
    name = ""
    procs_per_worker = 1

    def __init__(self, **options):
        self.options = options

    @classmethod
    def check(cls, config, model: DynamicGNN, num_nodes: int, workers: int) -> None:
        """Raise ConfigError if this strategy cannot serve ``model`` on ``workers`` workers."""

    def setup(self, run: Run) -> None:
        self.run = run

    def train_step(self, ends: Sequence[int]) -> float:
        raise NotImplementedError

    def embed(self, ts: Sequence[int]) -> torch.Tensor | None:
        raise NotImplementedError

    def epoch_metrics(self, epoch: int, seconds: float) -> dict[str, float]:
        """Collective, after each training epoch of ``seconds``: the strategy's own per-epoch figures
        for metrics.parquet (the same on every worker; default none)."""
        return {}

    def steps(self, ends: Sequence[int], batch_windows: int) -> list[list[int]]:
        """The training windows' end snapshots cut into steps of B, in order (the last may be shorter)."""
        ends, b = list(ends), int(batch_windows)
        return [ends[i:i + b] for i in range(0, len(ends), b)]

    def backward_windows(self, ends: Sequence[int], scale: float = 1.0) -> float:
        """For each window: its loss / B from :meth:`embed`, back-propagated (times ``scale``) at once,
        so memory holds one window's activations whatever B is. Returns the step's loss (a
        non-finite one as soon as it appears, for the engine to stop on)."""
        run = self.run
        total = 0.0
        for t, ts in zip(ends, run.windows(ends)):
            loss = run.task.loss(run.head, self.embed(ts), t, run.epoch) / len(ends)
            if not torch.isfinite(loss):
                return float(loss.detach())
            with run.timer.phase("backward"):
                (loss * scale if scale != 1.0 else loss).backward()
            total += float(loss.detach())
        return total
