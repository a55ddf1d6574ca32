"""Vertex partitioning (AliGraph, DGL and PyTorch Geometric Temporal's DDP style; ESDG Sec. 4.1).

The vertices are split once, by METIS on the union of every snapshot's edges or by a seeded hash
(``partitioner``, :mod:`dynagnn.graph.partition`). Worker p owns V_p: its rows of every Â_t, of
X_t and of every per-vertex state. Before each aggregation it receives the halo, the rows of remote
vertices that its own rows of Â_t read (ESDG: p needs X_t[v] iff column v of Â_t has a non-zero in
a row of V_p); the send lists are precomputed per snapshot (:class:`~dynagnn.distributed.comm.HaloPlan`).
The RNN and the NN operators are local; EvolveGCN-O's weight chain is computed on every worker.

Per snapshot, worker p holds Â_t[V_p, :] as a local CSR [n_p, n_p + h_t]: columns 0..n_p−1 are its
own vertices (ascending global id), columns n_p.. the halo grouped by owner rank, ascending global id
within an owner — the order in which :meth:`~dynagnn.distributed.comm.Comm.halo` delivers them. The
aggregation is then ``Â_local · [Z_own ‖ halo(Z_own)]``, and its backward returns the halo rows'
gradients to their owners (``halo.backward``). Halo rows per aggregation: Σ_v λ_t(v), the
connectivity−1 volume that :func:`dynagnn.analysis.commvolume.count_vertex_volume` counts (on the
transposed edges, (col, row): the owner of v sends to the parts of the rows that read column v).

The loss needs every vertex's embedding (link prediction pairs any two vertices), so the window's
embeddings are gathered to every worker (``gather``: the rows of the others); every worker computes
the same loss and back-propagates loss / P, so that after the gathered rows' gradients are summed on
their owner (``gather.backward``) and the parameters' gradients are all-reduced
(``grad_all_reduce``), each worker holds exactly the sequential gradient.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np
import torch

from dynagnn.distributed.comm import Comm, HaloPlan
from dynagnn.errors import ConfigError
from dynagnn.graph.csr import Adjacency, SpMM, csr_matrix
from dynagnn.graph.partition import hash_partition, metis_partition
from dynagnn.sortedkeys import row_offsets, unique_sorted
from dynagnn.timing import section
from dynagnn.train.checkpoint import run_blocks
from dynagnn.train.options import Checkpointing, LinkNegatives, SequenceMode, option
from dynagnn.train.strategies.base import Run, Strategy

PARTITIONERS = ("metis", "hash")


class HaloAdjacency(Adjacency):
    """A worker's rows of Â_t, [n_p, n_p + h_t], whose product fetches the halo first."""

    def __init__(self, matrix: torch.Tensor, plan: HaloPlan, comm: Comm):
        super().__init__(matrix, symmetric=False)
        self.plan = plan
        self.comm = comm

    @property
    def edge_index(self):
        raise ConfigError("the vertex strategy's adjacency holds a worker's own rows, whose remote columns reach "
                          "it only through adj.spmm (the halo): a model reading adj.edge_index (a PyTorch "
                          "Geometric layer) cannot run under it; use sequential, frames or the group strategies")

    edge_weight = adj_t = edge_index

    def spmm(self, x: torch.Tensor) -> torch.Tensor:
        halo = self.comm.halo(x, self.plan)
        # the halo stays in the graph when this worker receives no rows: its backward is a collective
        # every worker must enter (another worker may return gradients through it)
        return SpMM.apply(self, torch.cat([x, halo]))


def union_edges(host: list, num_nodes: int) -> tuple[np.ndarray, np.ndarray]:
    """(row, col) of the union of every snapshot's edges, symmetrised, without self-loops."""
    n = np.int64(num_nodes)
    keys = []
    for snap in host:
        r, c = snap.keys // n, snap.keys % n
        keep = r != c
        keys += [snap.keys[keep], c[keep] * n + r[keep]]
    u = unique_sorted(np.concatenate(keys)) if keys else np.zeros(0, np.int64)
    return u // n, u % n


def vertex_parts(method: str, host: list, num_nodes: int, workers: int, seed: int = 0) -> np.ndarray:
    """parts[v] in [0, workers) for every vertex."""
    if method == "hash":
        return hash_partition(num_nodes, workers, seed=seed)
    if method == "metis":
        if workers == 1:
            return np.zeros(num_nodes, dtype=np.int64)
        row, col = union_edges(host, num_nodes)
        return metis_partition(row, col, num_nodes, workers, seed=seed)
    raise ConfigError(f"partitioner {method!r}: the vertex strategy splits by one of {', '.join(PARTITIONERS)}")


def local_index(parts: np.ndarray, rank: int) -> np.ndarray:
    """int64 [N]: each of ``rank``'s vertices' local row (ascending global id), -1 for the others."""
    own = np.flatnonzero(parts == rank)
    local = np.full(parts.size, -1, dtype=np.int64)
    local[own] = np.arange(own.size)
    return local


def local_snapshot(snap, num_nodes: int, parts: np.ndarray, rank: int, workers: int, local: np.ndarray):
    """Worker ``rank``'s rows of one snapshot: (crow, col, values, n_cols) of the local CSR and its
    HaloPlan (see the module docstring for the column order); ``local`` is :func:`local_index`."""
    n = np.int64(num_nodes)
    n_own = int(np.count_nonzero(local >= 0))
    r_all, c_all = snap.keys // n, snap.keys % n
    pr_all, pc_all = parts[r_all], parts[c_all]
    mine = pr_all == rank
    r, c, v, pc = r_all[mine], c_all[mine], snap.values[mine], pc_all[mine]
    remote = pc != rank
    # halo columns ordered by (owner, global id): one sort of owner·N + id
    halo_keys = unique_sorted(pc[remote] * n + c[remote])
    halo_ids = halo_keys % n
    recv_counts = np.bincount(halo_keys // n, minlength=workers)
    lcol = local[c]
    lcol[remote] = n_own + np.searchsorted(halo_keys, pc[remote] * n + c[remote])
    lrow = local[r]
    order = np.lexsort((lcol, lrow))
    lrow, lcol, v = lrow[order], lcol[order], v[order]
    crow = row_offsets(lrow, n_own)
    # what the others read of mine: column c owned here, in a row owned by q != rank
    sends = (pc_all == rank) & ~mine
    send_keys = unique_sorted(pr_all[sends] * n + c_all[sends])
    send_counts = np.bincount(send_keys // n, minlength=workers)
    plan = HaloPlan(torch.from_numpy(local[send_keys % n]), send_counts.tolist(), recv_counts.tolist())
    return (crow, lcol, v.astype(np.float32), n_own + halo_ids.size), plan


@dataclass(frozen=True)
class VertexOptions(Checkpointing, SequenceMode, LinkNegatives):
    """The vertex strategy's: checkpointing, and how the vertices are split."""

    partitioner: str = option("metis", "vertex strategy: how the vertices are split", enum=list(PARTITIONERS))


class VertexPartition(Strategy):
    name = "vertex"
    simplicity = 2
    splits_only = True
    divides = "vertices"

    @classmethod
    def step_traffic(cls, workers: int, shape) -> list[tuple[str, float, int]]:
        """Each layer's halo rows, forward and backward, once per snapshot of the window."""
        if workers < 2:
            return []
        halo = (shape.halo_rows or {}).get(workers, 0.0) * shape.hidden * 4
        return [("allreduce", halo, shape.window * 2 * shape.layers)]
    Options = VertexOptions
    family = "window"
    needs = ("row_local",)   # a worker holds its own rows; other vertices reach it through adj.spmm's halo

    def check(self, model, store, workers):
        num_nodes = store.num_nodes
        if workers > num_nodes:
            raise ConfigError(f"vertex strategy: {workers} workers for {num_nodes} vertices; use at most "
                              f"{num_nodes} workers")
        if self.options.partitioner not in PARTITIONERS:
            raise ConfigError(f"partitioner {self.options.partitioner!r}: the vertex strategy splits by one of "
                              f"{', '.join(PARTITIONERS)}")
        self.check_sequence(store)

    def setup(self, run: Run) -> None:
        super().setup(run)
        ctx, o = run.ctx, self.options
        P, rank, N = ctx.world_size, ctx.rank, run.num_nodes
        self.parts = vertex_parts(o.partitioner, run.host, N, P, self.config.seed)
        self.own = np.flatnonzero(self.parts == rank)
        local = local_index(self.parts, rank)
        self.counts = np.bincount(self.parts, minlength=P).tolist()
        # the gathered rows come rank by rank; this index puts them back in vertex order
        order = np.concatenate([np.flatnonzero(self.parts == q) for q in range(P)])
        self.to_global = torch.from_numpy(np.argsort(order)).to(run.device)
        self.checkpoint_blocks, self.tbptt = o.checkpoint_blocks, o.tbptt
        self.sequence_scale = 1.0 / P   # every worker computes the full loss of a carried step
        self.adj = []
        with run.timer.phase("transfer"):
            for snap in run.host:
                (crow, col, val, ncols), plan = local_snapshot(snap, N, self.parts, rank, P, local)
                m = csr_matrix(crow, col, val, len(self.own), ncols).to(run.device)
                self.adj.append(HaloAdjacency(m, plan.to(run.device), run.comm))
            x = torch.from_numpy(np.ascontiguousarray(run.features[..., self.own, :], dtype=np.float32))
            self.x = x.to(run.device)
        self.static = run.features.ndim == 2

    def _step(self, t: int, state):
        x = self.x if self.static else self.x[t]
        with section("rnn"):
            return self.run.model.step(self.adj[t], x, state)

    def _local(self, ts: Sequence[int]) -> torch.Tensor:
        state = self.run.model.initial_state(len(self.own), self.run.device)
        h, _ = run_blocks(self._step, ts, state, self.checkpoint_blocks, self.tbptt)
        return h

    def _gathered(self, h: torch.Tensor) -> torch.Tensor:
        return self.run.comm.gather_rows(h, self.counts).index_select(0, self.to_global)

    def embed(self, ts: Sequence[int]) -> torch.Tensor:
        return self._gathered(self._local(ts))

    def train_step(self, ends: Sequence[int]) -> float:
        # every worker computes the same full loss: each back-propagates 1/P of it
        if self.carry:
            loss = self.backward_sequence(ends)
        else:
            loss = self.backward_windows(ends, 1.0 / self.run.ctx.world_size)
        self.run.comm.all_reduce_grads(self.run.parameters())
        return loss

    # ---- sequence mode carry: each worker carries its vertices' rows ---------------------------------
    def initial_sequence_state(self) -> tuple:
        return self.run.model.initial_state(len(self.own), self.run.device)

    def run_sequence(self, ts: Sequence[int], state) -> tuple[list[torch.Tensor], tuple]:
        hs = []
        for t in ts:
            h, state = self._step(t, state)
            hs.append(self._gathered(h))
        return hs, state

