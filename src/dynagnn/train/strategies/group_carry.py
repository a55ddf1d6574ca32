"""The group strategies' sequence mode ``carry`` (:class:`~dynagnn.train.options.SequenceMode`; group,
blad_nm and blad_even): their pair of processes over the pieces of one carried sequence, a mixin of
:class:`~dynagnn.train.strategies.group.GroupPipeline` that uses its channel, its local
:class:`~dynagnn.train.strategies.sequential.Sequential`, its state hand-over and its snapshots'
predicted costs. Apart from :mod:`dynagnn.train.strategies.group` because it is a second programme of
the pair, with its own split and message order, sharing none of the window mode's plan, queue or
re-plan.

The carried sequence is one chain of states, so it runs on one worker, and BLAD's groups are the
contiguous pieces the sequence is cut into (``tbptt`` k; the whole training sequence without it).
p1 runs the first part of each piece from the carried state and hands the state to p2, which runs the
rest and hands the state at the piece's end straight back (detached: the next piece's start), before
its own losses and backward; it then sends the gradient of the received state, from which p1 runs the
piece's deferred backward. Each process scores the snapshots it runs. So p1's forward of piece j+1
overlaps p2's backward of piece j, and p1's deferred backward of piece j overlaps p2's forward of
piece j+1: with tbptt and ``step`` "epoch" only (one piece has nothing to overlap, and a step per
piece ends in the gradient all-reduce; with tbptt 1 every piece is p1's alone). The split is each
piece's load-balanced one by the snapshots' predicted cost, edges plus vertices (blad_even: the
middle); a plan given (the workflow passes one to every BLAD run) is not read, with a log line, and the
operator order stays ``"auto"``. group_frames does not carry a sequence.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np
import torch

from dynagnn.train.strategies.base import head_backwards
from dynagnn.train.backward import backward


class CarryPair:
    """p1's and p2's steps over a carried sequence's tbptt pieces, its evaluation and its split (module
    docstring)."""

    def _carry_split(self, piece: Sequence[int]) -> int:
        """How many of ``piece``'s snapshots p1 runs: the point that halves their predicted cost (edges
        plus vertices: the aggregation and the dense operators), at least one each; blad_even: the
        middle. A piece of one snapshot is p1's alone."""
        n = len(piece)
        if n < 2:
            return n
        if self.baseline:
            return n // 2
        cum = np.cumsum(self.cost[list(piece)])
        return int(np.argmin(np.abs(2 * cum[:-1] - cum[-1]))) + 1

    def _carry_head(self, ends: Sequence[int]) -> float:
        """p1: the first part of each piece from the carried state, its losses, the state to p2, the
        previous piece's deferred backward, then the piece's end state back from p2."""
        run, total, pending = self.run, 0.0, None
        weight = 1.0 / len(ends)
        state = self.state_before(ends[0])
        for piece in self.tbptt_pieces(ends):
            a = self._carry_split(piece)
            hs, mid = self.local.run_sequence(piece[:a], state)
            loss, outs, grads = head_backwards(run, piece[:a], hs, weight)
            total += loss
            if a == len(piece):                  # p2 has no part of it: no hand-over
                if pending is not None:
                    self._deferred(*pending)
                    pending = None
                self._backward(outs, grads)
                state = tuple(x.detach() for x in mid)
                continue
            flat = self._flatten(mid)
            self.channel.send([flat], "carry.state")
            if pending is not None:
                self._deferred(*pending)
            end, = self.channel.recv("carry.end")
            pending = (outs, grads, flat)
            state = self._unflatten(end)
        if pending is not None:
            self._deferred(*pending)
        self._carried = (ends[-1] + 1, state)
        self.channel.flush()
        return total

    def _deferred(self, outs: list, grads: list, flat: torch.Tensor) -> None:
        """p1: a piece's backward, from its own losses and the gradient of the state it handed over."""
        grad, = self.channel.recv("carry.grad")
        self._backward(outs + [flat], grads + [grad])

    def _backward(self, outs: list, grads: list) -> None:
        keep = [(o, g) for o, g in zip(outs, grads) if o.requires_grad]
        if keep:
            with self.run.timer.phase("backward"):
                backward([o for o, _ in keep], [g for _, g in keep])

    def _carry_tail(self, ends: Sequence[int]) -> float:
        """p2: the rest of each piece from the state p1 handed over; the end state back at once, then its
        losses and backward, then the gradient of the received state."""
        run, total = self.run, 0.0
        weight = 1.0 / len(ends)
        for piece in self.tbptt_pieces(ends):
            a = self._carry_split(piece)
            if a == len(piece):
                continue
            flat, = self.channel.recv("carry.state")
            flat.requires_grad_(True)
            hs, end = self.local.run_sequence(piece[a:], self._unflatten(flat))
            self.channel.send([self._flatten(end)], "carry.end")
            loss, outs, grads = head_backwards(run, piece[a:], hs, weight)
            total += loss
            self._backward(outs, grads)
            self.channel.send([flat.grad if flat.grad is not None else torch.zeros_like(flat)], "carry.grad")
        self.channel.flush()
        return total

    def run_sequence(self, ts: Sequence[int], state) -> tuple[list[torch.Tensor], tuple]:
        return self.local.run_sequence(ts, state)

    @torch.no_grad()
    def evaluate_sequence(self, units: Sequence[int]) -> dict[str, float]:
        """p1 (rank 0) continues the state through the units alone, as it holds every parameter and
        snapshot; p2 takes its metrics."""
        if not self.p1:
            return self.run.comm.broadcast_object(None)
        return super().evaluate_sequence(units)
