"""One snapshot at a time on one worker: the loop PyTorch Geometric Temporal trains with.

For each window the recurrence starts from the model's initial state and steps through the
snapshots in order; with ``checkpoint_blocks`` > 1 the window is cut into ESDG time blocks
(:mod:`dynagnn.train.checkpoint`). Snapshots come from the feeder, in full or as graph differences.
"""

from __future__ import annotations

from typing import Sequence

import torch

from dynagnn.train.checkpoint import run_blocks
from dynagnn.train.strategies.base import Strategy
from dynagnn.timing import section


class Sequential(Strategy):
    name = "sequential"

    def __init__(self, checkpoint_blocks: int = 1, tbptt: int | None = None):
        self.checkpoint_blocks = int(checkpoint_blocks)
        self.tbptt = tbptt

    def _step(self, t: int, state):
        adj, x = self.feeder.get(t)
        # the model step outside its GCN operators is the recurrent part: gates, cells, weight evolution
        with section("rnn"):
            return self.model.step(adj, x, state)

    def embed(self, ts: Sequence[int]) -> torch.Tensor:
        state = self.model.initial_state(self.feeder.num_nodes, self.feeder.device)
        h, _ = run_blocks(self._step, ts, state, self.checkpoint_blocks, self.tbptt)
        return h
