"""PiPAD's frames measured at start, for the chooser's prediction (issue 30; issue 54's short path).

:func:`frame_seconds` times the model's forward and backward over a sample range of the store,
stepped one snapshot at a time as the sequential loop steps it and in frames of each size S through
the frame engine; :func:`frames_terms` makes those timings the prediction's terms
(:class:`~dynagnn.choose.predict.Base`'s ``frames``), and :func:`frames_measure_seconds` estimates
what measuring them costs before it is paid (the short path measures only where the run pays for it).
"""

from __future__ import annotations

import logging
import time

import numpy as np
import torch

from dynagnn.errors import one_line

log = logging.getLogger("dynagnn")

QUICK_FRAME_ROUNDS = 1  # the short path's rounds of the frames' measurement (after its warm-up rounds)
FRAME_ROUNDS = 3       # timed rounds of the frames' measurement at start (after the warm-up rounds)
# warm-up rounds before the timed ones: the first fills the frame engine's reuse cache, the second is
# the first to read it (after one, a process's first measurement on CollegeMsg daily's WD-GCN timed
# frames at 0.83-1.6x the stepped loop; after two, 0.68-0.76x; the exhaustive searches 0.62-0.80x)
FRAME_WARMUPS = 2
# what measuring the frames costs over its ranges' steps at the quick base's seconds per snapshot
# step (the engines' builds, the frames' own work), on issue 54's short cases here
FRAME_MEASURE_FACTOR = 1.5


def model_steps_per_epoch(split_train, window: int, carry: bool) -> int:
    """The model's snapshot steps in one training epoch: a carried sequence steps each training
    snapshot once; a window ending at t steps its min(window, t + 1) snapshots."""
    ends = [int(t) for t in split_train]
    if carry:
        return len(ends)
    return int(sum(min(int(window), t + 1) for t in ends))


def frame_span(config, sizes, carry: bool, window: int) -> int:
    """The snapshots a frames measurement ranges over: the window, or in a carried sequence its
    tbptt piece, up to the largest frame size."""
    piece = int(getattr(config.options, "tbptt", None) or window) if carry else window
    return min(piece, max(sizes))


def frames_terms(store, config, model, thread_counts, frame_sizes, ends, carry: bool, window: int,
                  rounds: int = FRAME_ROUNDS) -> dict:
    """The frames measured at start (:func:`frame_seconds` at each of ``thread_counts``, the frame
    sizes among the candidates up to a frame's span, :func:`frame_span`) as :class:`~dynagnn.choose.predict.Base`'s terms;
    {} where no candidate runs frames, or the model's frame path fails here (the closed form
    predicts them then)."""
    sizes = sorted({int(s) for s in frame_sizes})
    if not sizes:
        return {}
    span = frame_span(config, sizes, carry, window)
    built: list[float] = []
    try:
        frames = {t: frame_seconds(store, config, model, t, [s for s in sizes if s <= span], span, carry,
                                   rounds=rounds, built=built) for t in thread_counts}
    except Exception as exc:  # noqa: BLE001 (a model whose frame path fails here: the closed form predicts it)
        log.info("auto: frames not measured at start (%s); the closed form predicts them", one_line(exc))
        return {}
    return {"frames": frames, "frame_span": span, "model_steps": model_steps_per_epoch(ends, int(config.window), carry),
            "frame_build_seconds": float(np.median(built)) * int(store.num_snapshots) if built else 0.0}


def frames_measure_seconds(quick, config, frame_sizes, threads: int,
                           rounds: int = QUICK_FRAME_ROUNDS) -> float:
    """What :func:`~dynagnn.choose.predict.quick_frames` would spend measuring the frames of ``frame_sizes`` at ``threads``:
    its rounds and warm-up rounds of each size's range and the stepped one's (one warm-up), a range of the frames' span
    at the quick base's (``quick``, a :class:`~dynagnn.choose.predict.Base`) seconds per snapshot step, times :data:`FRAME_MEASURE_FACTOR` (the engines'
    builds, the frames' own work)."""
    sizes = sorted({int(s) for s in frame_sizes})
    if not sizes or not quick.model_steps:
        return 0.0
    span = frame_span(config, sizes, quick.carry, quick.window)
    per_snapshot = quick.epoch(threads) / quick.model_steps
    frames = len([s for s in sizes if s <= span])
    return FRAME_MEASURE_FACTOR * ((rounds + 1) + (rounds + FRAME_WARMUPS) * frames) * span * per_snapshot


def frame_seconds(store, config, model, threads: int, sizes, span: int, carry: bool,
                  rounds: int = FRAME_ROUNDS, built: list | None = None,
                  warmups: int = FRAME_WARMUPS) -> dict[int, float]:
    """{S: seconds of the model's forward and backward over a range of ``span`` snapshots}: ``S = 0``
    stepped one by one through :meth:`~dynagnn.models.base.DynamicGNN.step` as the sequential loop
    feeds it (:class:`~dynagnn.train.transfer.SnapshotFeeder`), each S in ``sizes`` through the frame
    engine in frames of S (a frame of one too: it reads the reused ``Â X``) (:class:`~dynagnn.train.frame_engine.FrameEngine`, its reuse cache and
    partitions built in the warm-up rounds (:data:`FRAME_WARMUPS`), as a later epoch finds them; no producer thread). The loss is the
    sum of every embedding (``carry``: every snapshot of a carried piece has one) or of the last
    (a window predicts at its end). Interleaved over ``rounds`` rounds after the warm-ups, the fastest
    round of each (a round's noise on this shared machine only adds); on a copy of ``model``, in
    ``threads`` threads, on a sample range in the middle of the store, with the heap kept as the
    trainers keep it (:func:`~dynagnn.allocator.keep_freed_heap`: a trimmed heap's page faults made
    these rounds vary by 20%). ``built``: a list that receives the seconds an engine took to build,
    per snapshot of the range (what a frames trainer's build adds, per snapshot of the store)."""
    import copy

    from dynagnn.allocator import keep_freed_heap
    from dynagnn.train.frame_engine import FrameEngine, quiet_engine, range_inputs
    from dynagnn.train.transfer import SnapshotFeeder

    keep_freed_heap()
    dev = torch.device(config.device)
    sync = torch.cuda.synchronize if dev.type == "cuda" else (lambda: None)
    T, n = int(store.num_snapshots), int(store.num_nodes)
    span = max(1, min(int(span), T))
    edges, host, feats = range_inputs(store, max(0, (T - span) // 2), span)
    before = torch.get_num_threads()
    engines: dict[int, FrameEngine] = {}
    try:
        torch.set_num_threads(int(threads))
        with torch.random.fork_rng(devices=[dev.index or 0] if dev.type == "cuda" else []):
            net = copy.deepcopy(model).to(dev).train()
            params = [p for p in net.parameters() if p.requires_grad]
            feeder = SnapshotFeeder(host, feats, n, dev)
            for s in sizes:
                t0 = time.perf_counter()
                engines[s] = quiet_engine(net, edges, host, feats, n, dev, window=span, frame_size=s, reuse=True,
                                          pipeline=False)
                if built is not None:
                    built.append((time.perf_counter() - t0) / span)

            def run(s):
                state = net.initial_state(n, dev)
                if s == 0:
                    hs = []
                    for t in range(span):
                        h, state = net.step(*feeder.get(t), state)
                        hs.append(h)
                else:
                    engines[s].schedule([range(span)])
                    hs, _ = engines[s].forward(range(span), state)
                loss = sum(h.sum() for h in hs) if carry else hs[-1].sum()
                torch.autograd.grad(loss, params, allow_unused=True)

            def timed(s):
                sync()
                t0 = time.perf_counter()
                run(s)
                sync()
                return time.perf_counter() - t0
            variants = [0] + [int(s) for s in sizes]
            got: dict[int, list[float]] = {s: [] for s in variants}
            for r in range(rounds + warmups):   # the warm-up rounds fill the caches, partitions and allocator
                for s in variants:
                    if 0 < r < warmups and s == 0:   # the stepped loop has no reuse cache: one warm-up serves
                        continue
                    dt = timed(s)
                    if r >= warmups:
                        got[s].append(dt)
            return {s: min(v) for s, v in got.items()}
    finally:
        for e in engines.values():
            e.close()
        torch.set_num_threads(before)
