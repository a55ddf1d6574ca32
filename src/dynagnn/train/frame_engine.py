"""PiPAD's frame engine (PPoPP'23; notes/pipad.md §2 and §7): what the ``frames`` and
``group_frames`` strategies run.

A window (or any contiguous range of snapshots) is cut into frames of S consecutive snapshots; a
frame is cut into partitions of S_per (:class:`~dynagnn.schedule.tuner.FrameTuner` decides both).
For each frame the model's :meth:`~dynagnn.models.base.DynamicGNN.frame_forward` computes at once
whatever does not depend on the recurrent state, then runs the recurrence along the frame:

- parallel aggregation: per partition, ``A_Over`` times the column-concatenated features once, plus
  the exclusive parts, with each snapshot's degree scaling kept outside the shared matrix
  (:class:`~dynagnn.graph.overlap.PartitionGraph`); parallel update: one GEMM on the row-stacked
  features (:meth:`~dynagnn.models.layers.GCNLayer.stacked_update`);
- inter-frame reuse: for models whose first aggregation reads only X_t
  (``first_aggregation_reads_x``), ``Â_t X_t`` is computed once and kept in a host cache plus a
  bounded device cache (:class:`ReuseCache`), filled in next-frame order by the producer; later
  frames and epochs skip that aggregation, and where the model needs no other graph input (T-GCN
  "x", WD-GCN) the adjacency is not fed at all;
- the pipeline (:mod:`dynagnn.train.pipeline`): the producer prepares frame k+1 (S_per decision,
  partition matrices, gathering, cache fill, copies) while frame k computes.

Every option of the ladder runs this one code path: ``frame_reuse`` off and ``pipeline`` off is
PiPAD's parallel GNN alone; ``frame_size`` 1 with reuse is "-R" (one snapshot at a time with the
reuse cache); ``sequential`` with ``pipeline`` on is "-A".

Sliced CSR (:mod:`dynagnn.graph.sliced`) is not on this path: torch's CSR SpMM (CPU, and cuSPARSE
on a GPU) has no slice-level kernel, so slicing would only add a conversion; its gains are load
balance inside PiPAD's own CUDA kernel (Algorithm 1) and space on graphs with many empty rows,
which the analysis stage reports. Our matrices' rows are never empty (every node has its self-loop).

:class:`FrameEngine` is the part other strategies reuse: ``forward(ts, state)`` runs any contiguous
range of snapshots from an incoming state and returns the per-snapshot outputs and the outgoing
state (BLAD's p1 runs [a, b) and hands the state to p2, which runs [b, c)).
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field
from typing import Sequence

import numpy as np
import torch

from dynagnn.errors import ConfigError
from dynagnn.graph import csr
from dynagnn.host_memory import physical_memory
from dynagnn.graph.overlap import PartitionGraph, overlap_rate, partition_graph, raw_snapshot, split_shared
from dynagnn.models.base import DynamicGNN, Frame, State
from dynagnn.schedule.tuner import FrameTuner, trial_seconds
from dynagnn.timing import PhaseTimer, section
from dynagnn.train.pipeline import Prefetcher, bytes_only, producer_has_core
from dynagnn.train.reuse_cache import ReuseCache  # noqa: F401  (the engine's cache, named here for callers)
from dynagnn.train.transfer import SnapshotFeeder, host_snapshot

log = logging.getLogger(__name__)

MiB = 2 ** 20


def reuses_ax(needs: set[str], reuse: bool) -> bool:
    """Whether frames keep ``Â_t X_t`` across frames (PiPAD's reuse): asked for, and the model's first
    aggregation reads X alone (``"ax"`` in its ``frame_needs``)."""
    return bool(reuse) and "ax" in needs


def partitions_matter(needs: set[str], reused: bool) -> bool:
    """Whether frames read partition matrices beyond a first epoch's missing entries: the model
    aggregates a frame-wide input itself, or its first aggregation is computed each time (no reuse)."""
    return "parts" in needs or ("ax" in needs and not reused)


def default_memory_bytes(device: torch.device) -> float:
    """The tuner's memory bound when none is given: half the free device memory on a GPU; on CPU a
    quarter of the physical memory."""
    if device.type == "cuda":
        free, _ = torch.cuda.mem_get_info(device)
        return 0.5 * free
    mem = physical_memory()
    return 0.25 * mem if mem else 2.0 * 2 ** 30


@dataclass
class _Prepared:
    """A frame as the producer leaves it: the model's :class:`Frame` (``ax`` filled when every entry
    was cached) and the positions whose ``Â_t X_t`` the consumer still computes."""

    key: tuple
    frame: Frame
    ts: list[int]
    misses: list[int] = field(default_factory=list)


class FrameEngine:
    """PiPAD's frame forward over any contiguous range of snapshots (module docstring).

    ``model``: the DynamicGNN (on ``device``); ``store_edges``: every snapshot's (row, col, weight)
    (A's edges); ``host``: the engine's HostSnapshot list (each ``Â_t``); ``features`` float32
    [N, F] or [T, N, F]; ``window``: the training window (the longest range a frame may span);
    ``frame_size``: S fixed, or None (tuned after a profiling epoch); ``reuse``: the ``Â X`` cache;
    ``pipeline``: the producer thread (and side stream on a GPU): True, False or "auto" (on until
    the tuner has frozen S where the producer has a core of its own, :func:`~dynagnn.train.pipeline.
    producer_has_core`, else off until then; then kept only if it measured faster than preparing
    inline: on a CPU the producer thread competes with the compute for the same cores); ``memory_bytes``: the tuner's
    bound (None: :func:`default_memory_bytes`); ``preload``: on a CPU, the per-snapshot feeder's
    copies made when built (a process that reads every snapshot); ``processes``: this machine's
    processes of the job, whose threads share its cores with the producer.
    """

    def __init__(self, model: DynamicGNN, store_edges, host: list, features: np.ndarray, num_nodes: int,
                 device: torch.device | str = "cpu", *, window: int, frame_size: int | None = None,
                 reuse: bool = True, pipeline: bool | str = True, memory_bytes: float | None = None,
                 timer: PhaseTimer | None = None, preload: bool = True, processes: int = 1):
        self.model = model
        self.N = int(num_nodes)
        self.T = len(host)
        self.device = torch.device(device)
        self.gpu = self.device.type == "cuda"
        self.timer = timer
        self.needs = set(model.frame_needs())
        self.reads_ax = "ax" in self.needs
        self.reuse = reuses_ax(self.needs, reuse)
        if reuse and not self.reads_ax:
            log.info("frames: %s's first aggregation reads the recurrent state (or the model has no frame "
                     "path), so Â_t X_t is not reused; its frames still run %s", model.name or type(model).__name__,
                     "batched where the state allows" if type(model).frame_forward is not DynamicGNN.frame_forward
                     else "one step at a time")
        self.raws = [raw_snapshot(r, c, w, self.N) for r, c, w in store_edges]
        # per-snapshot Â (per-step aggregations, single misses): the sequential feeder, bytes counted;
        # the features are fed here (its copy of them is a one-snapshot slice, never read)
        # on a CPU its copies made up front, as the sequential loop's (SnapshotFeeder._preload): made as
        # the first epoch's frames read them, each pinned a page among the step's temporaries (a group
        # process, which reads its part, keeps them lazy: ``preload``)
        self.feeder = SnapshotFeeder(host, np.asarray(features)[:1] if np.ndim(features) == 3 else features,
                                     self.N, self.device, "full", None, bytes_only(timer), preload=preload)
        feats = np.ascontiguousarray(features, dtype=np.float32)
        self.static = feats.ndim == 2
        self.F = int(feats.shape[-1])
        self._features_host = torch.from_numpy(feats)
        if self.gpu:
            self._features_host = self._features_host.pin_memory()
        self._features_dev = self._send(self._features_host) if self.static else None
        self.memory_bytes = float(memory_bytes) if memory_bytes else default_memory_bytes(self.device)
        hidden = getattr(model, "hidden_dim", 32)
        nnz = max((h.nnz for h in host), default=0)
        # one snapshot's share of a frame: its matrices, features, Â X and ~8 hidden-width activations
        self.snapshot_bytes = 12.0 * nnz + 4.0 * self.N * (2 * self.F + 8 * hidden)
        self.tuner = FrameTuner(self._partition_stats, window, self.snapshot_bytes, self.memory_bytes,
                                frame_size=frame_size)
        self._host_parts: dict[tuple[int, int], PartitionGraph] = {}
        self._dev_parts: dict[tuple[int, int], PartitionGraph] = {}
        self._dev_parts_bytes = 0
        self._part_stats: dict[tuple[int, int], tuple[float, int]] = {}
        self.cache = None
        if self.reuse:
            entry = self.N * self.F * 4
            # at least four frames in flight; a frame spans at most 16 snapshots (PiPAD's cap), so a
            # carried sequence (window = the whole sequence) does not make every snapshot resident
            slots = max(int(0.5 * self.memory_bytes // max(entry, 1)), 4 * min(int(window), 16))
            self.cache = ReuseCache(self.T, self.N, self.F, self.device, slots)
        # "auto" starts on only where the producer has a core of its own; the tuner's trial decides
        starts = pipeline is True or (pipeline == "auto" and producer_has_core(self.device, processes))
        self.prefetch = Prefetcher(self._prepare, enabled=starts, device=self.device, timer=timer)
        self.pipeline_decided = pipeline != "auto"
        self._in_flight: list[set[int]] = []
        self._ahead: set[int] = set()   # the snapshots of the frames prepared so far in this schedule
        self.counts = {"first_layer_aggregations": 0, "bytes_fed": 0, "frames": 0, "snapshots": 0}

    # ---- host side: partitions, features, the cache (the producer runs these) ----------------------
    def _send(self, t: torch.Tensor) -> torch.Tensor:
        if self.gpu:
            return (t if t.is_pinned() else t.pin_memory()).to(self.device, non_blocking=True)
        return t.clone()

    def _host_part(self, b: int, s: int) -> PartitionGraph:
        key = (b, s)
        part = self._host_parts.get(key)
        if part is None:
            part, split = partition_graph(self.raws[b:b + s], self.N)
            if self.gpu:
                part = part.pin_memory()
            self._host_parts[key] = part
            self._part_stats[key] = (overlap_rate(split) if split is not None else 1.0, part.nbytes)
        return part

    def _partition_stats(self, a: int, s: int) -> tuple[float, int]:
        """(mean overlap rate, bytes) of the partitions of size s of the frame at a (the tuner's input)."""
        size = self._frame_len(a)
        rates, nbytes = [], 0
        for b in range(a, a + size, s):
            key = (b, min(s, a + size - b))
            if key not in self._part_stats:
                # the rate needs only the split, not the partition's matrices (built if S_per is chosen)
                rate = 1.0 if key[1] == 1 else overlap_rate(
                    split_shared([r.triple(self.N) for r in self.raws[b:b + key[1]]], self.N))
                self._part_stats[key] = (rate, 0)  # bytes filled in when built; estimated below
            r, nb = self._part_stats[key]
            rates.append(r)
            nbytes += nb or int(12 * np.mean([self.raws[i].keys.size for i in range(b, b + key[1])]) *
                                (r + (1 - r) * key[1]))
        return float(np.mean(rates)), nbytes

    def _frame_len(self, a: int) -> int:
        return min(self.tuner.frame_size, self.T - a)

    def _device_part(self, b: int, s: int) -> PartitionGraph:
        key = (b, s)
        part = self._dev_parts.get(key)
        if part is None:
            host = self._host_part(b, s)
            # on a CPU the host's partition is the device's: a clone made inside a step would be a
            # long-lived block among its temporaries, which fragments the heap (SnapshotFeeder._preload)
            part = host.to(self.device, non_blocking=True) if self.gpu else host
            self.counts["bytes_fed"] += part.nbytes
            if self.timer is not None:
                self.timer.add_bytes("partition", part.nbytes)
            # the device keeps partitions up to a quarter of the memory bound (oldest dropped first)
            self._dev_parts[key] = part
            self._dev_parts_bytes += part.nbytes
            while self._dev_parts_bytes > 0.25 * self.memory_bytes and len(self._dev_parts) > 1:
                old = next(iter(self._dev_parts))
                self._dev_parts_bytes -= self._dev_parts.pop(old).nbytes
        return part

    def _features(self, a: int, size: int) -> torch.Tensor:
        if self.static:
            return self._features_dev.expand(size, self.N, self.F)
        x = self._send(self._features_host[a:a + size])
        self.counts["bytes_fed"] += x.numel() * 4
        if self.timer is not None:
            self.timer.add_bytes("features", x.numel() * 4)
        return x

    def _adjacency(self, t: int) -> csr.Adjacency:
        before = self.feeder.stats["bytes"]
        adj = self.feeder.adjacency(t)
        self.counts["bytes_fed"] += self.feeder.stats["bytes"] - before
        return adj

    def _prepare(self, key: tuple) -> _Prepared:
        """Everything frame ``key`` = (first snapshot, size, S_per) needs on the device."""
        a, size, s_per = key
        ts = list(range(a, a + size))
        frame = Frame(size, self.N)
        misses = list(range(size)) if self.reads_ax else []
        if self.reuse:
            keep = set().union(*self._in_flight) if self._in_flight else set()
            moved = self.cache.fetch(ts, keep)
            self.counts["bytes_fed"] += moved
            if moved and self.timer is not None:
                self.timer.add_bytes("reuse_cache", moved)
            misses = self.cache.missing(ts)
        # with reuse, a partition serves a frame whose every entry is missing when it runs; the producer
        # runs ahead, so an entry a frame before this one in the schedule will store is not missing
        # (prepared inline, the cache's state is the one the frame meets)
        ahead = self.reuse and self.prefetch.in_producer()
        expected = [i for i in misses if ts[i] not in self._ahead] if ahead else misses
        self._ahead.update(ts)
        all_miss = bool(expected) and len(expected) == size
        # a frame of one aggregates with its own Â, as sequential does: a partition's degree scaling
        # outside its matrix pays only where the matrix serves several snapshots
        one = size == 1
        if not one and ("parts" in self.needs or all_miss):
            frame.parts = [self._device_part(b, min(s_per, a + size - b)) for b in range(a, a + size, s_per)]
        if "x" in self.needs or misses:
            frame.x = self._features(a, size)
        if "adjs" in self.needs or (one and "parts" in self.needs):
            frame.adjs = [self._adjacency(t) for t in ts]
        elif misses and frame.parts is None:
            frame.adjs = [self._adjacency(t) if i in misses else None for i, t in enumerate(ts)]
        return _Prepared(key, frame, ts, misses)

    # ---- consumer ----------------------------------------------------------------------------------
    def frames_of(self, ts: Sequence[int]) -> list[tuple[int, int, int]]:
        """The frames (first snapshot, size, S_per) a contiguous range is cut into."""
        ts = list(ts)
        if ts != list(range(ts[0], ts[0] + len(ts))):
            raise ValueError(f"frames need a contiguous range of snapshots, got {ts}")
        S, end, out = self.tuner.frame_size, ts[-1] + 1, []
        for a in range(ts[0], end, S):
            size = min(S, end - a)
            out.append((a, size, self.tuner.s_per(a, size)))
        return out

    def prepare_host(self, ranges: Sequence[Sequence[int]]) -> None:
        """Decide S_per and build the host matrices of every partition of ``ranges`` now (PiPAD does
        this overlap extraction in its preparing epochs), rather than in the first frames that meet
        them. Nothing to build when the model reads only the reused ``Â X``."""
        if not self.tuner.frozen or not self._partitions_matter():
            return
        for key in self._part_keys(ranges):
            self._host_part(*key)

    def _part_keys(self, ranges: Sequence[Sequence[int]]) -> set[tuple[int, int]]:
        """(first snapshot, size) of every partition the frames of ``ranges`` are cut into."""
        return {(b, min(s_per, a + size - b)) for ts in ranges for a, size, s_per in self.frames_of(ts)
                if size > 1 for b in range(a, a + size, s_per)}

    def _partitions_matter(self) -> bool:
        return partitions_matter(self.needs, self.reuse)

    def _trial(self, ranges: Sequence[Sequence[int]], windows: int = 3, step=None, params=None):
        """The tuner's ``measure``: seconds of the training step of each of up to ``windows`` of the
        epoch's ranges (evenly spread) from the initial state, under the candidate in use (its S and
        S_per cap through the tuner, its pipeline here). ``step(ts)``: a window's whole step as the
        epoch runs it (forward, head and loss, backward; the strategy's); None: the model's forward
        and a backward from its last embedding (``group``'s parts have no head). ``params``: those
        whose ``.grad`` the step touches: kept and put back, so training goes on as if no trial ran
        (no random number is drawn either: the task's negatives are seeded per epoch and snapshot)."""
        ranges = [list(r) for r in ranges if len(r)]
        picks = [ranges[int(i)] for i in np.unique(np.linspace(0, len(ranges) - 1, min(windows, len(ranges))).round())]
        params = list(params) if params is not None else [p for p in self.model.parameters() if p.requires_grad]
        if step is None:
            def step(ts):
                hs, _ = self.forward(ts, self.model.initial_state(self.N, self.device))
                h = hs[-1]
                if h.requires_grad:
                    torch.autograd.grad(h, [p for p in params if p.requires_grad], torch.ones_like(h), allow_unused=True)

        def measure(candidate) -> list[float]:
            out = []
            self.prefetch.enabled = candidate.pipeline  # the decided setting, once decided
            saved = [p.grad for p in params]
            self.schedule(picks)  # the producer, when on, prepares the picks' frames as in training
            with torch.enable_grad():
                for ts in picks:
                    for p in params:          # as after the optimizer's zero_grad
                        p.grad = None
                    t0 = time.perf_counter()
                    step(ts)
                    if self.gpu:
                        torch.cuda.synchronize(self.device)
                    out.append(time.perf_counter() - t0)
            self.prefetch.close()
            for p, g in zip(params, saved):
                p.grad = g
            return out
        return measure

    def schedule(self, ranges: Sequence[Sequence[int]]) -> None:
        """The ranges the next forwards will run, in order: the producer prepares their frames."""
        self._stop_feed()
        self.prefetch.schedule([k for ts in ranges for k in self.frames_of(ts)])

    def _stop_feed(self) -> None:
        """Stop the producer, then forget the frames it prepared ahead (it no longer runs ahead)."""
        self.prefetch.close()
        self._ahead = set()

    def _first_aggregation(self, p: _Prepared) -> torch.Tensor:
        frame, ts = p.frame, p.ts
        if not self.reuse:   # parallel GNN alone: aggregate every time
            self.counts["first_layer_aggregations"] += frame.size
            with torch.no_grad():
                return frame.aggregate(frame.x)
        keep = set(ts)
        if p.misses:
            # another frame may have filled some since the producer looked
            miss = [i for i in self.cache.missing(ts)]
            if miss:
                with torch.no_grad():
                    if len(miss) == frame.size and frame.parts is not None:
                        self.cache.store(ts, frame.aggregate(frame.x), keep)
                    else:
                        adjs = frame.adjs or [None] * frame.size
                        with self.prefetch.lock:   # the feeder is the producer's too
                            adjs = [adjs[i] if adjs[i] is not None else self._adjacency(ts[i]) for i in miss]
                        with section("graph_op"):
                            got = torch.stack([csr.aggregate(a, frame.x[i]) for a, i in zip(adjs, miss)])
                        self.cache.store([ts[i] for i in miss], got, keep)
                self.counts["first_layer_aggregations"] += len(miss)
        self.cache.fetch(ts, keep)
        return self.cache.view(ts)

    def forward(self, ts: Sequence[int], state: State) -> tuple[list[torch.Tensor], State]:
        """Run snapshots ``ts`` (contiguous, ascending) from ``state``: (their embeddings, S tensors
        [N, H] per frame, in order; the state after the last). Equal to stepping the model through
        ``ts``, with gradients to ``state`` and every parameter."""
        hs: list[torch.Tensor] = []
        for key in self.frames_of(ts):
            p = self.prefetch.get(key)
            self._in_flight = (self._in_flight + [set(p.ts)])[-2:]
            if self.reads_ax:
                p.frame.ax = self._first_aggregation(p)
            with section("rnn"):
                out, state = self.model.frame_forward(p.frame, state)
            hs.extend(out)
            self.counts["frames"] += 1
            self.counts["snapshots"] += p.frame.size
        return hs, state

    def start_epoch(self, ranges: Sequence[Sequence[int]]) -> None:
        """Before an epoch's training: its counters start here (evaluation's frames are not the
        epoch's), and the producer is given the ``ranges`` the epoch will run, in order."""
        self.take_counts()
        self.prefetch.take_stats()
        self.schedule(ranges)

    def end_epoch(self, seconds: float, ranges, step=None, params=None) -> dict[str, float]:
        """After an epoch's training of ``seconds``: its figures for metrics.parquet (frame size, the
        S_per cap, whether the pipeline runs, the tuner's seconds, first-layer aggregations, bytes
        fed, exposed and hidden transfer). After the profiling epoch (one snapshot per frame), the
        tuner times its candidates on windows of ``ranges()`` (the epoch's ranges; ``step`` and
        ``params`` as :meth:`_trial`) and freezes the fastest, with the pipeline when it is "auto"
        (:meth:`FrameTuner.freeze`; the stall check keeps the epoch's compute time and feed rate),
        and the partitions of ``ranges()`` are built on the host."""
        self._stop_feed()   # the epoch's schedule is done (evaluation prepares inline)
        c = self.take_counts()
        p = self.prefetch.take_stats()
        tuner = self.tuner
        tuning = 0.0
        if not tuner.frozen or not self.pipeline_decided:
            was_frozen = tuner.frozen
            per_snapshot = seconds / max(c["snapshots"], 1)
            rate = c["bytes_fed"] / p["exposed_s"] if p["exposed_s"] > 0 and c["bytes_fed"] else None
            rs = ranges()
            pipelines = (False, True) if not self.pipeline_decided else (self.prefetch.enabled,)
            t0 = time.perf_counter()
            S = tuner.freeze(per_snapshot, rate, measure=self._trial(rs, step=step, params=params),
                             partitions=self._partitions_matter(), pipelines=pipelines)
            tuning = time.perf_counter() - t0
            self.prefetch.enabled = bool(tuner.pipeline)
            self.pipeline_decided = True
            self.take_counts()          # the trials' frames are no epoch's
            self.prefetch.take_stats()
            timed = "; ".join(", ".join(f"{c.frame_size}/{c.max_s_per}{'/pipe' if c.pipeline else ''} "
                                        f"{1e3 * trial_seconds(t):.1f}" for c, t in stage.items())
                              for stage in (tuner.timings, tuner.finals) if stage)
            log.info("frames: profiling epoch done, S = %d snapshots per frame, S_per <= %d, pipeline %s (memory "
                     "bound %.0f MiB, %.0f KiB per snapshot; timed S/S_per cap[/pipe], ms: %s; %.2f s)", S,
                     tuner.max_s_per, "on" if tuner.pipeline else "off", tuner.bytes_available / MiB,
                     tuner.snapshot_bytes / 1024, timed or "none", tuning)
            if not was_frozen:
                # the trials' partitions of other candidates are dropped, the chosen one's built for all ranges
                keep = self._part_keys(rs)
                for parts in (self._host_parts, self._dev_parts):
                    for key in [k for k in parts if k not in keep]:
                        part = parts.pop(key)
                        if parts is self._dev_parts:
                            self._dev_parts_bytes -= part.nbytes
                self.prepare_host(rs)
        if not self._partitions_matter():
            # with reuse, a frame reads partitions only while its entries are missing, which after
            # the first epoch (every entry stored, on the host at least) no training frame is
            self._host_parts.clear()
            self._dev_parts.clear()
            self._dev_parts_bytes = 0
        return {"frame_size": float(tuner.frame_size), "pipeline_on": float(self.prefetch.enabled),
                "s_per_cap": float(tuner.max_s_per), "tuning_s": tuning,
                "first_layer_aggregations": float(c["first_layer_aggregations"]),
                "bytes_fed": float(c["bytes_fed"]), "transfer_exposed_s": p["exposed_s"],
                "transfer_hidden_s": p["hidden_s"]}

    def take_counts(self) -> dict:
        c = dict(self.counts)
        for k in self.counts:
            self.counts[k] = 0
        return c

    def close(self) -> None:
        self.prefetch.close()


def engine_for(run, options, span: int | None = None, preload: bool = True) -> FrameEngine:
    """The frame engine of a run (:class:`~dynagnn.train.strategies.base.Run`) with the frames
    ``options`` (``frame_size``, ``frame_reuse``, ``pipeline``, ``frame_memory_mb``): the frames
    strategy's, and each group process's (``group_frames``). ``span``: the longest range a frame may
    cover (default the window; in sequence mode carry, the tbptt piece or the sequence); ``preload``:
    the engine's (a group process, which reads its part of the snapshots, passes False)."""
    span = int(span or run.window)
    size = options.frame_size
    if size is not None and int(size) > span:  # a frame never spans more than the window
        if run.ctx.is_main:
            log.warning("frame_size %d is longer than the window of %d snapshots: frames of %d are used (and "
                        "recorded in metrics.parquet)", int(size), span, span)
        size = span
    engine = FrameEngine(run.model, run.store.window_edges(0, run.store.num_snapshots), run.host,
                         run.features, run.num_nodes, run.device, window=span,
                         frame_size=size, reuse=options.frame_reuse == "on",
                         pipeline={"on": True, "off": False}.get(options.pipeline, "auto"),
                         memory_bytes=(options.frame_memory_mb or 0) * MiB or None, timer=run.timer,
                         preload=preload, processes=run.ctx.local_processes)
    log.info("frames: %s, reuse %s, pipeline %s", f"S = {size}" if size else "S tuned after a profiling epoch",
             "on" if engine.reuse else "off", "on" if engine.prefetch.enabled else "off")
    return engine


def range_inputs(store, a: int, span: int) -> tuple[list, list, np.ndarray]:
    """(A's edges, the HostSnapshots, the node features) of snapshots ``a .. a + span - 1`` of
    ``store``, re-indexed from 0: a frame engine over a sample range (the chooser's measurements,
    :func:`dynagnn.choose.frame_timing.frame_seconds` and :func:`dynagnn.choose.memory_model.measured_frames`)."""
    n = int(store.num_nodes)
    edges = store.window_edges(a, a + span)
    feats = store.require_features(a, a + span)
    return edges, [host_snapshot(*e, n) for e in edges], feats


def quiet_engine(*args, **kwargs) -> FrameEngine:
    """A :class:`FrameEngine` built without its log line (a measurement builds several; the run's
    own engine says how it feeds once)."""
    was, log.disabled = log.disabled, True
    try:
        return FrameEngine(*args, **kwargs)
    finally:
        log.disabled = was

