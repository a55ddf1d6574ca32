"""Sven's node memory and mailbox partitioned across workers (Sven §3-4; notes §3, §4.5, §5).

Every node's memory and mailbox row lives on one worker, its *owner* (``owner`` [N], Sven's λ1;
``local`` [N] is λ2, the row on the owner). A batch's worker asks the owners for the rows it reads
and sends the rows it writes back to them, always through uneven all-to-alls
(:meth:`~dynagnn.distributed.comm.Comm.all_to_all`), counted as the analysis counts them
(:func:`~dynagnn.analysis.commvolume.sven_volumes`):

- ``dispatch``: the rows answered, float32 ``d_mem + M·d_msg`` each (memory and mailbox; Sven's
  ``d_mem + d_msg`` with the mailbox of M = 1), or for DepComm the owner's *updated* memory,
  ``d_mem`` per occurrence, whose gradient returns as ``dispatch.backward``;
- ``aggregation``: the written rows, ``d_mem`` per memory write and ``d_msg`` per mail;
- the bookkeeping apart: ``*.counts`` (rows per peer), ``*.ids`` (ids asked; ids, orders and
  times written), ``dispatch.meta`` (the answered rows' float64 times and mail flags).

Three modes (:data:`MODES`): ``sven`` asks each distinct id once (:func:`plan_requests` with
dedupe) and updates the memory where the batch is; ``depcomm`` asks every occurrence and the
owner runs the memory update; ``depcache`` holds every row on every worker (dispatch is a local
read) and sends every write to every worker (the all-gather of DepCache).

Writes are *staged* where they arrive and applied at :meth:`PartitionedMemory.commit`, after the
optimiser step, so that every micro-batch of a batch (and every worker) reads the memory as it was
before the batch, as one worker does; of several writes of one row the largest
:attr:`~dynagnn.models.tgnn.Writes.order` wins (the batch's "most recent" choice).
"""

from __future__ import annotations

from typing import Callable

import numpy as np
import torch

from dynagnn.distributed.comm import Comm
from dynagnn.graph.dispatch import Requests, plan_requests
from dynagnn.models.tgnn import MemoryRows, NodeMemory, Writes
from dynagnn.models.tgnn.memory import latest_per_node

MODES = ("sven", "depcomm", "depcache")


def wire_device(comm: Comm) -> torch.device:
    """Where bookkeeping tensors (counts, ids, times: host data) cross ``comm``: nccl takes only
    tensors of the job's device; gloo (and no process group) host ones."""
    return comm.ctx.device if comm.active and comm.ctx.backend == "nccl" else torch.device("cpu")


def _meta_rows(ids, order, ts) -> torch.Tensor:
    """int64 [n, 3]: id, order and the float64 time's bits (one exchange for the three)."""
    ts = torch.as_tensor(ts, dtype=torch.float64).cpu().contiguous()
    return torch.stack([torch.as_tensor(ids, dtype=torch.int64).cpu(), torch.as_tensor(order, dtype=torch.int64),
                        ts.view(torch.int64)], 1)


class PartitionedMemory:
    """The memory and mailbox of ``num_nodes`` nodes, this worker's share of them (module docstring).

    comm: the job's collectives; owner int [N]: each node's rank; the model's memory width d_mem,
    mail width d_msg and mailbox size M; mode: one of :data:`MODES`.
    """

    def __init__(self, comm: Comm, owner: np.ndarray, memory_dim: int, mail_dim: int, mailbox: int = 1,
                 mode: str = "sven", device: torch.device | str = "cpu"):
        if mode not in MODES:
            raise ValueError(f"memory mode {mode!r}: expected one of {', '.join(MODES)}")
        self.comm, self.mode = comm, mode
        self.owner = np.asarray(owner, dtype=np.int64)
        self.replicated = mode == "depcache"
        own = np.arange(self.owner.size) if self.replicated else np.flatnonzero(self.owner == comm.rank)
        self.own = own
        self.local = np.full(self.owner.size, -1, dtype=np.int64)
        self.local[own] = np.arange(own.size)
        self.store = NodeMemory(own.size, memory_dim, mail_dim, mailbox, device)
        self.device = torch.device(device)
        self.wire = wire_device(comm)
        self._staged: list[tuple[str, np.ndarray, torch.Tensor, torch.Tensor, np.ndarray]] = []

    # ---- state of this worker's rows ------------------------------------------------------------
    def reset(self) -> None:
        self.store.reset()
        self._staged.clear()

    def snapshot(self):
        return self.store.snapshot()

    def restore(self, snap) -> None:
        self.store.restore(snap)

    def state(self) -> dict[str, torch.Tensor]:
        """Every node's buffers (:meth:`NodeMemory.state`'s names, N rows on the CPU), put together
        from the workers' shares: a collective, every worker calls it (after the writes are committed)."""
        mine = self.store.state()
        if self.replicated:  # every worker holds every row, and the same ones
            return mine
        n = self.owner.size
        out = {k: v.new_zeros((n, *v.shape[1:])) for k, v in mine.items()}
        for own, part in self.comm.all_gather_object((self.own, mine)):
            rows = torch.from_numpy(np.asarray(own, dtype=np.int64))
            for k, v in part.items():
                out[k][rows] = v
        return out

    def load_state(self, state: dict[str, torch.Tensor]) -> None:
        """Take this worker's rows of every node's buffers (what :meth:`state` gave)."""
        n = self.owner.size
        bad = [k for k, v in state.items() if not isinstance(v, torch.Tensor) or v.ndim == 0 or v.shape[0] != n]
        if bad:
            raise ValueError(f"memory buffers {', '.join(map(repr, bad))}: not {n} rows (one per node)")
        rows = torch.from_numpy(self.own)
        self.store.load_state({k: v[rows] for k, v in state.items()})

    def _local(self, ids: np.ndarray) -> torch.Tensor:
        index = self.local[ids]
        if (index < 0).any():
            raise ValueError(f"rows asked of rank {self.comm.rank} that it does not hold: {ids[index < 0][:5].tolist()}")
        return torch.from_numpy(index).to(self.device)

    # ---- dispatch -------------------------------------------------------------------------------
    def plan(self, ids: np.ndarray) -> Requests:
        """The requests for the rows of ``ids`` (int [n], repeats allowed): each distinct id once
        (sven, depcache) or every occurrence (depcomm), grouped by owner (all local when replicated)."""
        owner = np.full(self.owner.size, self.comm.rank, dtype=np.int64) if self.replicated else self.owner
        return plan_requests(ids, owner, self.comm.world, dedupe=self.mode != "depcomm")

    def _ask(self, req: Requests) -> tuple[np.ndarray, list[int], list[int]]:
        """Collective: (ids asked of this worker, rows it answers per peer, rows it gets per peer)."""
        comm, counts = self.comm, [int(c) for c in req.counts]
        recv = comm.all_to_all(torch.tensor(counts, dtype=torch.int64, device=self.wire), [1] * comm.world,
                               [1] * comm.world, "dispatch.counts").tolist()
        asked = comm.all_to_all(torch.from_numpy(req.ids).to(self.wire), counts, recv, "dispatch.ids").cpu().numpy()
        return asked, recv, counts

    def fetch(self, req: Requests) -> MemoryRows:
        """Collective: the memory and mailbox rows of ``req.ids``, in that order."""
        if self.replicated:
            return self.store.read(self._local(req.ids))
        asked, answer, get = self._ask(req)
        rows = self.store.read(self._local(asked))
        n, m = rows.memory.shape[0], self.store.mailbox_size
        # an explicit width: a piece may ask nothing of this worker (n = 0)
        data = torch.cat([rows.memory, rows.mail.reshape(n, m * self.store.mail_dim)], 1)
        meta = torch.cat([rows.memory_ts[:, None], rows.mail_ts, rows.mail_valid.to(torch.float64)], 1)
        data = self.comm.all_to_all(data, answer, get, "dispatch")
        meta = self.comm.all_to_all(meta, answer, get, "dispatch.meta")
        d = self.store.memory_dim
        return MemoryRows(data[:, :d], meta[:, 0], data[:, d:].reshape(-1, m, self.store.mail_dim),
                          meta[:, 1:1 + m], meta[:, 1 + m:] > 0.5)

    def fetch_updated(self, req: Requests, update: Callable[[MemoryRows], tuple[torch.Tensor, torch.Tensor]]):
        """Collective (DepComm): the owners read the rows of ``req.ids``, run ``update`` (rows ->
        (memory [n, d_mem], memory_ts [n])) on them and answer each occurrence with its updated
        memory, differentiably (the gradient returns to the owner's update). Returns (memory
        [len(req.ids), d_mem], memory_ts [len(req.ids)])."""
        asked, answer, get = self._ask(req)
        memory, memory_ts = update(self.store.read(self._local(asked)))
        memory = self.comm.exchange(memory, answer, get, "dispatch")
        memory_ts = self.comm.all_to_all(memory_ts.to(torch.float64)[:, None], answer, get, "dispatch.meta")
        return memory, memory_ts[:, 0]

    # ---- aggregation ----------------------------------------------------------------------------
    def push(self, memory: Writes, mail: Writes) -> None:
        """Collective: send the batch's memory and mail writes to their owners (to every worker when
        replicated), who stage them for :meth:`commit`. ``Writes.order`` must be set."""
        comm, world = self.comm, self.comm.world
        parts, counts = [], []
        for w in (memory, mail):
            ids = w.ids.cpu().numpy()
            if self.replicated:
                sel = np.tile(np.arange(ids.size), world)
                per = np.full(world, ids.size, dtype=np.int64)
            else:  # the writes are distinct nodes already: grouped by owner, in order
                sel = np.argsort(self.owner[ids], kind="stable")
                per = np.bincount(self.owner[ids], minlength=world).astype(np.int64)
            parts.append((w, sel))
            counts.append(per)
        send = np.stack(counts, 1)                                          # [P, 2] rows per peer
        recv = comm.all_to_all(torch.from_numpy(send).to(self.wire), [1] * world, [1] * world,
                               "aggregation.counts").cpu().numpy()
        # per peer: its memory rows, then its mail rows
        metas, datas = [], []
        for k, (w, sel) in enumerate(parts):
            metas.append(_meta_rows(w.ids[torch.from_numpy(sel).to(w.ids.device)], w.order[sel],
                                    w.ts[torch.from_numpy(sel).to(w.ts.device)]))
            datas.append(w.values[torch.from_numpy(sel).to(w.values.device)].detach())
        meta = torch.cat([torch.cat([metas[k][_rows_to(send[:, k], r)] for k in (0, 1)]) for r in range(world)])
        got = comm.all_to_all(meta.to(self.wire), send.sum(1), recv.sum(1), "aggregation.ids").cpu().numpy()
        for k in (0, 1):
            data = comm.all_to_all(datas[k], send[:, k], recv[:, k], "aggregation")
            # the received meta holds, per source, that source's memory rows then its mail rows
            rows = np.concatenate([np.arange(recv[:r].sum() + (recv[r, 0] if k else 0),
                                             recv[:r].sum() + (recv[r, 0] if k else 0) + recv[r, k])
                                   for r in range(world)]).astype(np.int64)
            g = got[rows]
            ts = torch.from_numpy(np.ascontiguousarray(g[:, 2])).view(torch.float64)
            self._staged.append(("memory" if k == 0 else "mail", g[:, 0], data, ts, g[:, 1]))

    def commit(self) -> None:
        """Apply the staged writes: per node the memory and the mail of the largest order."""
        staged, self._staged = self._staged, []
        for kind in ("memory", "mail"):
            got = [s for s in staged if s[0] == kind]
            if not got:
                continue
            ids = np.concatenate([s[1] for s in got])
            if ids.size == 0:
                continue
            values = torch.cat([s[2] for s in got]).to(self.device)
            ts = torch.cat([s[3] for s in got]).to(self.device)
            uniq, pick = latest_per_node(ids, np.concatenate([s[4] for s in got]))
            pick_t = torch.from_numpy(pick).to(self.device)
            write = self.store.write_memory if kind == "memory" else self.store.write_mail
            write(self._local(uniq), values[pick_t], ts[pick_t])


def _rows_to(counts: np.ndarray, r: int) -> slice:
    """The rows for peer ``r`` of rows grouped by peer with ``counts`` [P] each."""
    start = int(counts[:r].sum())
    return slice(start, start + int(counts[r]))
