"""Node memory and mailbox of the memory-based TGNNs: buffers, not parameters (Sven's N&M store).

The memory s_v [N, d_mem] with the time it was last updated, and the mailbox: the last M mails of
each node (M = 1 for TGN and JODIE, "most recent" aggregation; M = 10 for APAN), with their times.
Both are plain tensors outside the model, so that the training loop owns them (reset each epoch,
carried from training into evaluation) and so that a distributed strategy can keep rows on other
workers: a batch reads the rows of its unique node ids (:meth:`NodeMemory.read`) and writes back
the rows of the nodes it touched (:meth:`NodeMemory.write_memory`, :meth:`NodeMemory.write_mail`).

The invariant every model keeps: the stored memory has not yet seen the node's pending mail. A
batch applies the pending mail to whatever rows it reads (the updated view), and persists the
updated memory only of the nodes that receive a new mail (the batch's positive endpoints), at the
same moment as the new mail replaces the old one.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from dynagnn.sortedkeys import sort_groups


BUFFERS = ("memory", "memory_ts", "mail", "mail_ts", "mail_valid", "next_slot")  # NodeMemory's, in order


@dataclass
class MemoryRows:
    """The memory and mailbox rows of U nodes (what a batch fetches).

    memory float32 [U, d_mem]; memory_ts float64 [U] (0 before the first update); mail float32
    [U, M, d_mail]; mail_ts float64 [U, M]; mail_valid bool [U, M] (slot holds a mail).
    """

    memory: torch.Tensor
    memory_ts: torch.Tensor
    mail: torch.Tensor
    mail_ts: torch.Tensor
    mail_valid: torch.Tensor


class NodeMemory:
    """Memory [N, d_mem] and a ring mailbox [N, M, d_mail] of N nodes, on one device."""

    def __init__(self, num_nodes: int, memory_dim: int, mail_dim: int, mailbox_size: int = 1,
                 device: torch.device | str = "cpu"):
        n, dev = int(num_nodes), torch.device(device)
        self.num_nodes, self.memory_dim, self.mail_dim = n, int(memory_dim), int(mail_dim)
        self.mailbox_size = int(mailbox_size)
        self.memory = torch.zeros(n, self.memory_dim, device=dev)
        self.memory_ts = torch.zeros(n, dtype=torch.float64, device=dev)
        self.mail = torch.zeros(n, self.mailbox_size, self.mail_dim, device=dev)
        self.mail_ts = torch.zeros(n, self.mailbox_size, dtype=torch.float64, device=dev)
        self.mail_valid = torch.zeros(n, self.mailbox_size, dtype=torch.bool, device=dev)
        self.next_slot = torch.zeros(n, dtype=torch.long, device=dev)

    def _buffers(self) -> tuple[torch.Tensor, ...]:
        return tuple(getattr(self, k) for k in BUFFERS)

    def state(self) -> dict[str, torch.Tensor]:
        """Every buffer by name (:data:`BUFFERS`), copied to the CPU: what a checkpoint keeps."""
        return {k: getattr(self, k).detach().cpu().clone() for k in BUFFERS}

    def load_state(self, state: dict[str, torch.Tensor]) -> None:
        """Take back what :meth:`state` gave; ValueError naming the buffer whose name, shape or
        dtype differs (nothing is changed then)."""
        for k in BUFFERS:
            mine, got = getattr(self, k), state.get(k)
            if not isinstance(got, torch.Tensor) or got.shape != mine.shape or got.dtype != mine.dtype:
                have = "missing" if not isinstance(got, torch.Tensor) else f"{got.dtype} {list(got.shape)}"
                raise ValueError(f"memory buffer {k!r}: {have}, this model's is {mine.dtype} {list(mine.shape)}")
        for k in BUFFERS:
            getattr(self, k).copy_(state[k])

    def reset(self) -> None:
        """Every node back to zero memory and an empty mailbox (the start of an epoch)."""
        for b in self._buffers():
            b.zero_()

    def snapshot(self) -> tuple[torch.Tensor, ...]:
        """A copy of every buffer, for :meth:`restore` (evaluation passes that must not leave a trace)."""
        return tuple(b.clone() for b in self._buffers())

    def restore(self, snap: tuple[torch.Tensor, ...]) -> None:
        for b, s in zip(self._buffers(), snap):
            b.copy_(s)

    def read(self, ids: torch.Tensor) -> MemoryRows:
        """The rows of ``ids`` (int64 [U]), copied."""
        return MemoryRows(*(b.index_select(0, ids) for b in (self.memory, self.memory_ts, self.mail, self.mail_ts,
                                                             self.mail_valid)))

    def write_memory(self, ids: torch.Tensor, memory: torch.Tensor, ts: torch.Tensor) -> None:
        """Set the memory [U, d_mem] and its time [U] of the distinct nodes ``ids`` [U]."""
        self.memory[ids] = memory.detach()
        self.memory_ts[ids] = ts.to(torch.float64)

    def write_mail(self, ids: torch.Tensor, mail: torch.Tensor, ts: torch.Tensor) -> None:
        """Put one mail [U, d_mail] at time [U] in the mailbox of each distinct node of ``ids`` [U],
        overwriting its oldest slot."""
        slot = self.next_slot[ids]
        self.mail[ids, slot] = mail.detach()
        self.mail_ts[ids, slot] = ts.to(torch.float64)
        self.mail_valid[ids, slot] = True
        self.next_slot[ids] = (slot + 1) % self.mailbox_size


def latest_per_node(nodes: np.ndarray, key: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """The "most recent" aggregation: for each distinct value of ``nodes`` [n], the position of
    its occurrence with the largest ``key`` [n] (default: the position itself, i.e. the last
    occurrence; ties in key: the later position).

    Returns (unique int64 [U] sorted, position int64 [U]).
    """
    nodes = np.asarray(nodes, dtype=np.int64)
    if key is None:
        order, first = sort_groups(nodes)
    else:  # sort by (node, key, position): the last of each node's run has the largest key
        order = np.lexsort((np.arange(nodes.size), np.asarray(key), nodes))
        first = np.ones(order.size, dtype=bool)
        if order.size:
            first[1:] = nodes[order][1:] != nodes[order][:-1]
    starts = np.flatnonzero(first)
    last = np.append(starts[1:], nodes.size) - 1
    return nodes[order[starts]], order[last].astype(np.int64)
