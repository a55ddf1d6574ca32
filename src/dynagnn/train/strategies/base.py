"""The strategy interface the engine calls.

The engine owns epochs, losses, the optimiser, evaluation and outputs; a strategy owns how the
embeddings at the end of a window are produced: which snapshots go where, in what order, with what
overlap of transfer and compute. Multi-worker strategies also own the communication and make
``train_step`` collective.
"""

from __future__ import annotations

from typing import Sequence

import torch

from dynagnn.models.base import DynamicGNN
from dynagnn.train.transfer import SnapshotFeeder


class Strategy:
    name = ""

    def setup(self, model: DynamicGNN, feeder: SnapshotFeeder) -> None:
        self.model = model
        self.feeder = feeder

    def embed(self, ts: Sequence[int]) -> torch.Tensor:
        """Embeddings [N, H] at the last snapshot of the window ``ts`` (consecutive snapshot indices)."""
        raise NotImplementedError
