"""Messages between the two processes of a co-located pair, through memory both map.

BLAD hands each group's hidden state from p1 to p2, and its gradient back, through the GPU's memory
pool. Sent through gloo over the loopback, the receiver copies each message out of a socket, and
each message waits for gloo's I/O thread to be scheduled: on this project's 2-core machine, with
both processes computing, a 1.25 MiB message already sent took 0.17 ms to receive at the median,
3.2 ms at the 90th percentile and 5.5 ms at worst.

Here each direction has a ring of bytes in one file both processes map (under ``/dev/shm``, its
pages reserved up front) and a pipe for doorbells. The sender copies a message's parts into its ring
and writes a doorbell of a few int64 to the pipe: where the message starts, the parts' dtypes and
lengths. The receiver reads the doorbell itself (no helper thread: a doorbell already written is
read at once) and copies the parts out. The names are unlinked as soon as both processes opened
them, so a crash leaves nothing behind (the files of a process killed in the moment before are
removed by the next channel made on this machine), and a partner that dies closes its end of the pipe: the
receiver reads the end of the file and raises :class:`~dynagnn.distributed.context.DistError` instead of
waiting (and gives up after the job's timeout, :func:`~dynagnn.distributed.launch.default_timeout`).

Flow: each doorbell also carries how many of the other direction's messages its sender has taken,
so a sender knows which of its messages the partner still has to read and never writes over them.
A message that does not fit beside those goes over gloo (its doorbell says so and its parts
follow through gloo); when the partner cannot map the file (torchrun put the pair on two machines)
or the file cannot be made, doorbells and parts all go over gloo. BLAD's pipeline keeps at most its
queue depth of groups in flight each way, so a ring of ``depth`` times a group's messages (plus the
largest message, the room a wrap can waste) never falls back.

Counted (:meth:`Comm.count`, at the sender, under the message's name): every part's bytes and a
doorbell's 88 bytes per message, one call per message plus one per part sent over gloo.
"""

from __future__ import annotations

import logging
import os
import select
import struct
import tempfile
import time
import uuid
import weakref
from typing import Sequence

import torch

from dynagnn.distributed.comm import Comm
from dynagnn.distributed.context import DistError
from dynagnn.distributed.launch import default_timeout
from dynagnn.timing import section

log = logging.getLogger(__name__)

DTYPES = (torch.float32, torch.float64, torch.int64, torch.int32, torch.float16, torch.bfloat16, torch.uint8,
          torch.bool)
MAX_PARTS = 4
ALIGN = 64  # bytes: every part starts on a cache line, so any dtype's view of it is aligned
# doorbell: start in the ring (-1: the parts follow over gloo), the sender's count of messages taken, part count,
# then (dtype code, length) per part
HEADER = 3 + 2 * MAX_PARTS
_DOORBELL = struct.Struct(f"<{HEADER}q")


def _padded(nbytes: int) -> int:
    return (int(nbytes) + ALIGN - 1) // ALIGN * ALIGN


def _shared_dir() -> str:
    return "/dev/shm" if os.path.isdir("/dev/shm") and os.access("/dev/shm", os.W_OK) else tempfile.gettempdir()


class PairChannel:
    """One process's end of the channel to its partner (module docstring). Open it on both processes
    with :meth:`open` (collective over the pair); then ``send(parts, name)`` on one side matches
    ``recv(name)`` on the other, in order, each way; ``flush()`` waits until every part sent over
    gloo has left."""

    def __init__(self, comm: Comm, partner: int, capacity: int, arena: torch.Tensor | None, first: bool,
                 device: torch.device, pipes: tuple[int, int] | None = None, timeout: float | None = None):
        self.comm, self.partner, self.device = comm, int(partner), torch.device(device)
        self.capacity = int(capacity)
        self.arena = arena  # uint8 [2, capacity] (None: gloo only); row 0 carries p1 -> p2
        self.out_ring, self.in_ring = (0, 1) if first else (1, 0)
        self.rfd, self.wfd = pipes if pipes is not None else (None, None)  # doorbells in, out
        self.timeout = default_timeout() if timeout is None else float(timeout)
        self.sent = 0  # messages this end sent
        self.taken = 0  # messages this end took from its partner
        self.peer_taken = 0  # of ours, as the partner's latest doorbell said
        self.inflight: list[tuple[int, int, int]] = []  # (message, start, end) in our ring, maybe untaken
        self.head = 0  # where our next message would start
        self.via_gloo = 0  # messages whose parts went over gloo (no room in the ring, or nothing shared)
        self.pending: list = []  # (work, keep-alive tensors) of sends not yet known to have left
        if pipes is not None:
            self._closer = weakref.finalize(self, _close_fds, pipes)
            self._poll = select.poll()
            self._poll.register(self.rfd, select.POLLIN)

    @property
    def shared(self) -> bool:
        return self.arena is not None

    @classmethod
    def open(cls, comm: Comm, partner: int, first: bool, capacity: int, device: torch.device | str = "cpu",
             shared: bool = True) -> "PairChannel":
        """Both processes call this; ``first`` on exactly one of them (p1), which creates the file and
        the pipes and whose ``capacity`` (bytes of each direction's ring) counts (the other's is
        ignored). ``shared=False`` (on p1): gloo only."""
        ok = torch.zeros(1, dtype=torch.int64)
        arena, base, fds = None, None, []
        try:
            if first:
                capacity = _padded(max(int(capacity), ALIGN))
                if shared:
                    _sweep(_shared_dir())
                    base = os.path.join(_shared_dir(), f"dynagnn-pair-{os.getpid()}-{uuid.uuid4().hex[:12]}")
                    try:
                        arena = _map(base, 2 * capacity, create=True)
                        os.mkfifo(base + ".to2", 0o600)
                        os.mkfifo(base + ".to1", 0o600)
                        fds.append(os.open(base + ".to1", os.O_RDONLY | os.O_NONBLOCK))  # before p2's writer
                    except (OSError, RuntimeError) as exc:
                        log.warning("co-located hand-over through gloo: cannot make the shared ring at %s (%s)",
                                    base, exc)
                        arena = None
                name = base.encode() if arena is not None else b""
                comm.send(torch.tensor([len(name), capacity], dtype=torch.int64), partner, "channel")
                if name:
                    comm.send(torch.frombuffer(bytearray(name), dtype=torch.uint8), partner, "channel")
                    comm.recv(ok, partner, "channel")
                    if ok.item():  # p2's read end is open; p2 waits for this answer before it reads
                        ok.fill_(_open_writer(base + ".to2", fds))  # (a read before the writer opens reads the end)
                        comm.send(ok, partner, "channel")
            else:
                n = torch.zeros(2, dtype=torch.int64)
                comm.recv(n, partner, "channel")
                length, capacity = n.tolist()
                if length:
                    raw = torch.zeros(length, dtype=torch.uint8)
                    comm.recv(raw, partner, "channel")
                    path = bytes(raw.tolist()).decode()
                    try:
                        arena = _map(path, 2 * capacity, create=False)
                        fds.append(os.open(path + ".to2", os.O_RDONLY | os.O_NONBLOCK))
                        ok.fill_(_open_writer(path + ".to1", fds))
                    except (OSError, RuntimeError) as exc:
                        log.warning("co-located hand-over through gloo: cannot open the partner's ring %s (%s)",
                                    path, exc)
                    comm.send(ok, partner, "channel")
                    if ok.item():
                        comm.recv(ok, partner, "channel")
        except BaseException:
            _close_fds(fds)
            raise
        finally:
            if base is not None:
                _unlink(base)  # both ends opened what they need, or gave up: nothing outlives the job
        pipes = None
        if ok.item():
            pipes = tuple(fds)
        else:
            _close_fds(fds)
            arena = None
        if arena is not None:
            arena = arena.view(2, capacity)
        return cls(comm, partner, capacity, arena, first, device, pipes)

    def close(self) -> None:
        """Close the pipes and unmap the ring (the partner's next doorbell read ends); the caller has
        flushed what it needs delivered."""
        if self.rfd is not None:
            self._closer()
            self.rfd = self.wfd = None
        self.arena = None

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
                fields[0], self.head = start, off
            elif self.shared and not self.via_gloo:
                log.info("pair channel: message %d (%d bytes) goes over gloo: no room beside the %d "
                         "untaken in the %d-byte ring", self.sent, sum(sizes), len(self.inflight), self.capacity)
            self._ring(fields, name)
            if start is not None:
                self.comm.count(name, sum(sizes), calls=0)  # the doorbell is the call
            else:
                self.via_gloo += 1
                for p in parts:
                    w = p.to("cpu", copy=True)  # gloo sends host memory, later: the caller may change p
                    self.pending.append((self.comm.isend(w, self.partner, name), (w,)))
        self.sent += 1

    def _ring(self, fields: list[int], name: str) -> None:
        """Send a doorbell: through the pipe when there is one, else over gloo."""
        if self.wfd is None:
            head = torch.tensor(fields, dtype=torch.int64)
            self.pending.append((self.comm.isend(head, self.partner, name), (head,)))
            return
        try:
            os.write(self.wfd, _DOORBELL.pack(*fields))  # atomic: far below PIPE_BUF
        except BrokenPipeError:
            raise DistError(f"the co-located partner (rank {self.partner}) closed the pair channel: it exited") from None
        self.comm.count(name, _DOORBELL.size)

    def flush(self) -> None:
        """Wait until every message sent has left this process (gloo's sends of doorbells and parts)."""
        for work, _ in self.pending:
            work.wait()
        self.pending.clear()

    # ------------------------------------------------------------------ receiving

    def recv(self, name: str, phase: str = "sync_wait") -> list[torch.Tensor]:
        """The partner's next message: its parts, flat, on this end's device. The wait for the doorbell
        and the copy are timed as ``phase``: a pipeline stage waits on its partner, it moves few bytes."""
        start, peer_taken, n, *rest = self._doorbell(name, phase)
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


    def _doorbell(self, name: str, phase: str) -> list[int]:
        """The partner's next doorbell: from the pipe when there is one (read here, at once when it is
        already written), else over gloo."""
        if self.rfd is None:
            head = torch.zeros(HEADER, dtype=torch.int64)
            self.comm.recv(head, self.partner, name, phase=phase)
            return head.tolist()
        got, deadline = b"", None
        with section(phase):
            while len(got) < _DOORBELL.size:
                try:
                    chunk = os.read(self.rfd, _DOORBELL.size - len(got))
                except BlockingIOError:
                    deadline = deadline or time.monotonic() + self.timeout
                    left = deadline - time.monotonic()
                    if left <= 0:
                        raise DistError(f"no hand-over from the co-located partner (rank {self.partner}) in "
                                        f"{self.timeout:.0f} s (DYNAGNN_DIST_TIMEOUT)") from None
                    self._poll.poll(1000 * min(left, 1.0))  # readable, or the writer gone (then read gives b"")
                    continue
                if not chunk:
                    raise DistError(f"the co-located partner (rank {self.partner}) closed the pair channel: "
                                    "it exited")
                got += chunk
        return list(_DOORBELL.unpack(got))


def _open_writer(path: str, fds: list) -> int:
    """Open the write end of the FIFO ``path`` into ``fds``; 1, or 0 when no process of this machine
    reads it (the partner is elsewhere: a FIFO on a shared file system is not one pipe)."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_NONBLOCK)
    except OSError as exc:
        log.warning("co-located hand-over through gloo: no reader on %s (%s)", path, exc)
        return 0
    os.set_blocking(fd, True)
    fds.append(fd)
    return 1


def _close_fds(fds) -> None:
    for fd in fds:
        try:
            os.close(fd)
        except OSError:
            pass


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


def _unlink(base: str) -> None:
    for path in (base, base + ".to1", base + ".to2"):
        try:
            os.unlink(path)
        except FileNotFoundError:
            pass


def _sweep(folder: str) -> None:
    """Remove the ring files of processes that are gone: killed (SIGKILL) in the moment between making
    them and unlinking them, once both ends had opened them."""
    try:
        names = [n for n in os.listdir(folder) if n.startswith("dynagnn-pair-")]
    except OSError:
        return
    for name in names:
        try:
            pid = int(name.split("-")[2])
            os.kill(pid, 0)
        except (ValueError, IndexError, PermissionError):
            continue  # not ours to judge, or alive under another user
        except ProcessLookupError:
            try:
                os.unlink(os.path.join(folder, name))
            except OSError:
                pass


def message_bytes(*parts: tuple[int, torch.dtype]) -> int:
    """The ring bytes a message of these (elements, dtype) parts takes (each part aligned)."""
    return sum(_padded(int(n) * d.itemsize) for n, d in parts)

