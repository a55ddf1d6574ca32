"""A table of rows partitioned across workers (Sven's node memory and mailbox): each worker holds
the rows it owns, fetches the rows it needs from their owners and sends updates back to them.

A worker asks for rows with the ids grouped by owner rank and the count per owner
(:func:`dynagnn.graph.dispatch.plan_requests`: each distinct id once for Sven, every occurrence for
DepComm). One exchange of counts, one of ids and one of rows, each an uneven all-to-all
(:meth:`dynagnn.dist.comm.Comm.all_to_all`), so a worker's own rows never leave it and bytes are
counted as the analysis counts them: rows under the table's name, the ids (and update priorities)
under ``<name>.ids``, the counts under ``<name>.counts``.

Updates carry a priority (the event index of the message that produced them): when several workers
update one row in a batch, the owner keeps the highest priority, as "most recent" aggregation does.

DepCache replicates the table instead: :meth:`RowTable.replicate` sends every update to every worker.
"""

from __future__ import annotations

import numpy as np
import torch

from dynagnn.dist.comm import Comm


class RowTable:
    """Rows [N, d] of which this worker holds ``owner == rank`` (``replicated``: all of them).

    owner: int [N] each row's rank; rows: [n_own, d] this worker's rows in ascending id order (all N
    rows when replicated); name: what the bytes are counted as.
    """

    def __init__(self, comm: Comm, owner: np.ndarray, rows: torch.Tensor, name: str, replicated: bool = False):
        self.comm, self.name, self.replicated = comm, name, bool(replicated)
        self.owner = np.asarray(owner, dtype=np.int64)
        own = np.arange(self.owner.size) if replicated else np.flatnonzero(self.owner == comm.rank)
        if rows.shape[0] != own.size:
            raise ValueError(f"{name}: {rows.shape[0]} rows for {own.size} owned ids")
        self.rows = rows
        self.local = np.full(self.owner.size, -1, dtype=np.int64)
        self.local[own] = np.arange(own.size)

    def _rows_of(self, ids: np.ndarray) -> torch.Tensor:
        index = self.local[ids]
        if (index < 0).any():
            raise ValueError(f"{self.name}: asked for rows this worker does not hold: {ids[index < 0][:5].tolist()}")
        return self.rows.index_select(0, torch.from_numpy(index).to(self.rows.device))

    def _exchange_counts(self, counts: np.ndarray) -> np.ndarray:
        sent = torch.as_tensor(np.asarray(counts, dtype=np.int64))
        got = self.comm.all_to_all(sent, [1] * self.comm.world, [1] * self.comm.world, f"{self.name}.counts")
        return got.numpy()

    def fetch(self, ids: np.ndarray, counts: np.ndarray) -> torch.Tensor:
        """Collective: the rows [len(ids), d] of ``ids`` (grouped by owner, ``counts`` per owner), in
        that order. Replicated tables read every row locally."""
        ids = np.asarray(ids, dtype=np.int64)
        if self.replicated or not self.comm.active:
            return self._rows_of(ids)
        recv = self._exchange_counts(counts)
        asked = self.comm.all_to_all(torch.from_numpy(ids), counts, recv, f"{self.name}.ids").numpy()
        return self.comm.all_to_all(self._rows_of(asked), recv, counts, self.name)

    def _apply(self, ids: np.ndarray, rows: torch.Tensor, priority: np.ndarray) -> None:
        """Write ``rows`` to the held rows ``ids``; per id the highest priority wins."""
        if ids.size == 0:
            return
        order = np.lexsort((priority, ids))  # by id, then priority: each id's winner is its last
        last = np.ones(order.size, dtype=bool)
        last[:-1] = ids[order][1:] != ids[order][:-1]
        keep = order[last]
        index = torch.from_numpy(self.local[ids[keep]]).to(self.rows.device)
        self.rows.index_copy_(0, index, rows.index_select(0, torch.from_numpy(keep).to(rows.device)).to(self.rows.dtype))

    def push(self, ids: np.ndarray, counts: np.ndarray, rows: torch.Tensor, priority: np.ndarray) -> None:
        """Collective: send updated ``rows`` [len(ids), d] of ``ids`` (grouped by owner, ``counts``
        per owner) with their ``priority`` (int [len(ids)]) to the owners, which keep per row the
        highest priority of all updates. A replicated table sends every update to every worker."""
        ids = np.asarray(ids, dtype=np.int64)
        priority = np.asarray(priority, dtype=np.int64)
        if self.replicated:
            self._replicate(ids, rows, priority)
            return
        if not self.comm.active:
            self._apply(ids, rows, priority)
            return
        recv = self._exchange_counts(counts)
        meta = torch.from_numpy(np.stack([ids, priority], axis=1))
        got = self.comm.all_to_all(meta, counts, recv, f"{self.name}.ids").numpy()
        data = self.comm.all_to_all(rows.detach(), counts, recv, self.name)
        self._apply(got[:, 0], data, got[:, 1])

    def _replicate(self, ids: np.ndarray, rows: torch.Tensor, priority: np.ndarray) -> None:
        comm = self.comm
        if not comm.active:
            self._apply(ids, rows, priority)
            return
        world, n = comm.world, ids.size
        recv = self._exchange_counts(np.full(world, n, dtype=np.int64))
        meta = torch.from_numpy(np.stack([ids, priority], axis=1)).repeat(world, 1)
        got = comm.all_to_all(meta, [n] * world, recv, f"{self.name}.ids").numpy()
        data = comm.all_to_all(rows.detach().repeat(world, 1), [n] * world, recv, self.name)
        self._apply(got[:, 0], data, got[:, 1])
