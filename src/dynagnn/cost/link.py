"""What moving bytes between a worker's processes costs: the co-located hand-over and the all-reduce.

BLAD's pipeline hands each group's hidden state from process p1 to p2 and the state's gradient
back, and every step ends with the gradient all-reduce. BLAD calls the hand-over negligible (a
device memory pool); here the two processes exchange it through the pair's channel
(:class:`~dynagnn.distributed.pair_channel.PairChannel`: memory both map and a pipe for doorbells), where
the receiver reads the doorbell and copies the message out: 0.05 ms for a few bytes and 0.10 ms for
1.25 MiB on this project's 2-core machine when idle (0.25 ms at the 90th percentile with both
processes busy), against 0.09 and 0.44 ms read from gloo's socket. The cost model therefore times the channel once (:func:`profile_link`, two gloo processes
of one worker) and fits each kind as a line in the bytes moved, ``seconds = latency + bytes ·
per_byte`` (non-negative least squares on relative errors, as the operators are fitted):

- ``handover``: the receiver's time to take a message its partner already sent through the
  channel (the doorbell and the copy the receiving process pays; the sender's copy into the
  shared ring, timed as its ``communication``, is not charged: a few hundredths of a ms);
- ``allreduce``: one all-reduce of a float32 buffer over the two processes, both ready.

The fitted :class:`LinkCost` is kept in the predictor's ``meta["link"]``; the schedule stage charges
hand-overs to the receiving process's tasks and adds the all-reduce to each step
(:mod:`dynagnn.schedule.balance`, :mod:`dynagnn.schedule.plan`).
"""

from __future__ import annotations

import logging
import statistics
import time
from dataclasses import dataclass
from typing import Mapping, Sequence

import numpy as np
import pandas as pd

from ..errors import CostError

log = logging.getLogger(__name__)

LINK_KINDS: tuple[str, ...] = ("handover", "allreduce")
LINK_COLUMNS = ["kind", "bytes", "median_s", "min_s", "repeats"]
# message sizes timed: from a loss's inputs to a few hidden states of 10^4-10^5 vertices
DEFAULT_SIZES: tuple[int, ...] = (4096, 65536, 262144, 1048576, 4194304)


def _link_body(ctx, sizes: Sequence[int], repeats: int, pause_s: float) -> list[dict]:
    """One process of :func:`profile_link`: rank 1 times taking what rank 0 sent through the pair's
    channel ``pause_s`` before; both time all-reduces (rank 0's rows are kept)."""
    import torch
    import torch.distributed as dist

    from ..distributed.comm import Comm
    from ..distributed.pair_channel import PairChannel, message_bytes

    rows = []
    channel = PairChannel.open(Comm(ctx, sync_timing=False), 1 - ctx.rank, ctx.rank == 0,
                               2 * message_bytes((max(int(n) for n in sizes) // 4 + 1, torch.float32)))
    warm = torch.zeros(1024)

    def handover(parts, timed: list | None = None):
        timed_handover(channel, ctx.rank == 0, parts, lambda: time.sleep(pause_s), timed)

    for _ in range(2):  # the first messages open the connection
        dist.all_reduce(warm)
        handover([warm])
    for n in sizes:
        buf = torch.zeros(max(int(n) // 4, 1))
        recv, red = [], []
        for _ in range(int(repeats)):
            dist.barrier()
            handover([buf], recv)
        for _ in range(int(repeats)):
            dist.barrier()
            t0 = time.perf_counter()
            dist.all_reduce(buf)
            red.append(time.perf_counter() - t0)
        for kind, times in (("handover", recv), ("allreduce", red)):
            if times and (kind == "handover") == (ctx.rank == 1):
                rows.append({"kind": kind, "bytes": int(buf.numel() * 4), "median_s": statistics.median(times),
                             "min_s": min(times), "repeats": int(repeats)})
    channel.close()
    return rows


def timed_handover(channel, sender: bool, parts, pause, timed: list | None = None) -> None:
    """One hand-over through the pair ``channel``, collective over the pair: the sender sends
    ``parts``; the receiver runs ``pause()`` (the message is then waiting: what is left is its
    doorbell and copy), takes it and appends the seconds that took to ``timed``. The receiver's
    reply says the message was taken, as a pipeline's traffic back does, so the ring stays free."""
    if sender:
        channel.send(parts, "handover")
        pause()
        channel.recv("taken")
        return
    pause()
    t0 = time.perf_counter()
    channel.recv("handover")
    if timed is not None:
        timed.append(time.perf_counter() - t0)
    channel.send([], "taken")
    channel.flush()


def profile_link(sizes: Sequence[int] = DEFAULT_SIZES, repeats: int = 7, pause_s: float = 0.005,
                 timeout: float = 120.0) -> pd.DataFrame:
    """Time the hand-over and the all-reduce between the two gloo processes of one worker on this
    machine (one torch thread each); one row per (kind, bytes), columns :data:`LINK_COLUMNS`."""
    from ..distributed.launch import launch

    if not sizes or min(int(s) for s in sizes) < 4:
        raise CostError(f"link profile: expected message sizes of at least 4 bytes, got {list(sizes)}")
    per_rank = launch(_link_body, 1, [int(s) for s in sizes], int(repeats), float(pause_s), procs_per_worker=2,
                      threads=1, timeout=timeout)
    df = pd.DataFrame([r for rows in per_rank for r in rows], columns=LINK_COLUMNS)
    return df.sort_values(["kind", "bytes"], ignore_index=True)


@dataclass(frozen=True)
class LinkCost:
    """Fitted channel costs: for each kind, (latency seconds, seconds per byte)."""

    handover: tuple[float, float]
    allreduce: tuple[float, float]

    def seconds(self, kind: str, nbytes) -> np.ndarray | float:
        """Predicted seconds of moving ``nbytes`` (a number or an array) by ``kind``; 0 for 0 bytes."""
        lat, per = getattr(self, kind) if kind in LINK_KINDS else (None, None)
        if lat is None:
            raise CostError(f"link kind {kind!r}: expected one of {', '.join(LINK_KINDS)}")
        b = np.asarray(nbytes, dtype=np.float64)
        out = np.where(b > 0, lat + per * b, 0.0)
        return float(out) if out.ndim == 0 else out

    def to_dict(self) -> dict:
        return {k: {"latency_s": float(getattr(self, k)[0]), "per_byte_s": float(getattr(self, k)[1])}
                for k in LINK_KINDS}

    @classmethod
    def from_dict(cls, d: Mapping, where: str = "predictor") -> "LinkCost":
        try:
            vals = {k: (float(d[k]["latency_s"]), float(d[k]["per_byte_s"])) for k in LINK_KINDS}
        except (KeyError, TypeError, ValueError) as exc:
            raise CostError(f"{where}: meta.link needs latency_s and per_byte_s for "
                            f"{', '.join(LINK_KINDS)} ({type(exc).__name__}: {exc})") from None
        if any(v < 0 or not np.isfinite(v) for pair in vals.values() for v in pair):
            raise CostError(f"{where}: meta.link: expected finite non-negative costs, got {vals}")
        return cls(**vals)

    @classmethod
    def of(cls, predictor) -> "LinkCost | None":
        """The link costs a predictor carries (``meta["link"]``), or None when it was fitted without."""
        d = (predictor.meta or {}).get("link")
        return None if d is None else cls.from_dict(d, f"{predictor.device} predictor")


def fit_link(df: pd.DataFrame, target: str = "median_s") -> LinkCost:
    """Fit each kind's (latency, per byte) to a :func:`profile_link` table: non-negative least
    squares on relative errors (:func:`dynagnn.cost.fit.nnls`)."""
    from .fit import nnls

    missing = [c for c in ("kind", "bytes", target) if c not in df.columns]
    if missing:
        raise CostError(f"link profile: columns {missing} are missing")
    out = {}
    for kind in LINK_KINDS:
        sub = df[df["kind"] == kind]
        y = sub[target].to_numpy(dtype=np.float64)
        if len(sub) < 2 or not (np.isfinite(y).all() and (y > 0).all()):
            raise CostError(f"link profile: {kind} needs at least two sizes with positive times, got {len(sub)}")
        X = np.stack([np.ones(len(sub)), sub["bytes"].to_numpy(dtype=np.float64)], axis=1)
        coef = nnls(X / y[:, None], np.ones_like(y))
        out[kind] = (float(coef[0]), float(coef[1]))
    return LinkCost(**out)
