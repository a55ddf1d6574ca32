"""PiPAD's inter-frame reuse (§4.3): ``Â_t X_t`` of every snapshot kept once computed, on the host and
in a bounded set of device slots, for the frame engine (:mod:`dynagnn.train.frame_engine`)."""

from __future__ import annotations

import threading
from typing import Sequence

import numpy as np
import torch


class ReuseCache:
    """``Â_t X_t`` [N, F] of every snapshot once computed (PiPAD's inter-frame reuse, §4.3).

    The host holds all T (``host`` [T, N, F], pinned on a GPU); the device holds ``slots`` of them
    (``slots`` >= T: every snapshot has its own slot, and a frame's entries are a view). The producer
    calls :meth:`fetch` for the next frame, so the device cache fills in next-frame order; when full,
    the least recently used snapshot outside the frames in flight gives up its slot. On a CPU the
    host is the device: one buffer, every snapshot in its own slot, nothing fetched or copied twice.
    Thread-safe (the producer fetches while the consumer reads and stores).
    """

    def __init__(self, num_snapshots: int, num_nodes: int, dim: int, device: torch.device, slots: int,
                 shared: bool | None = None):
        """``shared``: the device buffer is the host's (default: on a CPU; False keeps the two apart,
        as on a GPU)."""
        self.T, self.device = int(num_snapshots), torch.device(device)
        self.gpu = self.device.type == "cuda"
        self.host = torch.zeros(self.T, num_nodes, dim)
        if self.gpu:
            self.host = self.host.pin_memory()
        self.filled = np.zeros(self.T, dtype=bool)
        self.shared = self.device.type == "cpu" if shared is None else bool(shared)
        self.slots = self.T if self.shared else max(1, min(int(slots), self.T))
        self.identity = self.slots >= self.T
        self.dev = self.host if self.shared else torch.zeros(self.slots, num_nodes, dim, device=self.device)
        self.slot_of = np.arange(self.T) if self.identity else np.full(self.T, -1)
        self.resident = np.zeros(self.T, dtype=bool)
        self.owner = np.full(self.slots, -1)
        self.last_use = np.zeros(self.slots, dtype=np.int64)
        self.clock = 0
        self.lock = threading.Lock()
        self.bytes_per_entry = num_nodes * dim * 4

    def _slot(self, t: int, keep: set[int]) -> int:
        s = self.slot_of[t]
        if s >= 0:
            return s
        free = np.flatnonzero(self.owner < 0)
        if free.size:
            s = int(free[0])
        else:
            order = np.argsort(self.last_use, kind="stable")
            s = next(int(i) for i in order if int(self.owner[i]) not in keep)
            old = int(self.owner[s])
            self.slot_of[old] = -1
            self.resident[old] = False
        self.owner[s] = t
        self.slot_of[t] = s
        return s

    def _touch(self, ts) -> None:
        self.clock += 1
        for t in ts:
            if self.slot_of[t] >= 0:
                self.last_use[self.slot_of[t]] = self.clock

    def fetch(self, ts: Sequence[int], keep: set[int]) -> int:
        """Bring the computed entries of ``ts`` to the device (the producer's job); ``keep``: snapshots
        whose slots must not be given up (the frames in flight). Returns the bytes moved."""
        if self.shared:   # the host is the device: nothing to move, no slot to give up
            return 0
        moved = 0
        with self.lock:
            for t in ts:
                if self.filled[t] and not self.resident[t]:
                    s = self._slot(t, keep | set(ts))
                    # .data: writing another snapshot's slot must not bump the version of a view that
                    # autograd saved for an earlier frame (that slot is untouched)
                    self.dev.data[s].copy_(self.host[t], non_blocking=self.gpu)
                    self.resident[t] = True
                    moved += self.bytes_per_entry
            self._touch(ts)
        return moved

    def missing(self, ts: Sequence[int]) -> list[int]:
        with self.lock:
            return [i for i, t in enumerate(ts) if not self.filled[t]]

    def store(self, ts: Sequence[int], values: torch.Tensor, keep: set[int]) -> None:
        """Keep ``values`` [len(ts), N, F] (no gradient) as the entries of ``ts``, host and device."""
        with self.lock:
            host = values.detach().to("cpu")
            for i, t in enumerate(ts):
                s = self._slot(t, keep | set(ts))
                # .data: writing another snapshot's slot must not bump the version of a view that
                # autograd saved for an earlier frame (that slot is untouched)
                self.dev.data[s].copy_(values[i].detach())
                if not self.shared:
                    self.host[t].copy_(host[i])
                self.filled[t] = True
                self.resident[t] = True
            self._touch(ts)

    def view(self, ts: Sequence[int]) -> torch.Tensor:
        """The device entries of ``ts`` (all resident) as [len(ts), N, F]: a view of the device buffer
        when their slots are consecutive, else a gathered copy."""
        if self.shared:
            slots = [int(t) if self.filled[t] else -1 for t in ts]
        else:
            with self.lock:   # Python ints: a frame holds at most a few dozen, where numpy's calls cost more
                slots = [int(self.slot_of[t]) for t in ts]
                self._touch(ts)
        if min(slots) < 0:
            raise RuntimeError(f"reuse cache: snapshots {list(ts)} are not all on the device")
        s0 = slots[0]
        if slots == list(range(s0, s0 + len(ts))):
            return self.dev[s0:s0 + len(ts)]
        return self.dev.index_select(0, torch.as_tensor(slots, device=self.device))
