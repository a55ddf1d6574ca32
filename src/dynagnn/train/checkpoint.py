"""ESDG's gradient checkpointing over time blocks (ESDG Sec. 3.1, notes/esdg.md §3.1).

The window's timeline is cut into ``nb`` contiguous blocks. The forward pass runs the blocks in
order, keeping only the recurrent state at each block's end (the checkpoint π_b: RNN hidden and cell
states, or EvolveGCN's evolved weights) and discarding the block's activations; the backward pass
re-runs each block's forward from π_{b-1} and back-propagates through it, last block first. Memory
then holds one block's activations plus nb checkpoints, ``(T/nb)·m_act + nb·m_π``, against
``T·m_act`` without checkpointing; the price is one more forward pass. Snapshots are fetched again
by the re-run, so with a feeder of capacity ``T/nb`` they cross to the device twice per epoch, as in
ESDG.

ESDG's π also carries "the activations of the last w timesteps" for models whose RNN looks back w
steps; the recurrences here look back one step, so the state is the whole of π.
"""

from __future__ import annotations

from typing import Callable, Sequence

import torch
from torch.utils.checkpoint import checkpoint

from dynagnn.models.base import State
from dynagnn.splits import even_ranges


def blocks(ts: Sequence[int], nb: int) -> list[list[int]]:
    """``ts`` cut into ``min(nb, len(ts))`` contiguous blocks whose sizes differ by at most one."""
    ts = list(ts)
    if not ts:
        return [ts]
    return [ts[a:b] for a, b in even_ranges(len(ts), max(1, min(int(nb), len(ts))))]


def run_blocks(step: Callable[[int, State], tuple[torch.Tensor, State]], ts: Sequence[int],
               state: State, nb: int = 1, tbptt: int | None = None) -> tuple[torch.Tensor, State]:
    """Run ``step(t, state) -> (h, state)`` over ``ts``; checkpoint each of ``nb`` blocks when nb > 1
    and gradients are on. ``tbptt``: detach the state every ``tbptt`` steps (truncated BPTT)."""

    def run(block: list[int], offset: int, *flat: torch.Tensor):
        st = tuple(flat)
        h = None
        for i, t in enumerate(block):
            if tbptt and (offset + i) and (offset + i) % tbptt == 0:
                st = tuple(s.detach() for s in st)
            h, st = step(t, st)
        return (h, *st)

    h = None
    offset = 0
    use_ckpt = nb > 1 and torch.is_grad_enabled()
    for block in (blocks(ts, nb) if use_ckpt else [list(ts)]):
        if use_ckpt:
            out = checkpoint(run, block, offset, *state, use_reentrant=False)
        else:
            out = run(block, offset, *state)
        h, state = out[0], tuple(out[1:])
        offset += len(block)
    return h, state
