"""PiPAD on one worker (PPoPP'23): the ``frames`` strategy runs each window through the frame engine
(:mod:`dynagnn.train.frame_engine`: parallel aggregation over a frame's snapshots, inter-frame reuse
of ``Â_t X_t``, the pipelined feed, the tuner deciding S at run time).

Every option of PiPAD's ladder runs this one code path: ``frame_reuse`` off and ``pipeline`` off is
PiPAD's parallel GNN alone; ``frame_size`` 1 with reuse is "-R" (one snapshot at a time with the
reuse cache); ``sequential`` with ``pipeline`` on is "-A".
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import torch

from dynagnn.errors import ConfigError
from dynagnn.train.frame_engine import engine_for
from dynagnn.train.options import Pipelining, option
from dynagnn.train.strategies.base import Run, Strategy


@dataclass(frozen=True)
class FramesOptions(Pipelining):
    """PiPAD's frames: S, the reuse of the first aggregation, the tuner's memory bound, the pipeline."""

    frame_size: int | None = option(None, "frames strategy (PiPAD): snapshots per frame, S (null = the tuner's "
                                    "choice after a profiling epoch)", type=["integer", "null"], minimum=1)
    frame_reuse: str = option("on", "frames strategy: keep Â_t X_t of the first aggregation for later frames and "
                              "epochs (models whose first aggregation reads only X_t)", enum=["on", "off"])
    frame_memory_mb: float | None = option(None, "frames strategy: the tuner's memory bound in MiB (null = half the "
                                           "free GPU memory, a quarter of the host's on CPU)",
                                           type=["number", "null"], exclusiveMinimum=0)


WHOLE_FRAMES = "the frames strategy runs whole frames: set checkpoint_blocks 1 and tbptt null"
NO_DIFFERENCES = "the frames strategy feeds overlap-aware partitions, not graph differences: set transfer full"


class Frames(Strategy):
    """PiPAD on one worker: the frame engine over each window (module docstring)."""

    name = "frames"
    Options = FramesOptions
    family = "window"
    refuses = {"checkpoint_blocks": WHOLE_FRAMES, "tbptt": WHOLE_FRAMES, "transfer": NO_DIFFERENCES}

    def check(self, model, store, workers):
        if workers != 1:
            raise ConfigError(f"the frames strategy runs on 1 worker, not {workers} (it composes with group "
                              "inside each process)")

    def setup(self, run: Run) -> None:
        super().setup(run)
        self.engine = engine_for(run, self.options)
        self.engine.prepare_host(self._epoch_windows())

    def _epoch_windows(self) -> list[list[int]]:
        """The training windows in the order the epoch's steps run them."""
        return [w for s in self.steps(self.run.train_ends, self.run.batch_windows) for w in self.run.windows(s)]

    def start_epoch(self, epoch: int) -> None:
        self.engine.start_epoch(self._epoch_windows())

    def embed(self, ts: Sequence[int]) -> torch.Tensor:
        state = self.run.model.initial_state(self.run.num_nodes, self.run.device)
        hs, _ = self.engine.forward(ts, state)
        return hs[-1]

    def train_step(self, ends: Sequence[int]) -> float:
        return self.backward_windows(ends)

    def _trial_step(self, ts: Sequence[int]) -> None:
        """One window's training step, the tuner's trials: :meth:`backward_windows` of its end."""
        self.backward_windows([ts[-1]])

    def epoch_metrics(self, epoch: int, seconds: float) -> dict[str, float]:
        return self.engine.end_epoch(seconds, self._epoch_windows, step=self._trial_step,
                                     params=self.run.parameters())
