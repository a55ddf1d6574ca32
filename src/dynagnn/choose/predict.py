"""Predicted epoch seconds of the chooser's candidates: what decides which few are timed (issue 30).

A prediction is built from what is measured on this run at start and from closed forms, term by term,
so that where it ranks candidates wrongly the note can say which term misled it:

- **base**: the epoch of the plain one-process loop of the run's model kind (``sequential`` for a
  snapshot model, ``events`` for an event model, ``sampled`` for a sampled one), timed on real steps
  of this run at 1 thread and at the cores' count (the chooser's :class:`~dynagnn.choose.trials.Trials`, whose kept trainers
  then serve these candidates' trials); another thread count is read off Amdahl's law through the
  two (``E(t) = E(1)·(s + (1 - s)/t)``). This is the profile at start that the group strategy makes
  for a model with no operator list, taken at the level of whole steps: it includes the head, the
  loss and the optimiser, which an operator sum leaves out. Where the plain loop is over the memory
  budget, the fitting one-process candidate of the smallest peak is timed instead, its options'
  factor divided out.
- **aggregation share**: the share of a step spent in the graph aggregations (``Â·H``), measured at
  start on one snapshot: the model's step (:func:`dynagnn.cost.step_times.step_seconds`) against
  the sparse products of its GCN layers at the hidden width, forward and backward (about twice the
  forward's).
- **data parallelism**: P processes of t threads split the step's parallel part P·t ways (the split
  strategies balance their shares: ESDG's snapshots, the vertex partition, BLAD's planned groups),
  while each pays the serial part in full: E(P·t) on Amdahl's line through the measured threads.
- **frames** (PiPAD): MEASURED at start (:func:`~dynagnn.choose.frame_timing.frame_seconds`): the model's forward and backward
  over a sample range of the store, stepped one snapshot at a time as the sequential loop steps it
  and in frames of each S by the frame engine (the reuse cache warm, as every epoch after the first
  finds it), at 1 thread and at the cores'. A frame saves those seconds per snapshot step, times the
  epoch's snapshot steps (:func:`model_steps_per_epoch`): what it batches (the reused first
  aggregation, the dense products of every snapshot in one GEMM, the parallel aggregation over the
  frame's partitions) and what it costs (a model whose frame path is slower, EvolveGCN-O on PubMed:
  1.6-2.1x) as this model and store have them. Where that measurement is missing (a model with no
  per-snapshot step), the closed form: the aggregation costs 1/``traffic_speedup(S, OR)`` of what
  it did (:func:`dynagnn.schedule.tuner.traffic_speedup`, OR: the overlap rate of frames of S
  consecutive snapshots, :func:`dynagnn.graph.overlap.overlap_rate`), and with windows of more than
  one snapshot the first layer's forward aggregation is reused across the windows. The closed form
  alone missed that a frame batches the dense products: predicted over measured epoch 1.17 at the
  median over issue 30's matrix, flat in S on the carried sequences where S = 8 and 16 were 1.5x
  faster than the plain loop.
- **checkpointing** (ESDG): the backward re-runs each time block's forward from its checkpoint, one
  more forward pass: ``+ forward share``.
- **communication**: the closed-form volumes of :mod:`dynagnn.analysis.commvolume` (the gradient
  all-reduce of the parameters every step; the vertex partition's halo rows per layer, forward and
  backward; ESDG's two redistributions per layer; BLAD's hand-over of a window's state and its
  gradient between the pair) at the link's latency and bandwidth: the profile stage's
  :class:`~dynagnn.cost.link.LinkCost` when given, else :data:`DEFAULT_LINK` (this project's 2-core
  machine, the figures of :mod:`dynagnn.cost.link`).
- **the profile stage's cost model**, when the run names its ``predictor.json`` (auto's ``predictor``
  option): the aggregation share and the forward share of a step come from its operator model over
  this store's snapshot shapes (:func:`with_predictor`) rather than from the sparse products timed
  at start, and the channel costs from its link profile.

What no term holds: contention between processes for memory bandwidth and the cores' caches, a
thread pool's start, and the producer threads of the pipelined feeds. Those are what the trials are
for: a prediction only orders the candidates, the measured steps decide.
"""

from __future__ import annotations

import dataclasses
import logging
import math
import time
from dataclasses import dataclass

import numpy as np
import torch

from dynagnn.choose.frame_timing import (QUICK_FRAME_ROUNDS, frame_span, frames_measure_seconds, frames_terms,
                                         model_steps_per_epoch)
from dynagnn.cost.link import LinkCost
from dynagnn.errors import one_line

log = logging.getLogger("dynagnn")

# the channel and gloo all-reduce of this project's 2-core machine (cost/link.py's docstring): 0.05 ms
# for a few bytes and 0.10 ms for 1.25 MiB through the pair's channel; 0.09 to 0.44 ms for an all-reduce
DEFAULT_LINK = LinkCost(handover=(5e-5, 4e-11), allreduce=(9e-5, 2.7e-10))
# what a step of several processes pays beyond its collectives' bytes: the ranks waiting for the
# slowest, gloo's rendezvous of each collective, the loss and metrics gathered; 4 ms per step on this
# 2-core machine, read off the trials of group (1x2) and vertex (2x1) against sequential on tiny steps
STEP_SYNC_SECONDS = 4e-3
SAMPLE_SNAPSHOTS = 4   # snapshots whose edges the closed forms and the overlap rate read
QUICK_OVERHEAD = 1.0    # what a trainer's step adds to the model's own forward and backward (quick_base)


@dataclass(frozen=True)
class Base:
    """What a run's predictions start from (module docstring): the plain loop's epoch seconds by
    thread count, the epoch's step count, the aggregation and forward shares of a step, the GCN
    layers, the parameter count, and the store's shape (vertices, the window, the hidden width)."""

    seconds: dict[int, float]
    steps: int
    agg_share: float = 0.0
    fwd_share: float = 0.5
    layers: int = 1
    params: int = 0
    num_nodes: int = 0
    window: int = 1
    hidden: int = 32
    overlap: dict[int, float] | None = None     # frame size -> overlap rate of frames of that size
    halo_rows: dict[int, float] | None = None   # workers -> halo rows per snapshot of the vertex split
    memory_dim: int = 0
    carry: bool = False   # the sequence carried: a step is the whole training sequence, no window overlaps
    build_seconds: float = 0.0    # a trial's trainer built (the store and task loaded): what a trial pays once
    frame_build_seconds: float = 0.0   # what a frames trainer's build adds: its frame engine over the store
    gpu: bool = False             # a worker per GPU: the workers divide the compute, the threads feed them
    frames: dict[int, dict[int, float]] | None = None   # threads -> frame_seconds over frame_span snapshots (S 0: stepped)
    frame_span: int = 0
    model_steps: int = 0          # the model's snapshot steps in an epoch (model_steps_per_epoch)
    # the frames' saving as their measured ratio to the stepped loop's, not its seconds: the quick
    # base's epoch is one snapshot's step times the steps, a scale the frames' range timing does not
    # share (england_covid: a 0.017 s epoch predicted 0.001 s with S = 4, the seconds subtracted)
    frames_ratio: bool = False

    def frame_saving(self, candidate) -> float | None:
        """Seconds an epoch of ``candidate`` saves by its frames, at its threads (the nearest measured
        thread count), from :func:`frame_seconds`; None where it runs no frames or they were not
        measured at its frame size."""
        from dynagnn.train.strategies.frames import runs_frames

        if not self.frames or not self.frame_span or not self.model_steps or not runs_frames(candidate.strategy):
            return None
        size = int(dict(candidate.options).get("frame_size", 1))
        got = self.frames[min(self.frames, key=lambda k: (abs(k - candidate.threads), k))]
        if size not in got or 0 not in got:
            return None
        if self.frames_ratio:
            return self.epoch(candidate.threads) * (1 - got[size] / got[0]) if got[0] > 0 else None
        return (got[0] - got[size]) / self.frame_span * self.model_steps

    def epoch(self, threads: int) -> float:
        """E(t): Amdahl's law through the measured thread counts."""
        if threads in self.seconds:
            return self.seconds[threads]
        lo, hi = min(self.seconds), max(self.seconds)
        if lo == hi:
            return self.seconds[lo]
        ratio = self.seconds[hi] / self.seconds[lo]
        s = min(1.0, max(0.0, (ratio - lo / hi) / (1 - lo / hi)))   # the serial fraction
        return self.seconds[lo] * (s + (1 - s) * lo / threads)


def predict(candidate, base: Base, link: LinkCost = DEFAULT_LINK) -> float:
    """The predicted epoch seconds of ``candidate`` (a :class:`~dynagnn.choose.candidates.Candidate`)
    from ``base``: compute, then communication (module docstring)."""
    if base.gpu:   # each worker's GPU does its share; the threads only feed it
        compute = base.epoch(candidate.threads) / candidate.workers
    else:
        # P processes of t threads share the step's parallel part P·t ways; the serial part (dispatch,
        # the Python of each operator, the recurrence's small products) every process pays in full
        compute = base.epoch(candidate.threads * candidate.processes)
    saving = base.frame_saving(candidate)
    if saving is not None:   # measured: the processes split the snapshot steps, each saving on its share
        per = 1 if base.gpu else candidate.processes
        compute = max(0.05 * compute, compute * option_factor(candidate, base, frames=False) - saving / per)
    else:
        compute *= option_factor(candidate, base)
    return compute + communication(candidate, base, link)


def option_factor(candidate, base: Base, frames: bool = True) -> float:
    """What ``candidate``'s options multiply its compute by: PiPAD's frames by the closed form (the
    overlap aggregated once, the first layer's aggregation reused across windows; ``frames=False``:
    left out, the measured saving is subtracted instead), ESDG's checkpointing (one more forward)."""
    from dynagnn.train.strategies.frames import runs_frames

    opts = dict(candidate.options)
    factor = 1.0
    frame = int(opts.get("frame_size", 1))
    if frames and frame > 1 and runs_frames(candidate.strategy):
        from dynagnn.schedule.tuner import traffic_speedup

        overlap = (base.overlap or {}).get(frame, 0.0)
        saved = base.agg_share * (1 - 1 / float(traffic_speedup(frame, overlap)))
        if base.window > 1 and not base.carry:   # the first layer's forward aggregation, once per snapshot, not per window
            saved += base.agg_share / base.layers * base.fwd_share * (1 - 1 / base.window)
        factor *= max(0.05, 1 - saved)
    if int(opts.get("checkpoint_blocks", 1)) > 1:   # every block's forward re-run from its checkpoint
        factor *= 1 + base.fwd_share
    return factor


def communication(candidate, base: Base, link: LinkCost = DEFAULT_LINK) -> float:
    """Seconds an epoch of ``candidate`` spends moving data between its processes (module docstring):
    the gradients' ring all-reduce and the messages its strategy says a step moves
    (``Strategy.step_traffic``), each at the link's cost of its channel."""
    from dynagnn.analysis.commvolume.closed import ring_allreduce_volume
    from dynagnn.choose.candidates import strategy_of

    procs = candidate.processes
    if procs == 1:
        return 0.0
    # the ring all-reduce moves 2(P-1)/P of the buffer per process; the link was fitted at P = 2
    grads = ring_allreduce_volume(base.params, procs).bytes / procs
    per_step = STEP_SYNC_SECONDS + float(link.seconds("allreduce", grads))
    for channel, size, times in strategy_of(candidate.strategy).step_traffic(candidate.workers, base):
        per_step += times * float(link.seconds(channel, size))
    return per_step * base.steps


def carried_snapshots(config, store) -> int | None:
    """The training sequence's snapshots where ``config`` (a window strategy's) carries the state
    through it (PyG Temporal's loop: a step is the whole sequence), else None."""
    ends, carry = _training_ends(config, store)
    return len(ends) if carry else None


def _plain_ends(config, store) -> tuple[list[int], bool]:
    """:func:`_training_ends` of the plain loop of the request ``config`` (a snapshot model's)."""
    from dynagnn.choose.candidates import Candidate, chosen_config, plain_name

    return _training_ends(chosen_config(config, Candidate(plain_name("snapshot"))), store)


def _training_ends(config, store) -> tuple[list[int], bool]:
    """(the training windows' last snapshots, whether the sequence is carried) of ``config``'s run."""
    with torch.random.fork_rng(devices=[]):
        _, split, sequence, _ = config.strategy_cls(config).make_task(store)
    return [int(t) for t in split.train], sequence == "carry"


def measure_base(store, config, model, cores: int, measure, rounds: int = 2, cands=None,
                 frame_sizes=()) -> Base:
    """The :class:`Base` of a run (module docstring): its plain loop timed at 1 and ``cores`` threads,
    interleaved over ``rounds`` rounds after a warm-up round, the per-step medians summed (the frame
    tuner's rule); the aggregation share, the overlap rates of frames and the vertex split's halo of
    a sample of snapshots. ``model``: the run's model, built (its parameters and GCN layers are
    counted); ``measure(candidate) -> Trial``: the next round of a candidate's trial (the chooser's
    :class:`~dynagnn.choose.trials.Trials`, which keeps these trainers for the candidates' trials);
    ``cands``: the one-process candidates to time instead of the plain loop (the plain loop over the
    memory budget: one that fits, its options' factor divided out); ``frame_sizes``: the frame sizes
    among the candidates, whose saving :func:`frame_seconds` measures at each thread count timed."""
    from dynagnn.models import model_kind
    from dynagnn.schedule.tuner import interleaved
    from dynagnn.choose.candidates import Candidate, plain_name
    from dynagnn.choose.trials import epoch_seconds_of

    kind = model_kind(config.model)
    if not cands:
        cands = [Candidate(plain_name(kind), 1, t) for t in sorted({1, max(1, int(cores))})]
    params = sum(p.numel() for p in model.parameters())
    base = dict(seconds={}, steps=1, params=params, num_nodes=int(store.num_nodes), window=int(config.window),
                hidden=int(config.hidden), memory_dim=int(getattr(getattr(model, "memory", None), "memory_dim", 0) or 0),
                gpu=config.device.startswith("cuda"))
    if kind == "snapshot":
        ends, carry = _plain_ends(config, store)
        if carry:
            base.update(window=len(ends), carry=True)
        base.update(_snapshot_terms(store, config, model, max(1, int(cores)), frame_sizes or ()))
        base.pop("snapshot_seconds", None)
        base.update(frames_terms(store, config, model, [c.threads for c in cands], frame_sizes, ends, carry,
                                  base["window"]))
    first = {}

    def timed(c):   # the first round of each builds its trainer: that round's time beyond its steps is the build
        t = time.perf_counter()
        trial = measure(c)
        first.setdefault(c, time.perf_counter() - t - sum(trial.step_seconds) * (1 + 1 / len(trial.step_seconds)))
        return trial
    trials = interleaved(cands, timed, rounds)
    shape = Base(**base)

    def plain_seconds(c, got):   # a candidate timed in the plain loop's stead: its options' effect taken out
        saving = shape.frame_saving(c)
        if saving is not None:
            return (epoch_seconds_of(got) + saving) / option_factor(c, shape, frames=False)
        return epoch_seconds_of(got) / option_factor(c, shape)
    base.update(seconds={c.threads: plain_seconds(c, got) for c, got in trials.items()},
                steps=next(iter(trials.values()))[0].steps_per_epoch, build_seconds=max(0.0, min(first.values())))
    return Base(**base)


def quick_base(store, config, model, cores: int) -> Base | None:
    """A :class:`Base` without a trainer, for the chooser's short path (issue 54): a snapshot model's
    epoch as one snapshot's forward and backward (timed at 1 and ``cores`` threads on the last sampled
    snapshot, :func:`_snapshot_terms`) times the epoch's snapshot steps, times :data:`QUICK_OVERHEAD`
    (what a trainer's step adds: the head, the loss, the optimiser, the feed); the other terms as
    :func:`measure_base` has them, the frames' but their closed form (:func:`quick_frames` measures
    them where the run pays for it). None for an event or sampled model, or one with no step to time."""
    from dynagnn.models import model_kind

    if model_kind(config.model) != "snapshot":
        return None
    ends, carry = _plain_ends(config, store)
    terms = _snapshot_terms(store, config, model, max(1, int(cores)), thread_counts=(1,))
    per = terms.pop("snapshot_seconds", None)
    if not ends or not per or not all(v > 0 for v in per.values()):
        return None
    snapshots = model_steps_per_epoch(ends, int(config.window), carry)
    steps = 1 if carry else math.ceil(len(ends) / max(1, int(config.batch_windows)))
    window = len(ends) if carry else int(config.window)
    return Base(seconds={t: v * snapshots * QUICK_OVERHEAD for t, v in per.items()}, steps=steps,
                params=sum(p.numel() for p in model.parameters()), num_nodes=int(store.num_nodes),
                window=window, hidden=int(config.hidden), carry=carry, gpu=config.device.startswith("cuda"),
                frames_ratio=True, model_steps=snapshots, **terms)


def quick_frames(quick: Base, store, config, model, frame_sizes, budget_s: float) -> tuple[Base, str | None]:
    """(``quick`` with the frames' saving measured over :data:`QUICK_FRAME_ROUNDS` rounds, what the
    closed form misses most: a carried sequence's frames, 1.3-1.4x on twitter_tennis; None) at the
    thread count the quick base timed fastest (the other's candidates read its ratio: on a small graph
    a thread each, where the pick falls and the measurement costs least; england_covid's T-GCN step
    took 0.025 s at 1 thread, 0.034 s at 2), at the largest of ``frame_sizes`` a frame's span holds
    only (the best or within 3% of it on issue 54's short cases, at half the cost of every size),
    where that measurement (:func:`frames_measure_seconds`) costs at most ``budget_s``; else
    (``quick`` as it is, why the frames were not measured): the short path trains no frames it did
    not measure."""
    sizes = sorted({int(s) for s in frame_sizes})
    if not sizes:
        return quick, None
    span = frame_span(config, sizes, quick.carry, quick.window)
    sizes = [max([s for s in sizes if s <= span] or sizes[:1])]
    threads = min(quick.seconds, key=lambda t: (quick.seconds[t], -t))
    cost = frames_measure_seconds(quick, config, sizes, threads)
    if cost > budget_s:
        why = f"frames not measured: ~{cost:.2g} s to measure, over the {budget_s:.2g} s they may save"
        log.info("auto: %s", why)
        return quick, why
    t0 = time.perf_counter()
    ends, carry = _plain_ends(config, store)
    terms = frames_terms(store, config, model, [threads], sizes, ends, carry, quick.window,
                         rounds=QUICK_FRAME_ROUNDS)
    if not terms:   # the model's frame path failed here (frames_terms logged why)
        return quick, "frames not measured: the model's frame path failed at start"
    log.debug("auto: frames measured in %.3g s (estimated %.3g s)", time.perf_counter() - t0, cost)
    return dataclasses.replace(quick, **terms), None


def with_predictor(base: Base, path, store, config) -> tuple[Base, LinkCost]:
    """(``base`` with the aggregation share the profile stage's operator model predicts for this
    store, the predictor's channel costs) from the predictor file at ``path`` (a model with no operator
    list keeps the share measured at start; a predictor fitted without link costs gives
    :data:`DEFAULT_LINK`). ConfigError, in one line, for a file that is not a predictor or lacks an
    operator the model needs."""
    from pathlib import Path

    from dynagnn.cost.models import has_call_list, model_calls
    from dynagnn.cost.predictor import Predictor
    from dynagnn.errors import ConfigError, DynagnnError

    try:
        pred = Predictor.load(Path(path))
        link = LinkCost.of(pred) or DEFAULT_LINK
        if not has_call_list(config.model):
            return base, link
        calls = model_calls(config.model, store.feature_dim(), int(config.hidden))
        edges = np.diff(np.asarray(store.offsets)).astype(np.int64)
        parts = pred.breakdown({"edges": edges}, calls, num_nodes=store.num_nodes).sum()
    except (OSError, ValueError, DynagnnError) as exc:
        raise ConfigError(f"predictor {path}: {one_line(exc)}") from None
    total = float(parts.sum())
    agg = float(parts[[k for k in parts.index if ".aggregate." in k]].sum())
    fwd = float(parts[[k for k in parts.index if k.endswith(".forward")]].sum())
    if total <= 0:
        return base, link
    return dataclasses.replace(base, agg_share=min(0.9, agg / total), fwd_share=fwd / total), link


def _sample(store) -> list[int]:
    T = store.num_snapshots
    return sorted({int(round(i * (T - 1) / max(SAMPLE_SNAPSHOTS - 1, 1))) for i in range(min(T, SAMPLE_SNAPSHOTS))})


def _snapshot_terms(store, config, model, cores: int, frame_sizes=(), thread_counts=()) -> dict:
    """A snapshot model's aggregation and forward shares, its GCN layers, the overlap rate of frames
    of each of ``frame_sizes`` (the candidates'), one snapshot's forward and backward seconds at
    ``cores`` threads and at each of ``thread_counts`` (``snapshot_seconds``: {threads: seconds}) and
    the vertex split's halo rows per snapshot, on a sample of the store's snapshots."""
    from dynagnn.analysis.commvolume.closed import vertex_volume_hash
    from dynagnn.cost.step_times import step_seconds
    from dynagnn.graph.overlap import overlap_rate, split_frame
    from dynagnn.models import find_gcn_layers

    sample = _sample(store)
    edges = [store.edges(t) for t in sample]
    layers = max(1, len(find_gcn_layers(model)))
    out: dict = {"layers": layers}
    try:
        steps = step_seconds(store, config.model, config.hidden, sample[-1], {cores, *thread_counts},
                             device=config.device)
        seconds = {c: f + b for c, (f, b) in steps.items()}
        out["snapshot_seconds"] = seconds
        step = seconds[cores]
        agg = _spmm_seconds(edges[-1], store.num_nodes, config.hidden, cores, config.device)
        out["agg_share"] = min(0.9, 2 * layers * agg / step) if step > 0 else 0.0
        out["fwd_share"] = steps[cores][0] / step if step > 0 else 0.5
    except (TypeError, AttributeError, NotImplementedError):   # a model with no per-snapshot step to time
        pass
    out["overlap"] = {}
    for size in sorted({int(s) for s in frame_sizes if 1 < int(s) <= store.num_snapshots}):
        starts = sorted({int(round(i * (store.num_snapshots - size) / 2)) for i in range(3)})
        rates = [overlap_rate(split_frame(store.window_edges(a, a + size), store.num_nodes)) for a in starts]
        out["overlap"][size] = float(np.mean(rates))
    out["halo_rows"] = {}
    for w in range(2, cores + 1):
        if w <= store.num_nodes:
            vol = vertex_volume_hash([(r, c) for r, c, _ in edges], store.num_nodes, w)
            out["halo_rows"][w] = vol.units / len(edges)
    return out


def _spmm_seconds(edges, num_nodes: int, width: int, threads: int, device: str, repeats: int = 3) -> float:
    """Median seconds of one normalised sparse product ``Â·H`` of a snapshot at ``width``."""
    import statistics
    import time

    from dynagnn.graph import csr

    before = torch.get_num_threads()
    torch.set_num_threads(int(threads))
    try:
        dev = torch.device(device)
        sync = torch.cuda.synchronize if dev.type == "cuda" else (lambda: None)
        adj = csr.normalize(*edges, num_nodes).to(dev)
        h = torch.ones(num_nodes, width, device=dev)
        got = []
        for _ in range(repeats + 1):
            sync()
            t0 = time.perf_counter()
            csr.aggregate(adj, h)
            sync()
            got.append(time.perf_counter() - t0)
        return statistics.median(got[1:])
    finally:
        torch.set_num_threads(before)


def spearman(a, b) -> float:
    """Spearman's rank correlation of two equal-length sequences (average ranks for ties); NaN when
    either is constant, holds a NaN or is shorter than 2. Ranked here, not by scipy: importing
    scipy.stats cost a resolve 1.3 s."""
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    if len(a) < 2 or np.isnan(a).any() or np.isnan(b).any() or np.ptp(a) == 0 or np.ptp(b) == 0:
        return math.nan
    return float(np.corrcoef(_average_ranks(a), _average_ranks(b))[0, 1])


def _average_ranks(x: np.ndarray) -> np.ndarray:
    """1-based ranks of ``x``, tied values sharing the mean of their ranks."""
    values, inverse, counts = np.unique(x, return_inverse=True, return_counts=True)
    last = np.cumsum(counts)   # each distinct value's ranks run from last - count + 1 to last
    return (last - (counts - 1) / 2.0)[inverse]


__all__ = ["Base", "DEFAULT_LINK", "STEP_SYNC_SECONDS", "carried_snapshots", "model_steps_per_epoch", "option_factor", "with_predictor", "communication", "measure_base", "predict", "spearman"]
