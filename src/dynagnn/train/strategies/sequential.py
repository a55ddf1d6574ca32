"""One snapshot at a time on one worker: the loop PyTorch Geometric Temporal trains with.

For each window the recurrence starts from the model's initial state and steps through the
snapshots in order; with ``checkpoint_blocks`` > 1 the window is cut into ESDG time blocks
(:mod:`dynagnn.train.checkpoint`). Snapshots come from the feeder, in full or as graph differences.
A step of B windows back-propagates each window's loss / B as soon as it is computed, so memory
holds one window's activations whatever B is.

With ``pipeline`` "on" this is PiPAD's "-A" (PyGT-A): a producer thread (:mod:`dynagnn.train.pipeline`)
feeds snapshot t+1 (on a GPU through a side stream from pinned memory) while snapshot t computes; the
consumer's wait is the exposed ``transfer``.

Sequence mode ``carry`` (:class:`~dynagnn.train.options.SequenceMode`) is the loop PyTorch Geometric
Temporal's users run: the units are the training sequence's snapshots, the state is carried from one
to the next, and every snapshot's loss counts (the mean over a step's snapshots). ``tbptt`` k cuts the
sequence into pieces of k: the state is detached between pieces and each piece is back-propagated as
soon as it is computed (memory holds k snapshots' activations). ``step`` "epoch" makes the epoch one
optimiser step (the cumulative regime); "tbptt" one per piece (k = 1: the incremental regime).
Evaluation continues the state: validation from where the epoch's training ended, test from where
validation ended; units that follow no carried state (a loaded checkpoint) replay the sequence before
them without gradients first.
"""

from __future__ import annotations

import math
from typing import Sequence

import torch

from dynagnn.errors import ConfigError
from dynagnn.timing import section
from dynagnn.train.checkpoint import run_blocks
from dynagnn.train.options import WindowOptions
from dynagnn.train.pipeline import Prefetcher, bytes_only
from dynagnn.train.strategies.base import Run, Strategy
from dynagnn.train.transfer import SnapshotFeeder


class Sequential(Strategy):
    name = "sequential"
    simplicity = 0
    plain = True
    Options = WindowOptions
    family = "window"
    models = ("snapshot",)
    #: the run's own loop reads every snapshot: on a CPU its feeder copies them when built
    #: (SnapshotFeeder._preload); the group strategies' processes, which read their part, set it off
    preload = True

    def check(self, model, store, workers):
        if workers != 1:
            raise ConfigError(f"the sequential strategy runs on 1 worker, not {workers}: use "
                              "--strategy vertex or snapshot for several")
        o = self.options
        self.check_sequence(store)

    def setup(self, run: Run) -> None:
        super().setup(run)
        o = self.options
        self.checkpoint_blocks, self.tbptt = o.checkpoint_blocks, o.tbptt
        capacity = None
        if self.checkpoint_blocks > 1:
            capacity = math.ceil(run.window / self.checkpoint_blocks) + 1
        pipelined = o.pipeline == "on"
        # a pipelined feeder runs in the producer thread: it counts bytes, the consumer times the wait
        self.feeder = SnapshotFeeder(run.host, run.features, run.num_nodes, run.device, o.transfer,
                                     capacity, bytes_only(run.timer) if pipelined else run.timer,
                                     preload=self.preload)
        self.prefetch = Prefetcher(self.feeder.get, device=run.device, timer=run.timer) if pipelined else None
        self.model = run.model

    def start_epoch(self, epoch: int) -> None:
        super().start_epoch(epoch)
        if self.prefetch is not None:
            self.prefetch.take_stats()
            steps = self.steps(self.run.train_ends, self.run.batch_windows)
            ranges = self.sequence_ranges(steps) if self.carry else [ts for s in steps for ts in self.run.windows(s)]
            self.prefetch.schedule([t for ts in ranges for t in ts])

    def epoch_metrics(self, epoch: int, seconds: float) -> dict[str, float]:
        if self.prefetch is None:
            return {}
        self.prefetch.close()
        p = self.prefetch.take_stats()
        return {"transfer_exposed_s": p["exposed_s"], "transfer_hidden_s": p["hidden_s"]}

    def _step(self, t: int, state):
        adj, x = self.prefetch.get(t) if self.prefetch is not None else self.feeder.get(t)
        # the model step outside its GCN operators is the recurrent part: gates, cells, weight evolution
        with section("rnn"):
            return self.model.step(adj, x, state)

    def embed(self, ts: Sequence[int]) -> torch.Tensor:
        state = self.model.initial_state(self.feeder.num_nodes, self.feeder.device)
        h, _ = run_blocks(self._step, ts, state, self.checkpoint_blocks, self.tbptt)
        return h

    def train_step(self, ends: Sequence[int]) -> float:
        return self.backward_sequence(ends) if self.carry else self.backward_windows(ends)

    def run_sequence(self, ts: Sequence[int], state) -> tuple[list[torch.Tensor], tuple]:
        hs = []
        for t in ts:
            h, state = self._step(t, state)
            hs.append(h)
        return hs, state
