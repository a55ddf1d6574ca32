"""Messages between the two processes of a co-located pair, through memory both map.

BLAD hands each group's hidden state from p1 to p2, and its gradient back, through the GPU's memory
pool. Sent through gloo over the loopback, the receiver copies each message out of a socket: on this
project's 2-core machine 0.46 ms for a 1.25 MiB state, against 0.10 ms for a message of a few bytes
and 0.02 ms for a memory copy of the state. Here each direction has a ring of bytes in one file both
processes map (under ``/dev/shm``, its pages reserved up front, and unlinked as soon as both have
mapped it, so that a crash leaves nothing behind). The sender copies a message's parts into its
ring and sends a doorbell of a few int64 over gloo: where the message starts, the parts' dtypes and
lengths. The receiver copies the parts out. The doorbell keeps gloo's failure handling: a dead
partner ends the wait with gloo's connection error (:mod:`dynagnn.dist.launch`).

Flow: each doorbell also carries how many of the other direction's messages its sender has taken,
so a sender knows which of its messages the partner still has to read and never writes over them.
A message that does not fit beside those, and every message when the partner cannot map the file
(torchrun put the pair on two machines) or the file cannot be made, goes over gloo as before: the
doorbell says so and the parts follow it. BLAD's pipeline keeps at most its queue depth of groups in
flight each way, so a ring of ``depth`` times a group's messages (plus the largest message, the
room a wrap can waste) never falls back.
"""

from __future__ import annotations

import logging
import os
import tempfile
import uuid
from typing import Sequence

import torch

from dynagnn.dist.comm import Comm
from dynagnn.dist.context import DistError
from dynagnn.timing import section

log = logging.getLogger(__name__)

DTYPES = (torch.float32, torch.float64, torch.int64, torch.int32, torch.float16, torch.bfloat16, torch.uint8,
          torch.bool)
MAX_PARTS = 4
ALIGN = 64  # bytes: every part starts on a cache line, so any dtype's view of it is aligned
# doorbell: start in the ring (-1: the parts follow over gloo), the sender's count of messages taken, part count,
# then (dtype code, length) per part
HEADER = 3 + 2 * MAX_PARTS


def _padded(nbytes: int) -> int:
    return (int(nbytes) + ALIGN - 1) // ALIGN * ALIGN


def _shared_dir() -> str:
    return "/dev/shm" if os.path.isdir("/dev/shm") and os.access("/dev/shm", os.W_OK) else tempfile.gettempdir()


class PairChannel:
    """One process's end of the channel to its partner (module docstring). Open it on both processes
    with :meth:`open` (collective over the pair); then ``send(parts, name)`` on one side matches
    ``recv(name)`` on the other, in order, each way; ``flush()`` waits until every doorbell sent
    has left."""

    def __init__(self, comm: Comm, partner: int, capacity: int, arena: torch.Tensor | None, first: bool,
                 device: torch.device):
        self.comm, self.partner, self.device = comm, int(partner), torch.device(device)
        self.capacity = int(capacity)
        self.arena = arena  # uint8 [2, capacity] (None: gloo only); row 0 carries p1 -> p2
        self.out_ring, self.in_ring = (0, 1) if first else (1, 0)
        self.sent = 0  # messages this end sent
        self.taken = 0  # messages this end took from its partner
        self.peer_taken = 0  # of ours, as the partner's latest doorbell said
        self.inflight: list[tuple[int, int, int]] = []  # (message, start, end) in our ring, maybe untaken
        self.head = 0  # where our next message would start
        self.via_gloo = 0  # messages that went over gloo (no room in the ring, or nothing shared)
        self.pending: list = []  # (work, keep-alive tensors) of sends not yet known to have left

    @property
    def shared(self) -> bool:
        return self.arena is not None

    @classmethod
    def open(cls, comm: Comm, partner: int, first: bool, capacity: int, device: torch.device | str = "cpu",
             shared: bool = True) -> "PairChannel":
        """Both processes call this; ``first`` on exactly one of them (p1), which creates the file and
        whose ``capacity`` (bytes of each direction's ring) counts (the other's is ignored).
        ``shared=False`` (on p1): gloo only."""
        ok = torch.zeros(1, dtype=torch.int64)
        arena, path = None, None
        if first:
            capacity = _padded(max(int(capacity), ALIGN))
            size = 2 * capacity
            name = b""
            if shared:
                path = os.path.join(_shared_dir(), f"dynagnn-pair-{os.getpid()}-{uuid.uuid4().hex[:12]}")
                try:
                    arena = _map(path, size, create=True)
                    name = path.encode()
                except (OSError, RuntimeError) as exc:
                    log.warning("co-located hand-over through gloo: cannot map %d bytes at %s (%s)", size, path, exc)
                    _unlink(path)
                    arena, path = None, None
            comm.send(torch.tensor([len(name), capacity], dtype=torch.int64), partner, "channel")
            if name:
                comm.send(torch.frombuffer(bytearray(name), dtype=torch.uint8), partner, "channel")
            comm.recv(ok, partner, "channel")
            if path is not None:
                _unlink(path)  # both have it mapped (or p2 gave up): the mapping outlives the name
            if not ok.item():
                arena = None
        else:
            n = torch.zeros(2, dtype=torch.int64)
            comm.recv(n, partner, "channel")
            length, capacity = n.tolist()
            size = 2 * capacity
            if length:
                raw = torch.zeros(length, dtype=torch.uint8)
                comm.recv(raw, partner, "channel")
                path = bytes(raw.tolist()).decode()
                try:
                    arena = _map(path, size, create=False)
                except (OSError, RuntimeError) as exc:
                    log.warning("co-located hand-over through gloo: cannot map the partner's %s (%s)", path, exc)
            ok.fill_(int(arena is not None))
            comm.send(ok, partner, "channel")
        if arena is not None:
            arena = arena.view(2, capacity)
        return cls(comm, partner, capacity, arena, first, device)

    # ------------------------------------------------------------------ sending

    def _place(self, nbytes: int) -> int | None:
        """Where in our ring a message of ``nbytes`` goes without touching one the partner has not
        taken; None when it does not fit now."""
        self.inflight = [m for m in self.inflight if m[0] >= self.peer_taken]
        start = self.head if self.head + nbytes <= self.capacity else 0
        if start + nbytes > self.capacity:
            return None
        if any(a < start + nbytes and start < b for _, a, b in self.inflight):
            return None
        return start

    def send(self, parts: Sequence[torch.Tensor], name: str) -> None:
        """Send ``parts`` (up to MAX_PARTS tensors of the dtypes in DTYPES; received flat) ahead: this
        returns once they are copied out of the caller's tensors (into the ring), or handed to gloo."""
        parts = [p.detach().reshape(-1) for p in parts]
        if len(parts) > MAX_PARTS:
            raise ValueError(f"a pair message holds at most {MAX_PARTS} parts, got {len(parts)}")
        fields = [-1, self.taken, len(parts)] + [0] * (2 * MAX_PARTS)
        for i, p in enumerate(parts):
            fields[3 + 2 * i:5 + 2 * i] = DTYPES.index(p.dtype), p.numel()
        head = torch.tensor(fields, dtype=torch.int64)
        sizes = [p.numel() * p.element_size() for p in parts]
        with section("communication"):
            self.pending = [(w, keep) for w, keep in self.pending if not w.is_completed()]
            start = self._place(sum(_padded(n) for n in sizes)) if self.shared else None
            if start is not None:
                off = start
                for p, n in zip(parts, sizes):
                    self.arena[self.out_ring, off:off + n].view(p.dtype).copy_(p)
                    off += _padded(n)
                if self.device.type == "cuda":
                    torch.cuda.current_stream(self.device).synchronize()
                self.inflight.append((self.sent, start, off))
                self.head = off
                head[0] = start
                self.pending.append((self.comm.isend(head, self.partner, name), (head,)))
                self.comm.count(name, sum(sizes), calls=0)  # the doorbell's call: the parts left with it
            else:
                if self.shared and not self.via_gloo:
                    log.info("pair channel: message %d (%d bytes) goes over gloo: no room beside the %d "
                             "untaken in the %d-byte ring", self.sent, sum(sizes), len(self.inflight), self.capacity)
                self.via_gloo += 1
                self.pending.append((self.comm.isend(head, self.partner, name), (head,)))
                for p in parts:
                    w = p.cpu()  # gloo sends host memory (and a CUDA tensor's copy is ours to keep alive)
                    self.pending.append((self.comm.isend(w, self.partner, name), (w,)))
        self.sent += 1

    def flush(self) -> None:
        """Wait until every message sent has left this process (gloo's sends of doorbells and parts)."""
        for work, _ in self.pending:
            work.wait()
        self.pending.clear()

    # ------------------------------------------------------------------ receiving

    def recv(self, name: str, phase: str = "sync_wait") -> list[torch.Tensor]:
        """The partner's next message: its parts, flat, on this end's device. The wait for the doorbell
        and the copy are timed as ``phase``: a pipeline stage waits on its partner, it moves few bytes."""
        head = torch.zeros(HEADER, dtype=torch.int64)
        self.comm.recv(head, self.partner, name, phase=phase)
        start, peer_taken, n, *rest = head.tolist()
        self.peer_taken = max(self.peer_taken, peer_taken)
        specs = [(DTYPES[rest[2 * i]], rest[2 * i + 1]) for i in range(n)]
        out = []
        with section(phase):
            if start >= 0:
                if not self.shared:
                    raise DistError("pair channel: the partner wrote to shared memory this end never mapped")
                off = start
                for dtype, numel in specs:
                    nb = numel * dtype.itemsize
                    out.append(self.arena[self.in_ring, off:off + nb].view(dtype).to(self.device, copy=True))
                    off += _padded(nb)
            else:
                for dtype, numel in specs:
                    buf = torch.empty(numel, dtype=dtype)
                    self.comm.recv(buf, self.partner, name, phase=phase)
                    out.append(buf.to(self.device))
        self.taken += 1
        return out


def _map(path: str, size: int, create: bool) -> torch.Tensor:
    if create:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o600)
        try:
            # reserve the pages now: a tmpfs that fills up later would kill a writer with SIGBUS
            if hasattr(os, "posix_fallocate"):
                os.posix_fallocate(fd, 0, size)
            else:
                os.ftruncate(fd, size)
        finally:
            os.close(fd)
    elif os.path.getsize(path) < size:
        raise OSError(f"{path} holds {os.path.getsize(path)} bytes, the channel needs {size}")
    return torch.from_file(path, shared=True, size=size, dtype=torch.uint8)


def _unlink(path: str) -> None:
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass


def message_bytes(*parts: tuple[int, torch.dtype]) -> int:
    """The ring bytes a message of these (elements, dtype) parts takes (each part aligned)."""
    return sum(_padded(int(n) * d.itemsize) for n, d in parts)

