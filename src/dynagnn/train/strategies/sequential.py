"""One snapshot at a time on one worker: the loop PyTorch Geometric Temporal trains with.

For each window the recurrence starts from the model's initial state and steps through the
snapshots in order; with ``checkpoint_blocks`` > 1 the window is cut into ESDG time blocks
(:mod:`dynagnn.train.checkpoint`). Snapshots come from the feeder, in full or as graph differences.
A step of B windows back-propagates each window's loss / B as soon as it is computed, so memory
holds one window's activations whatever B is.
"""

from __future__ import annotations

import math
from typing import Sequence

import torch

from dynagnn.errors import ConfigError
from dynagnn.timing import section
from dynagnn.train.checkpoint import run_blocks
from dynagnn.train.strategies.base import Run, Strategy
from dynagnn.train.transfer import SnapshotFeeder


class Sequential(Strategy):
    name = "sequential"

    @classmethod
    def check(cls, config, model, num_nodes, workers):
        if workers != 1:
            raise ConfigError(f"the sequential strategy runs on 1 worker, not {workers}: use "
                              "--strategy vertex or snapshot for several")

    def setup(self, run: Run) -> None:
        super().setup(run)
        o = run.options
        self.checkpoint_blocks = int(o.get("checkpoint_blocks", 1))
        self.tbptt = o.get("tbptt")
        capacity = None
        if self.checkpoint_blocks > 1:
            capacity = math.ceil(run.window / self.checkpoint_blocks) + 1
        self.feeder = SnapshotFeeder(run.host, run.features, run.num_nodes, run.device,
                                     o.get("transfer", "full"), capacity, run.timer)
        self.model = run.model

    def _step(self, t: int, state):
        adj, x = self.feeder.get(t)
        # the model step outside its GCN operators is the recurrent part: gates, cells, weight evolution
        with section("rnn"):
            return self.model.step(adj, x, state)

    def embed(self, ts: Sequence[int]) -> torch.Tensor:
        state = self.model.initial_state(self.feeder.num_nodes, self.feeder.device)
        h, _ = run_blocks(self._step, ts, state, self.checkpoint_blocks, self.tbptt)
        return h

    def train_step(self, ends: Sequence[int]) -> float:
        return self.backward_windows(ends)
