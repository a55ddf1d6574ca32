"""PiPAD on one worker (PPoPP'23): the ``frames`` strategy runs each window through the frame engine
(:mod:`dynagnn.train.frame_engine`: parallel aggregation over a frame's snapshots, inter-frame reuse
of ``Â_t X_t``, the pipelined feed, the tuner deciding S at run time).

Every option of PiPAD's ladder runs this one code path: ``frame_reuse`` off and ``pipeline`` off is
PiPAD's parallel GNN alone; ``frame_size`` 1 with reuse is "-R" (one snapshot at a time with the
reuse cache); ``sequential`` with ``pipeline`` on is "-A".

In sequence mode ``carry`` (PyTorch Geometric Temporal's loop, the loop PiPAD's frames are built for)
the frames are S consecutive snapshots of the carried training sequence (of each tbptt piece): the
engine runs each piece from the carried state and returns every snapshot's embedding. The tuner's
trials then time pieces of at most 16 snapshots (PiPAD's frame cap) from the initial state.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import torch

from dynagnn.errors import ConfigError
from dynagnn.train.frame_engine import engine_for
from dynagnn.train.options import LinkNegatives, Pipelining, SequenceMode, Speed, Truncation, option
from dynagnn.train.strategies.base import Run, Strategy


@dataclass(frozen=True)
class FramesOptions(Pipelining):
    """PiPAD's frames: S, the reuse of the first aggregation, the tuner's memory bound, the pipeline."""

    frame_size: int | None = option(None, "frames strategy (PiPAD): snapshots per frame, S (null = the tuner's "
                                    "choice after a profiling epoch)", Speed((2, 4, 8, 16), window=True),
                                    type=["integer", "null"], minimum=1)
    frame_reuse: str = option("on", "frames strategy: keep Â_t X_t of the first aggregation for later frames and "
                              "epochs (models whose first aggregation reads only X_t)", enum=["on", "off"])
    frame_memory_mb: float | None = option(None, "frames strategy: the tuner's memory bound in MiB (null = half the "
                                           "free GPU memory, a quarter of the host's on CPU)",
                                           type=["number", "null"], exclusiveMinimum=0)


def runs_frames(strategy) -> bool:
    """Whether a strategy (its registry name, or its class) runs PiPAD's frame engine: its options
    are the frames' (frames, group_frames). The chooser's prediction and memory model ask it."""
    if isinstance(strategy, str):
        from dynagnn.train.strategies import strategy_class

        strategy = strategy_class(strategy)
    return issubclass(strategy.Options, FramesOptions)


@dataclass(frozen=True)
class FramesStrategyOptions(FramesOptions, SequenceMode, Truncation, LinkNegatives):
    """The frames strategy's: PiPAD's frames, the sequence mode (tbptt cuts a carried sequence) and
    the link task's evaluation negatives."""


TRIAL_SPAN = 16   # the longest range a tuner's trial times in carry mode (PiPAD's frame cap)
WHOLE_FRAMES = "the frames strategy runs whole frames: set checkpoint_blocks 1 and tbptt null"
NO_DIFFERENCES = "the frames strategy feeds overlap-aware partitions, not graph differences: set transfer full"


class Frames(Strategy):
    """PiPAD on one worker: the frame engine over each window (module docstring)."""

    name = "frames"
    simplicity = 1
    Options = FramesStrategyOptions
    family = "window"
    refuses = {"checkpoint_blocks": WHOLE_FRAMES, "transfer": NO_DIFFERENCES}

    def check(self, model, store, workers):
        if workers != 1:
            raise ConfigError(f"the frames strategy runs on 1 worker, not {workers} (it composes with group "
                              "inside each process)")
        if not self.check_sequence(store) and self.options.tbptt:
            raise ConfigError(f"{WHOLE_FRAMES} (tbptt cuts a carried sequence: sequence: carry)")

    def setup(self, run: Run) -> None:
        super().setup(run)
        span = (self.options.tbptt or len(run.train_ends)) if self.carry else None
        self.engine = engine_for(run, self.options, span)
        self.engine.prepare_host(self._epoch_windows())

    def _epoch_windows(self) -> list[list[int]]:
        """The training windows (carry mode: ranges) in the order the epoch's steps run them."""
        steps = self.steps(self.run.train_ends, self.run.batch_windows)
        if self.carry:
            return self.sequence_ranges(steps)
        return [w for s in steps for w in self.run.windows(s)]

    def _trial_ranges(self) -> list[list[int]]:
        """What the tuner's trials time: the epoch's windows; in carry mode its ranges cut to pieces of
        at most TRIAL_SPAN snapshots (a trial of a whole sequence per candidate would cost an epoch)."""
        if not self.carry:
            return self._epoch_windows()
        k = min(TRIAL_SPAN, self.options.tbptt or TRIAL_SPAN)
        return [r[i:i + k] for r in self._epoch_windows() for i in range(0, len(r), k)]

    def start_epoch(self, epoch: int) -> None:
        super().start_epoch(epoch)
        self.engine.start_epoch(self._epoch_windows())

    def embed(self, ts: Sequence[int]) -> torch.Tensor:
        state = self.run.model.initial_state(self.run.num_nodes, self.run.device)
        hs, _ = self.engine.forward(ts, state)
        return hs[-1]

    def train_step(self, ends: Sequence[int]) -> float:
        return self.backward_sequence(ends) if self.carry else self.backward_windows(ends)

    def run_sequence(self, ts: Sequence[int], state) -> tuple[list[torch.Tensor], tuple]:
        return self.engine.forward(ts, state)

    def _trial_step(self, ts: Sequence[int]) -> None:
        """The tuner's trial of a range: one window's training step (:meth:`backward_windows` of its
        end), or in carry mode the range's piece from the initial state (the carried state untouched)."""
        if self.carry:
            self.backward_piece(list(ts), self.initial_sequence_state(), 1.0 / len(ts))
        else:
            self.backward_windows([ts[-1]])

    def epoch_metrics(self, epoch: int, seconds: float) -> dict[str, float]:
        return self.engine.end_epoch(seconds, self._trial_ranges, step=self._trial_step,
                                     params=self.run.parameters())
