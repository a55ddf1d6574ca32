"""ESDG's snapshot partitioning (ESDG Sec. 4.2, Fig. 3a; notes/esdg.md §3.4).

A step's window-snapshots — B windows of l snapshots, B·l items (window w, snapshot t) in order —
are split into P contiguous even ranges; worker p owns the items of its range and their Â_t, X_t.
The vertices are cut into P contiguous chunks V_q (the first N mod P one row larger). Per layer of a
stacked model (:class:`~dynagnn.models.base.StackedGNN`):

1. the GCN (``spatial``) runs on each worker's own items over all vertices, Y [k_p, N, S];
2. redistribution 1, an all-to-all: worker p sends Y[:, V_q] to q, so q holds every item's rows of
   V_q, [B·l, n_q, S] — vertex-major;
3. the per-vertex RNN (``temporal``) runs over each window's l steps for V_q, from the initial
   state (the B windows side by side as B·n_q rows);
4. redistribution 2 sends each item's rows back to the item's owner, [k_p, N, H], for the next layer.

The backward pass runs the same two all-to-alls on the gradients (``redistribute1.backward``,
``redistribute2.backward``). Each redistribution moves every (item, vertex) row whose item owner is
not its vertex owner: B·l·N − Σ_p k_p·n_p rows, the exact form of ESDG's T·N·(P−1)/P
(:func:`dynagnn.analysis.commvolume.snapshot_redistribution_volume` with T = B·l).

The owner of a window's last item holds its embedding after the last layer and computes that
window's loss; every worker back-propagates the losses it holds (plus zero times its other outputs,
so that every worker takes part in every backward all-to-all), and the parameters' gradients are
all-reduced. EvolveGCN-O is served without redistribution (ESDG Sec. 5.5): its LSTM runs over the
weight matrices, which every worker evolves itself, so a worker runs its own items alone.

Models with a GCN inside the recurrence (T-GCN, GCRN) have no such seam and are refused. A worker
may own no item of a short step (an evaluation window shorter than P): it still takes part in the
all-to-alls, with nothing to send.

Sequence mode ``carry`` (:class:`~dynagnn.train.options.SequenceMode`): each piece of the carried
sequence (the step, or its tbptt pieces) is one window whose every item is scored. Its items are split
as above; each worker carries its vertices' rows of every layer's temporal state from piece to piece
(EvolveGCN-O: every worker carries the whole weight chain, evolved through every item of the piece).
The owner of an item computes its loss, and each piece's loss is summed over the workers before the
next piece, so that all of them stop together on a non-finite one. Evaluation gathers every item's
embedding to rank 0.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np
import torch

from dynagnn.errors import ConfigError
from dynagnn.models.base import StackedGNN
from dynagnn.models.evolvegcn import EvolveGCNO
from dynagnn.splits import even_sizes
from dynagnn.timing import section
from dynagnn.train.options import LinkNegatives, SequenceMode, Transfer, Truncation
from dynagnn.train.strategies.base import Run, Strategy, head_backward
from dynagnn.train.transfer import SnapshotFeeder
from dynagnn.train.backward import backward


@dataclass(frozen=True)
class SnapshotOptions(Transfer, SequenceMode, Truncation, LinkNegatives):
    """The snapshot strategy's: how snapshots are fed, and the sequence mode (tbptt cuts a carried
    sequence)."""


class SnapshotPartition(Strategy):
    name = "snapshot"
    simplicity = 3
    splits_only = True
    divides = "snapshots"

    @classmethod
    def step_traffic(cls, workers: int, shape) -> list[tuple[str, float, int]]:
        """ESDG's all-to-all redistribution, there and back, forward and backward, per layer."""
        from dynagnn.analysis.commvolume.closed import snapshot_redistribution_volume

        if workers < 2:
            return []
        moved = snapshot_redistribution_volume(max(shape.window, workers), shape.num_nodes, workers, shape.hidden).bytes
        return [("allreduce", moved / workers, 2 * 2 * shape.layers)]
    Options = SnapshotOptions
    family = "window"
    models = ("stacked",)
    refuses = {"checkpoint_blocks": "the snapshot strategy does not checkpoint yet; use --strategy sequential or "
                                    "vertex with checkpointing"}

    @classmethod
    def model_refusal(cls, model_cls, contract):
        """A stacked model whose temporal part is row-independent, or EvolveGCN-O (its weights evolve on
        every worker, the GCN of each snapshot is local)."""
        if issubclass(model_cls, EvolveGCNO):
            return None
        why = contract.refusal("stacked")
        if why and contract.kind != "stacked":
            return (f"{why}: its GCN runs inside the recurrence, with no seam between the per-snapshot GCN and "
                    "the per-vertex RNN to redistribute at")
        return why

    def check(self, model, store, workers):
        num_nodes = store.num_nodes
        if not self.check_sequence(store):
            if self.options.tbptt:
                raise ConfigError("the snapshot strategy scores whole windows: tbptt cuts a carried sequence "
                                  "(sequence: carry); leave tbptt null")
            self._check_items(workers)
        if workers > num_nodes:
            raise ConfigError(f"snapshot strategy: {workers} workers for {num_nodes} vertices")

    def _check_items(self, workers: int) -> None:
        config = self.config
        items = int(config.batch_windows) * int(config.window)
        if workers > items:
            raise ConfigError(f"snapshot strategy: a step holds batch_windows × window = {items} snapshots, "
                              f"fewer than the {workers} workers; raise --batch-windows or --window, or use "
                              f"at most {items} workers")

    def setup(self, run: Run) -> None:
        super().setup(run)
        P = run.ctx.world_size
        self.model = run.model
        self.vsizes = even_sizes(run.num_nodes, P)
        self.voff = np.concatenate([[0], np.cumsum(self.vsizes)]).tolist()
        self.feeder = SnapshotFeeder(run.host, run.features, run.num_nodes, run.device,
                                     self.options.transfer, None, run.timer)
        self.stacked = isinstance(self.model, StackedGNN)
        if self.stacked:
            self.widths = self._widths()

    @torch.no_grad()
    def _widths(self) -> list[tuple[int, int]]:
        """(S_l, H_l) of every layer, from one snapshot (a worker with no item still needs them)."""
        m, (adj, x) = self.model, self.feeder.get(0)
        z, out = x, []
        for l in range(m.num_layers):
            y = m.spatial(l, adj, z, x)
            zs, _ = m.temporal(l, y[None], m.temporal_state(l, y.shape[0], y.device))
            z = zs[0]
            out.append((y.shape[1], z.shape[1]))
        self.feeder.drop()
        return out

    def _mine(self, items: list[tuple[int, int]]) -> tuple[int, int, list[int]]:
        sizes = even_sizes(len(items), self.run.ctx.world_size)
        a = sum(sizes[:self.run.ctx.rank])
        return a, a + sizes[self.run.ctx.rank], sizes

    # ------------------------------------------------------------------ stacked models

    def _stacked(self, windows: list[list[int]], states: list | None = None) -> tuple[list, list, torch.Tensor, list]:
        """Forward of a step: (my items (window, snapshot), the last layer's embedding [N, H] of each,
        every output row this worker holds (to keep it in every backward pass), each layer's temporal
        state after the windows for my vertices' rows). ``states``: each layer's temporal state to start
        from (carry mode: one window; default the initial state)."""
        run, m, comm = self.run, self.model, self.run.comm
        P, me = run.ctx.world_size, run.ctx.rank
        l = len(windows[0])
        items = [(w, t) for w, ts in enumerate(windows) for t in ts]
        a, b, ksizes = self._mine(items)
        mine = items[a:b]
        n_me, N = self.vsizes[me], run.num_nodes
        inputs = [self.feeder.get(t) for _, t in mine]
        zs = [x for _, x in inputs]
        after = []
        for layer, (S, H) in enumerate(self.widths):
            ys = [m.spatial(layer, adj, z, x) for (adj, x), z in zip(inputs, zs)]
            y = torch.stack(ys) if ys else torch.zeros(0, N, S, device=run.device)
            # redistribution 1: my items' rows of V_q to q -> every item's rows of my vertices
            send = torch.cat([y[:, self.voff[q]:self.voff[q + 1]].reshape(-1, S) for q in range(P)])
            if torch.is_grad_enabled() and not send.requires_grad:
                # a worker without items must still join this exchange's backward all-to-all
                send = send.detach().requires_grad_()
            got = comm.exchange(send, [len(mine) * self.vsizes[q] for q in range(P)],
                                [k * n_me for k in ksizes], "redistribute1")
            yv = got.view(len(items), n_me, S)
            # the windows side by side: [l, B·n_me, S]
            yv = yv.view(len(windows), l, n_me, S).transpose(0, 1).reshape(l, len(windows) * n_me, S)
            start = m.temporal_state(layer, len(windows) * n_me, run.device) if states is None else states[layer]
            with section("rnn"):
                zv, st = m.temporal(layer, yv, start)
            after.append(st)
            zv = zv.view(l, len(windows), n_me, H).transpose(0, 1).reshape(len(items) * n_me, H)
            # redistribution 2: each item's rows of my vertices back to the item's owner
            got = comm.exchange(zv, [k * n_me for k in ksizes], [len(mine) * self.vsizes[q] for q in range(P)],
                                "redistribute2")
            blocks = got.split([len(mine) * self.vsizes[q] for q in range(P)])
            z = torch.cat([blk.view(len(mine), self.vsizes[q], H) for q, blk in enumerate(blocks)], dim=1)
            zs = list(z.unbind(0))
        return mine, zs, z, after

    # ------------------------------------------------------------------ EvolveGCN-O

    def _evolve(self, windows: list[list[int]], start=None) -> tuple[list, list, torch.Tensor, tuple | None]:
        """EvolveGCN-O: for each window with an item of mine, the weight chain up to my last item,
        then the GCN layers on my items alone; as :meth:`_stacked`, with the weights after the last
        window. ``start``: the weights to start from (carry mode: one window, evolved through all of
        it on every worker, so that every worker carries the chain)."""
        run, m = self.run, self.model
        items = [(w, t) for w, ts in enumerate(windows) for t in ts]
        a, b, _ = self._mine(items)
        mine, outs, weights = items[a:b], [], None
        for w, ts in enumerate(windows):
            last = max((i for i in range(a, b) if items[i][0] == w), default=None)
            if start is not None:
                last = len(items) - 1
            elif last is None:
                continue
            weights = m.initial_state(run.num_nodes, run.device) if start is None else start
            for i in range(w * len(ts), last + 1):
                with section("rnn"):
                    weights = m.evolve(weights)
                if a <= i < b:
                    adj, x = self.feeder.get(items[i][1])
                    outs.append(m.convolve(adj, x, weights))
        held = torch.stack(outs) if outs else torch.zeros(0, device=run.device)
        return mine, outs, held, weights

    def _forward(self, windows, start=None):
        """(my items, their embeddings, the held outputs, the state after): :meth:`_stacked` or
        :meth:`_evolve`; ``start`` is a carried state (flat, as :meth:`initial_sequence_state`)."""
        if not self.stacked:
            return self._evolve(windows, start)
        mine, zs, held, after = self._stacked(windows, None if start is None else self.model.split_state(start))
        return mine, zs, held, tuple(s for st in after for s in st)

    def _to_rank0(self, ends: dict, num_items: int) -> torch.Tensor | None:
        """The one window's embedding, sent by the owner of its last item to rank 0 (evaluation)."""
        comm, run = self.run.comm, self.run
        sizes = even_sizes(num_items, run.ctx.world_size)
        owner = int(np.searchsorted(np.cumsum(sizes), num_items - 1, side="right"))
        if owner == 0:
            return ends.get(0)
        if run.ctx.rank == owner:
            comm.send(ends[0].contiguous(), 0, "embedding")
            return None
        if run.ctx.rank == 0:
            out = torch.empty(run.num_nodes, self.model.out_dim, device=run.device)
            return comm.recv(out, owner, "embedding")
        return None

    def embed(self, ts: Sequence[int]) -> torch.Tensor | None:
        mine, zs, _, _ = self._forward([list(ts)])
        ends = {w: z for (w, t), z in zip(mine, zs) if t == ts[-1]}
        if not self.run.ctx.distributed:
            return ends[0]
        return self._to_rank0(ends, len(ts))

    def _backward_held(self, scored: list[tuple[int, torch.Tensor]], held: torch.Tensor, weight: float) -> float:
        """The losses of ``scored`` (target snapshot, embedding) times ``weight``, and one backward call
        through the all-to-alls (every worker joins it, after the heads' parts): this worker's loss."""
        run = self.run
        outputs, grads, local = [held.sum() * 0.0], [None], 0.0
        for t, h in scored:
            loss, grad = head_backward(run, h, t, weight)
            local += loss
            if grad is not None:
                outputs.append(h)
                grads.append(grad)
        if outputs[0].requires_grad or len(outputs) > 1:  # none only for EvolveGCN-O on a worker without items
            with run.timer.phase("backward"):
                backward([o for o in outputs if o.requires_grad],
                         [g for o, g in zip(outputs, grads) if o.requires_grad])
        return local

    def train_step(self, ends: Sequence[int]) -> float:
        run = self.run
        if self.carry:
            loss = self.backward_sequence(ends)   # each piece's loss summed over the workers already
        else:
            mine, zs, held, _ = self._forward(run.windows(ends))
            windows = run.windows(ends)
            scored = [(ends[w], z) for (w, t), z in zip(mine, zs) if t == windows[w][-1]]
            value = torch.tensor(self._backward_held(scored, held, 1.0 / len(ends)))
            loss = float(run.comm.all_reduce(value, "loss"))
        run.comm.all_reduce_grads(run.parameters())
        return loss

    # ------------------------------------------------------------------ sequence mode carry

    def initial_sequence_state(self) -> tuple:
        """EvolveGCN-O: the initial weights (every worker carries them); a stacked model: every layer's
        temporal state for my vertices' rows."""
        run, m = self.run, self.model
        if not self.stacked:
            return m.initial_state(run.num_nodes, run.device)
        n_me = self.vsizes[run.ctx.rank]
        return tuple(s for layer in range(m.num_layers) for s in m.temporal_state(layer, n_me, run.device))

    def backward_piece(self, ts: Sequence[int], state: tuple, weight: float) -> tuple[float, tuple]:
        mine, zs, held, state = self._forward([list(ts)], state)
        value = torch.tensor(self._backward_held([(t, z) for (_, t), z in zip(mine, zs)], held, weight))
        return float(self.run.comm.all_reduce(value, "loss")), state

    def run_sequence(self, ts: Sequence[int], state: tuple) -> tuple[list, tuple]:
        """Every embedding of ``ts`` on rank 0 (sent by the items' owners; None elsewhere), the state
        after them."""
        run, comm = self.run, self.run.comm
        mine, zs, _, state = self._forward([list(ts)], state)
        if not run.ctx.distributed:
            return zs, state
        if run.ctx.rank != 0:
            if zs:
                comm.send(torch.stack(zs).contiguous(), 0, "embedding")
            return [None] * len(ts), state
        sizes = self._mine([(0, t) for t in ts])[2]
        parts = [torch.stack(zs)] if zs else []       # the items' ranges come in rank order, rank 0's first
        for q in range(1, run.ctx.world_size):
            if sizes[q]:
                parts.append(comm.recv(torch.empty(sizes[q], run.num_nodes, self.model.out_dim,
                                                   device=run.device), q, "embedding"))
        return list(torch.cat(parts).unbind(0)), state

    def advance(self, ts: Sequence[int], state: tuple) -> tuple:
        return self._forward([list(ts)], state)[3]
