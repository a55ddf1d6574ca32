"""The collectives the strategies use, each counting the bytes it sends and timing itself.

Every call is timed as the ``communication`` phase of the active :class:`~dynagnn.timing.PhaseTimer`;
before it, a barrier is timed as ``sync_wait`` (``sync_timing=True``), so that the time a fast worker
spends waiting for a slow one is not booked as communication. Bytes are counted **at the sender, for
data that leaves the process** (a worker's rows for itself cost nothing), per collective name, the
convention of :mod:`dynagnn.analysis.commvolume`, so counted bytes can be held against its closed forms.
A collective called as ``name`` in a forward pass counts its gradient's trip as ``name.backward``.

Uneven all-to-all: gloo on torch 2.13 runs ``all_to_all_single`` with uneven ``input_split_sizes`` /
``output_split_sizes`` along dim 0 (checked at the time of writing; the list form ``all_to_all`` is
the one gloo rejects for uneven sizes), so every exchange here is one ``all_to_all_single``.

Host staging: where the group's backend is gloo and a tensor is on a GPU (two processes sharing one
GPU, which nccl refuses: BLAD's co-located pair, or the tests' two workers on one GPU), each
collective copies the tensor to host memory, runs there, and copies the result back: gloo's CUDA
support covers only some collectives, and its point-to-point calls none. Counted bytes are the same.

With one process (no process group) every collective is the identity on its data and counts nothing,
so a strategy runs unchanged at P = 1.

All-reduce bytes are those of a ring all-reduce (what NCCL runs; gloo's algorithm may differ): of W
elements cut into P chunks, worker i sends chunk (i−s) mod P in reduce-scatter step s and chunk
(i−s+1) mod P in all-gather step s, s = 0..P−2; summed over workers 2(P−1)·W
(:func:`dynagnn.analysis.commvolume.ring_allreduce_volume`).
"""

from __future__ import annotations

import contextlib
import math
import pickle
from collections import defaultdict
from dataclasses import dataclass
from typing import Sequence

import numpy as np
import torch
import torch.distributed as dist

from dynagnn.distributed.context import DistContext
from dynagnn.timing import section


def ring_share(elements: int, world: int, rank: int) -> int:
    """Elements ``rank`` sends in a ring all-reduce of ``elements`` values among ``world`` workers."""
    if world <= 1:
        return 0
    chunk = [len(c) for c in np.array_split(np.arange(int(elements)), world)]
    return sum(chunk[(rank - s) % world] + chunk[(rank - s + 1) % world] for s in range(world - 1))


@dataclass
class HaloPlan:
    """What one worker exchanges before one aggregation of one snapshot.

    ``send_index`` int64 [S]: local rows to send, grouped by destination rank (ascending), each
    group in ascending global vertex id; ``send_counts`` [P]: rows to each rank (0 for itself);
    ``recv_counts`` [P]: halo rows from each rank, which arrive grouped by source rank in the order
    the source sends them.
    """

    send_index: torch.Tensor
    send_counts: list[int]
    recv_counts: list[int]

    @property
    def halo_rows(self) -> int:
        return int(sum(self.recv_counts))

    def to(self, device) -> "HaloPlan":
        return HaloPlan(self.send_index.to(device), self.send_counts, self.recv_counts)


class Comm:
    """Collectives of one process of a job (see the module docstring). ``counts()`` gives the bytes."""

    def __init__(self, ctx: DistContext, sync_timing: bool = True, group=None):
        self.ctx = ctx
        self.sync_timing = sync_timing
        self.group = group
        self.bytes: dict[str, int] = defaultdict(int)
        self.calls: dict[str, int] = defaultdict(int)
        self._gloo: bool | None = None  # the group's backend is gloo (asked once, when first needed)

    @property
    def world(self) -> int:
        return self.ctx.world_size

    @property
    def rank(self) -> int:
        return self.ctx.rank

    @property
    def active(self) -> bool:
        return self.ctx.distributed

    def _staged(self, t: torch.Tensor) -> bool:
        """Whether ``t`` goes through host memory (a CUDA tensor on a gloo group; module docstring)."""
        if not t.is_cuda:
            return False
        if self._gloo is None:
            self._gloo = dist.get_backend(self.group) == "gloo"
        return self._gloo

    # ------------------------------------------------------------------ bookkeeping

    def count(self, name: str, nbytes: int, calls: int = 1) -> None:
        self.bytes[name] += int(nbytes)
        self.calls[name] += int(calls)

    def take_counts(self) -> dict[str, tuple[int, int]]:
        """{collective: (bytes, calls)} since the last call, and reset."""
        out = {k: (self.bytes[k], self.calls[k]) for k in self.calls}
        self.bytes.clear()
        self.calls.clear()
        return out

    @contextlib.contextmanager
    def _timed(self):
        if self.sync_timing:
            with section("sync_wait"):
                dist.barrier(group=self.group)
        with section("communication"):
            yield

    # ------------------------------------------------------------------ plain collectives

    def barrier(self) -> None:
        if self.active:
            with section("sync_wait"):
                dist.barrier(group=self.group)

    def all_reduce(self, t: torch.Tensor, name: str = "all_reduce") -> torch.Tensor:
        """Sum ``t`` over workers, in place; returns ``t``."""
        if not self.active:
            return t
        with self._timed():
            if self._staged(t):
                host = _host(t)
                dist.all_reduce(host, op=dist.ReduceOp.SUM, group=self.group)
                t.copy_(host)
            else:
                dist.all_reduce(t, op=dist.ReduceOp.SUM, group=self.group)
        self.count(name, ring_share(t.numel(), self.world, self.rank) * t.element_size())
        return t

    def all_reduce_grads(self, params: Sequence[torch.Tensor], name: str = "grad_all_reduce") -> None:
        """Sum every parameter's gradient over workers in one flat buffer. A missing grad counts as
        zero, and a parameter that no worker has a gradient for keeps none, as one process would
        leave it (Adam skips such a parameter; a zero gradient would still move it by its momentum):
        one flag per parameter rides at the end of the buffer."""
        if not self.active:
            return
        params = [p for p in params if p.requires_grad]
        if not params:
            return
        like = params[0]
        flags = torch.tensor([float(p.grad is not None) for p in params], dtype=like.dtype, device=like.device)
        flat = torch.cat([(p.grad if p.grad is not None else torch.zeros_like(p)).reshape(-1) for p in params]
                         + [flags])
        self.all_reduce(flat, name)
        offset = 0
        had = flat[-len(params):].tolist()
        for p, any_grad in zip(params, had):
            n = p.numel()
            p.grad = flat[offset:offset + n].view_as(p) if any_grad else None
            offset += n

    def broadcast(self, t: torch.Tensor, src: int = 0, name: str = "broadcast") -> torch.Tensor:
        if not self.active:
            return t
        with self._timed():
            if self._staged(t):
                host = _host(t)
                dist.broadcast(host, src, group=self.group)
                t.copy_(host)
            else:
                dist.broadcast(t, src, group=self.group)
        if self.rank == src:
            self.count(name, t.numel() * t.element_size() * (self.world - 1))
        return t

    def send(self, t: torch.Tensor, dst: int, name: str = "send") -> None:
        with section("communication"):
            dist.send(_host(t) if self._staged(t) else t.contiguous(), dst, group=self.group)
        self.count(name, t.numel() * t.element_size())

    def recv(self, t: torch.Tensor, src: int, name: str = "recv", phase: str = "communication") -> torch.Tensor:
        """Receive into ``t``. ``phase``: what the wait is timed as; a pipeline stage waiting for its
        partner's hand-off is waiting on the partner (``sync_wait``), not moving bytes."""
        with section(phase):
            if self._staged(t):
                host = torch.empty(t.shape, dtype=t.dtype)
                dist.recv(host, src, group=self.group)
                t.copy_(host)
            else:
                dist.recv(t, src, group=self.group)
        return t

    def isend(self, t: torch.Tensor, dst: int, name: str = "send"):
        """Start sending ``t`` (kept alive by the caller until the returned handle's ``wait()``): a
        pipeline that sends ahead must not block until the partner receives, or two partners that
        send before they receive would wait on each other."""
        with section("communication"):
            if self._staged(t):
                host = _host(t)
                work = _HoldingWork(dist.isend(host, dst, group=self.group), host)
            else:
                work = dist.isend(t, dst, group=self.group)
        self.count(name, t.numel() * t.element_size())
        return work

    def all_gather_object(self, obj) -> list:
        """Every worker's ``obj``, in rank order (bookkeeping: timings, counts; bytes are counted)."""
        if not self.active:
            return [obj]
        out = [None] * self.world
        with section("communication"):
            dist.all_gather_object(out, obj, group=self.group)
        self.count("objects", len(pickle.dumps(obj)) * (self.world - 1))
        return out

    def broadcast_object(self, obj, src: int = 0):
        """``obj`` of rank ``src`` on every worker (small bookkeeping: metrics, decisions)."""
        if not self.active:
            return obj
        box = [obj]
        with section("communication"):
            dist.broadcast_object_list(box, src, group=self.group)
        if self.rank == src:
            self.count("objects", len(pickle.dumps(obj)) * (self.world - 1))
        return box[0]

    def all_to_all(self, x: torch.Tensor, send_counts: Sequence[int], recv_counts: Sequence[int],
                   name: str = "all_to_all") -> torch.Tensor:
        """Rows of ``x`` [sum(send_counts), ...], grouped by destination rank, to their ranks; returns the
        received rows [sum(recv_counts), ...] grouped by source rank. Not differentiable (see
        :meth:`exchange`)."""
        send_counts, recv_counts = [int(c) for c in send_counts], [int(c) for c in recv_counts]
        if len(send_counts) != self.world or len(recv_counts) != self.world:
            raise ValueError(f"all_to_all needs {self.world} send and receive counts, got "
                             f"{len(send_counts)} and {len(recv_counts)}")
        if x.shape[0] != sum(send_counts):
            raise ValueError(f"all_to_all: {x.shape[0]} rows for send counts summing to {sum(send_counts)}")
        if not self.active:
            return x.clone()
        x = x.contiguous()
        staged = self._staged(x)
        src = _host(x) if staged else x
        out = src.new_empty((sum(recv_counts), *x.shape[1:]))
        with self._timed():
            dist.all_to_all_single(out, src, recv_counts, send_counts, group=self.group)
        if staged:
            out = out.to(x.device)
        row = math.prod(x.shape[1:]) * x.element_size()  # x may have no rows to send
        self.count(name, (sum(send_counts) - send_counts[self.rank]) * row)
        return out

    # ------------------------------------------------------------------ differentiable exchanges

    def exchange(self, x: torch.Tensor, send_counts: Sequence[int], recv_counts: Sequence[int],
                 name: str) -> torch.Tensor:
        """:meth:`all_to_all` with a backward pass: the gradient of the received rows goes back to
        their senders (the transposed all-to-all), counted as ``name.backward``."""
        return _Exchange.apply(x, self, tuple(send_counts), tuple(recv_counts), name)

    def halo(self, x: torch.Tensor, plan: HaloPlan, name: str = "halo") -> torch.Tensor:
        """The remote rows [plan.halo_rows, F] this worker's aggregation needs, from the local rows
        ``x`` [n_local, F] of every worker; the backward pass returns their gradients to the owners
        and adds them to the owners' rows."""
        return _Halo.apply(x, self, plan, name)

    def gather_rows(self, x: torch.Tensor, counts: Sequence[int], name: str = "gather") -> torch.Tensor:
        """Every worker's rows [counts[r], F] concatenated in rank order [sum(counts), F], on every
        worker; the backward pass sums each worker's gradient of a rank's rows onto that rank."""
        return _GatherRows.apply(x, self, tuple(int(c) for c in counts), name)


def _host(t: torch.Tensor) -> torch.Tensor:
    """A contiguous host copy of a CUDA tensor (``.cpu()`` keeps a transposed tensor's strides, which
    gloo refuses)."""
    return t.detach().cpu().contiguous()


class _HoldingWork:
    """An isend's handle that keeps its host copy alive until ``wait()`` (the caller keeps only the
    CUDA tensor)."""

    def __init__(self, work, host: torch.Tensor):
        self.work, self.host = work, host

    def wait(self, *args, **kwargs):
        out = self.work.wait(*args, **kwargs)
        self.host = None
        return out

    def is_completed(self) -> bool:
        return self.work.is_completed()


class _Exchange(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, comm: Comm, send, recv, name):
        ctx.comm, ctx.send, ctx.recv, ctx.name = comm, send, recv, name
        return comm.all_to_all(x, send, recv, name)

    @staticmethod
    def backward(ctx, grad):
        return ctx.comm.all_to_all(grad, ctx.recv, ctx.send, ctx.name + ".backward"), None, None, None, None


class _Halo(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, comm: Comm, plan: HaloPlan, name):
        ctx.comm, ctx.plan, ctx.name, ctx.n = comm, plan, name, x.shape[0]
        return comm.all_to_all(x.index_select(0, plan.send_index), plan.send_counts, plan.recv_counts, name)

    @staticmethod
    def backward(ctx, grad):
        plan = ctx.plan
        back = ctx.comm.all_to_all(grad, plan.recv_counts, plan.send_counts, ctx.name + ".backward")
        gx = back.new_zeros((ctx.n, *back.shape[1:])).index_add_(0, plan.send_index, back)
        return gx, None, None, None


class _GatherRows(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, comm: Comm, counts, name):
        ctx.comm, ctx.counts, ctx.name = comm, counts, name
        world, me = comm.world, comm.rank
        if x.shape[0] != counts[me]:
            raise ValueError(f"gather_rows: rank {me} has {x.shape[0]} rows, counts say {counts[me]}")
        if not comm.active:
            return x.clone()
        return comm.all_to_all(x.repeat(world, *([1] * (x.dim() - 1))), [counts[me]] * world, list(counts), name)

    @staticmethod
    def backward(ctx, grad):
        comm, counts = ctx.comm, ctx.counts
        if not comm.active:
            return grad, None, None, None
        mine = counts[comm.rank]
        back = comm.all_to_all(grad, list(counts), [mine] * comm.world, ctx.name + ".backward")
        return back.view(comm.world, mine, *grad.shape[1:]).sum(0), None, None, None
