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
from dynagnn.train.strategies.base import Run, Strategy, head_backward
from dynagnn.train.transfer import SnapshotFeeder


class Sequential(Strategy):
    name = "sequential"
    Options = WindowOptions
    family = "window"
    models = ("snapshot",)

    def check(self, model, store, workers):
        if workers != 1:
            raise ConfigError(f"the sequential strategy runs on 1 worker, not {workers}: use "
                              "--strategy vertex or snapshot for several")
        o = self.options
        if o.sequence == "carry" and o.checkpoint_blocks > 1:
            raise ConfigError("sequence carry with checkpoint_blocks > 1: ESDG's time blocks checkpoint a window; "
                              "in carry mode bound the memory with tbptt instead")
        if o.step == "tbptt" and o.sequence == "window":
            raise ConfigError("step: tbptt steps the optimiser per tbptt piece of a carried sequence; it needs "
                              "sequence: carry (or auto on a pyg-temporal-json regress store)")

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
                                     capacity, bytes_only(run.timer) if pipelined else run.timer)
        self.prefetch = Prefetcher(self.feeder.get, device=run.device, timer=run.timer) if pipelined else None
        self.model = run.model
        self.carry = run.sequence == "carry"
        if self.carry and o.step == "tbptt" and not o.tbptt:
            raise ConfigError("step: tbptt needs tbptt: k, the snapshots per optimiser step (1: a step per snapshot)")
        self._carried: tuple[int, tuple] | None = None   # (the next snapshot, the state before it)

    def steps(self, ends: Sequence[int], batch_windows: int) -> list[list[int]]:
        """Window mode: B windows a step. Carry mode: the whole training sequence, or pieces of tbptt
        snapshots with ``step`` "tbptt"."""
        if not self.carry:
            return super().steps(ends, batch_windows)
        ends = list(ends)
        k = self.tbptt if self.options.step == "tbptt" else len(ends)
        return [ends[i:i + k] for i in range(0, len(ends), max(1, k))]

    def start_epoch(self, epoch: int) -> None:
        self._carried = None
        if self.prefetch is not None:
            self.prefetch.take_stats()
            train = self.run.train_ends
            if self.carry:  # the snapshots before the first training unit, then the sequence
                order = list(range(train[0])) + train if train else []
            else:
                steps = self.steps(train, self.run.batch_windows)
                order = [t for s in steps for ts in self.run.windows(s) for t in ts]
            self.prefetch.schedule(order)

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

    # ---- sequence mode "carry" -----------------------------------------------------------------------
    def state_before(self, t0: int) -> tuple:
        """The carried state before snapshot ``t0``: where the last training step or evaluation ended
        there, that state; else the sequence 0..t0-1 replayed from the initial state, without gradients."""
        if self._carried is not None and self._carried[0] == t0:
            return self._carried[1]
        state = self.model.initial_state(self.feeder.num_nodes, self.feeder.device)
        if t0 > 0:
            with torch.no_grad():
                _, state = run_blocks(self._step, range(t0), state)
        return state

    def backward_sequence(self, ends: Sequence[int]) -> float:
        """The step over the consecutive snapshots ``ends``, the state carried in: each snapshot's loss
        / len(ends), back-propagated piece by piece (``tbptt`` snapshots each, the state detached
        between pieces). Returns the step's loss (a non-finite one as soon as it appears)."""
        run = self.run
        ends = list(ends)
        if ends != list(range(ends[0], ends[0] + len(ends))):
            raise ValueError(f"sequence carry steps through consecutive snapshots, not {ends}")
        state = self.state_before(ends[0])   # the initial state keeps its parameters (EvolveGCN's W_0)
        k = self.tbptt or len(ends)
        total = 0.0
        for i in range(0, len(ends), k):
            hs, grads = [], []
            for t in ends[i:i + k]:
                h, state = self._step(t, state)
                loss, grad = head_backward(run, h, t, 1.0 / len(ends))
                if not math.isfinite(loss):
                    return loss
                total += loss
                if grad is not None:
                    hs.append(h)
                    grads.append(grad)
            if hs:
                with run.timer.phase("backward"):
                    torch.autograd.backward(hs, grads)
            state = tuple(s.detach() for s in state)
        self._carried = (ends[-1] + 1, state)
        return total

    @torch.no_grad()
    def evaluate(self, units: Sequence[int]) -> dict[str, float]:
        if not self.carry:
            return super().evaluate(units)
        run = self.run
        units = list(units)
        embeddings = {}
        if units:
            state = self.state_before(units[0])
            for t in range(units[0], units[-1] + 1):
                h, state = self._step(t, state)
                if t in units:
                    embeddings[t] = h
            self._carried = (units[-1] + 1, state)
        return run.task.evaluate(run.head, embeddings)
