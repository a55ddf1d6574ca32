"""The co-located pair's hand-over: the pair channel (shared ring + pipe doorbell) against plain gloo
send/recv, side by side on two processes of one worker (1 thread each).

Timed: the receiver's time to take a message its partner sent ``PAUSE_S`` before (what a pipeline
stage pays for a hand-over that is already waiting), for a few bytes and for a 1.25 MiB state (WD-GCN's
two [5,000 × 32] float32 tensors), with the pair idle and with both processes computing (each runs a
GCN-like step between messages, as BLAD's two processes do). Both ways are timed in the same rounds,
interleaved, so a noisy neighbour slows both alike. Printed: median and 90th percentile of each, and
gloo over channel. ``DYNAGNN_BENCH_PAIR_REPEATS`` (default 60) sets the messages per case.
"""

from __future__ import annotations

import os
import statistics
import time

SIZES = {"few bytes": 16, "1.25 MiB": 320_000}  # float32 elements
PAUSE_S = 0.005


def _busy(seconds: float) -> None:
    import torch

    a = torch.randn(200, 200)
    t0 = time.perf_counter()
    while time.perf_counter() - t0 < seconds:
        a = torch.tanh(a @ a * 1e-3)


def _body(ctx, repeats: int) -> dict | None:
    import torch
    import torch.distributed as dist

    from dynagnn.allocator import keep_freed_heap
    from dynagnn.cost.link import timed_handover
    from dynagnn.distributed.comm import Comm
    from dynagnn.distributed.pair_channel import PairChannel, message_bytes

    keep_freed_heap()  # as training runs
    r = ctx.rank
    channel = PairChannel.open(Comm(ctx, sync_timing=False), 1 - r, r == 0,
                               4 * message_bytes((max(SIZES.values()), torch.float32)))
    times: dict = {}
    for load in ("idle", "busy"):
        for label, n in SIZES.items():
            buf = torch.zeros(n)
            pause = (lambda: _busy(PAUSE_S)) if load == "busy" else (lambda: time.sleep(PAUSE_S))
            for i in range(2 * repeats + 4):
                way = ("gloo", "channel")[i % 2]
                got = times.setdefault((load, label, way), []) if i >= 4 else []  # 4 warm-ups: connections, pages
                dist.barrier()
                if way == "channel":
                    timed_handover(channel, r == 0, [buf], pause, got)
                elif r == 0:
                    dist.isend(buf, 1).wait()
                    pause()
                else:
                    pause()
                    t0 = time.perf_counter()
                    dist.recv(buf, 0)
                    got.append(time.perf_counter() - t0)
    channel.flush()
    channel.close()
    return times if r == 1 else None


def main() -> dict:
    from dynagnn.distributed.launch import launch

    repeats = int(os.environ.get("DYNAGNN_BENCH_PAIR_REPEATS", 60))
    times = launch(_body, 1, repeats, procs_per_worker=2, threads=1)[1]
    print(f"\n== pair channel against gloo: receiving a hand-over already sent, {repeats} messages per case "
          "(1 thread per process; 'busy': both processes computing between messages)")
    print(f"  {'case':<22s} {'gloo median':>12s} {'p90':>8s} {'channel median':>15s} {'p90':>8s} "
          f"{'gloo/channel (median, p90)':>28s}")
    out = {}
    for load in ("idle", "busy"):
        for label in SIZES:
            g, c = times[(load, label, "gloo")], times[(load, label, "channel")]
            gm, cm = statistics.median(g), statistics.median(c)
            gp, cp = (sorted(x)[int(0.9 * len(x))] for x in (g, c))
            out[(load, label)] = {"gloo_ms": 1e3 * gm, "channel_ms": 1e3 * cm, "gloo_p90_ms": 1e3 * gp,
                                  "channel_p90_ms": 1e3 * cp}
            print(f"  {load + ', ' + label:<22s} {1e3 * gm:10.3f}ms {1e3 * gp:6.3f}ms {1e3 * cm:13.3f}ms "
                  f"{1e3 * cp:6.3f}ms {gm / cm:13.2f}x, {gp / cp:.2f}x")
    return out
