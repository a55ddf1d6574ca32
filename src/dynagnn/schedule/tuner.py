r"""PiPAD's dynamic tuner (PiPAD §4.4): snapshots per partition, S_per, for every frame.

A frame (PiPAD: a window of ``frame_size`` consecutive snapshots, stride 1) is cut into partitions
of S_per consecutive snapshots; a partition's snapshots are aggregated together (one SpMM over the
overlap adjacency on the coalesced features, plus per-snapshot exclusive parts). For each frame the
tuner picks S_per from ``options`` (PiPAD: "e.g. 2, 4 & 8"; here 1, 2, 4, 8) in three steps:

1. Memory bound. "The maximal memory consumption in the N-snapshot mode would not exceed N times
   of that in the one-snapshot computation": S_per is allowed when its predicted partition bytes
   fit in ``bytes_available``. Pass ``partition_bytes`` [F, n_opt] directly, or ``snapshot_bytes``
   [F] (one-snapshot peak) and the bound S_per * snapshot_bytes is used.
2. Speedup estimate. PiPAD reads an offline table of the parallel GNN's speedup over one-snapshot
   execution against the partition's topology overlap rate OR (Fig. 9a; "simultaneously operating
   more snapshots normally means more parallelism but lower OR"). ``speedup`` is that table
   (``SpeedupTable``, built from measurements by ``SpeedupTable.from_measurements``: mean speedup
   per OR bucket, linear in OR between bucket centres) or a ready array [F, n_opt]. Without one we
   use the traffic model ``traffic_speedup``: one-at-a-time aggregation reads s*E edges for s
   snapshots of E edges; the partition reads the OR*E overlap edges once for all s feature blocks
   and the (1-OR)*E exclusive edges of each snapshot, so speedup = s / (OR + (1-OR) s). This is our
   stand-in for the unpublished table and ignores the dimension axis (Fig. 9b).
3. Transfer check. "Reject those schemes rendering the pipeline stall and choose the one with the
   highest computing speedup from leftovers": with ``transfer_time`` [F, n_opt] (seconds to move
   one partition) and ``compute_time`` [F] (seconds to compute one snapshot alone), option s
   stalls when transfer_time > s * compute_time / speedup (the next partition's transfer does not
   hide under this partition's compute). Skipped when either is None.

Deviations, all documented here: the OR of an option is an input (the analysis stage's
``overlap.parquet``: the overlap rate of the frame's partitions of that size); ties in speedup go to
the larger S_per (PiPAD: "larger S_per is preferred"); when every memory-feasible option stalls,
PiPAD does not say what to do, so we take the option with the least estimated frame time
(ceil(frame_size / s) partitions of max(transfer, compute) each); a frame where no option fits
in memory is a ConfigError. Options larger than the frame are not allowed. The cache-size
decision of the tuner lives with the feature cache, not here.

The frame engine's :class:`FrameTuner` decides from measurement, as PiPAD's run-time tuner does:
the memory bound and the traffic model generate the :func:`candidates` (S, and an S_per cap under
which the model above picks each frame's S_per), the engine times each on real frames after its
profiling epoch (interleaved rounds after a warm-up, the median of each piece of work), and
:func:`fastest` keeps the quickest, the simplest within 3% (a tie); S = 1 (with the reuse cache,
PiPAD's -R) is always a candidate, and the pipeline is chosen in the same measurement against it,
so the tuner never freezes what it measured slower than -R. On a CPU the traffic model alone misjudges:
a wider frame saves edge reads but its frame-wide tensors leave the core's cache (measured:
EvolveGCN-O on twitter_tennis, S = 8 with S_per = 8 slower than one snapshot at a time; S = 4 with
S_per = 1 faster).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import ConfigError

OPTIONS = (1, 2, 4, 8)


def traffic_speedup(s, overlap):
    """Edge-traffic speedup of aggregating s snapshots together at overlap rate OR: s / (OR + (1-OR) s)."""
    s = np.asarray(s, dtype=np.float64)
    o = np.clip(np.asarray(overlap, dtype=np.float64), 0.0, 1.0)
    return s / (o + (1.0 - o) * s)


@dataclass
class SpeedupTable:
    """Offline speedup of each S_per over one-snapshot execution by overlap-rate bucket (PiPAD Fig. 9a).

    options: S_per values [n_opt]; edges: OR bucket edges [B+1] over [0, 1]; speedup: [n_opt, B] mean
    speedup per bucket (NaN where a bucket had no measurement)."""

    options: tuple[int, ...]
    edges: np.ndarray
    speedup: np.ndarray

    @classmethod
    def from_measurements(cls, s_per, overlap_rate, speedup, bins: int = 10) -> "SpeedupTable":
        s_per = np.asarray(s_per, dtype=np.int64)
        o = np.clip(np.asarray(overlap_rate, dtype=np.float64), 0.0, 1.0)
        sp = np.asarray(speedup, dtype=np.float64)
        if not (s_per.shape == o.shape == sp.shape) or s_per.ndim != 1 or s_per.size == 0:
            raise ConfigError("speedup measurements: expected three 1-D arrays of equal, non-zero length")
        opts = tuple(int(x) for x in np.unique(s_per))
        edges = np.linspace(0.0, 1.0, bins + 1)
        b = np.clip(np.searchsorted(edges, o, side="right") - 1, 0, bins - 1)
        table = np.full((len(opts), bins), np.nan)
        for i, s in enumerate(opts):
            m = s_per == s
            sums = np.bincount(b[m], weights=sp[m], minlength=bins)
            cnt = np.bincount(b[m], minlength=bins)
            with np.errstate(invalid="ignore", divide="ignore"):
                table[i] = np.where(cnt > 0, sums / np.maximum(cnt, 1), np.nan)
        return cls(opts, edges, table)

    def lookup(self, s: int, overlap) -> np.ndarray:
        """Speedup of option s at the given overlap rates: linear between measured bucket centres,
        flat beyond the outermost ones; 1.0 for s = 1 when not measured."""
        o = np.asarray(overlap, dtype=np.float64)
        if s not in self.options:
            if s == 1:
                return np.ones_like(o)
            raise ConfigError(f"speedup table: no measurements for S_per={s}; measured {list(self.options)}")
        row = self.speedup[self.options.index(s)]
        centres = 0.5 * (self.edges[1:] + self.edges[:-1])
        ok = np.isfinite(row)
        return np.interp(o, centres[ok], row[ok])

    def to_dict(self) -> dict:
        return {"options": list(self.options), "edges": self.edges.tolist(),
                "speedup": [[None if not np.isfinite(v) else float(v) for v in r] for r in self.speedup]}

    @classmethod
    def from_dict(cls, d: dict) -> "SpeedupTable":
        sp = np.array([[np.nan if v is None else v for v in r] for r in d["speedup"]], dtype=np.float64)
        return cls(tuple(int(x) for x in d["options"]), np.asarray(d["edges"], dtype=np.float64), sp)


@dataclass
class TunerPlan:
    """Per-frame choice: s_per [F], its estimated speedup [F]; memory_ok and stall [F, n_opt] record why
    options were dropped; fallback [F] marks frames where every option stalled."""

    frame_size: int
    options: tuple[int, ...]
    s_per: np.ndarray
    speedup: np.ndarray
    memory_ok: np.ndarray
    stall: np.ndarray
    fallback: np.ndarray

    def to_dict(self) -> dict:
        return {"frame_size": self.frame_size, "options": list(self.options), "s_per": self.s_per.tolist(),
                "speedup": self.speedup.tolist(), "memory_ok": self.memory_ok.astype(int).tolist(),
                "stall": self.stall.astype(int).tolist(), "fallback": self.fallback.astype(int).tolist()}

    @classmethod
    def from_dict(cls, d: dict) -> "TunerPlan":
        return cls(int(d["frame_size"]), tuple(int(x) for x in d["options"]), np.asarray(d["s_per"], dtype=np.int64),
                   np.asarray(d["speedup"], dtype=np.float64), np.asarray(d["memory_ok"], dtype=bool),
                   np.asarray(d["stall"], dtype=bool), np.asarray(d["fallback"], dtype=bool))


def _per_option(x, name: str, F: int, n: int) -> np.ndarray:
    x = np.asarray(x, dtype=np.float64)
    if x.shape != (F, n):
        raise ConfigError(f"tuner: {name} must have shape [frames={F}, options={n}], got {x.shape}")
    return x


def tune_frames(overlap, bytes_available: float, *, frame_size: int = 16, options=OPTIONS,
                partition_bytes=None, snapshot_bytes=None, speedup=None, transfer_time=None,
                compute_time=None) -> TunerPlan:
    """S_per for every frame (module docstring).

    overlap: float [F, n_opt] overlap rate of option o's partitions in frame f (1.0 for S_per = 1);
    bytes_available: device bytes for one partition; partition_bytes [F, n_opt] or snapshot_bytes [F];
    speedup: SpeedupTable, float [F, n_opt], or None (traffic model); transfer_time [F, n_opt] and
    compute_time [F] seconds, optional.
    """
    options = tuple(int(s) for s in options)
    if not options or any(s < 1 for s in options) or list(options) != sorted(set(options)):
        raise ConfigError(f"tuner options: expected increasing positive integers, got {list(options)}")
    o = np.asarray(overlap, dtype=np.float64)
    if o.ndim != 2:
        raise ConfigError(f"tuner: overlap must have shape [frames, options={len(options)}], got {o.shape}")
    F, n = o.shape[0], len(options)
    o = _per_option(o, "overlap", F, n)
    s = np.asarray(options, dtype=np.float64)
    if partition_bytes is not None:
        mem = _per_option(partition_bytes, "partition_bytes", F, n)
    elif snapshot_bytes is not None:
        sb = np.asarray(snapshot_bytes, dtype=np.float64)
        if sb.shape != (F,):
            raise ConfigError(f"tuner: snapshot_bytes must have shape [frames={F}], got {sb.shape}")
        mem = sb[:, None] * s[None, :]
    else:
        raise ConfigError("tuner: give partition_bytes [frames, options] or snapshot_bytes [frames]")
    memory_ok = (mem <= bytes_available) & (s[None, :] <= frame_size)
    if not memory_ok.any(axis=1).all():
        f = int(np.flatnonzero(~memory_ok.any(axis=1))[0])
        raise ConfigError(f"tuner: frame {f} does not fit even one partition of {options[0]} snapshot(s): needs "
                          f"{mem[f, 0]:.3g} bytes, {bytes_available:.3g} available")
    if speedup is None:
        sp = traffic_speedup(s[None, :], o)
    elif isinstance(speedup, SpeedupTable):
        sp = np.stack([speedup.lookup(int(v), o[:, i]) for i, v in enumerate(options)], axis=1)
    else:
        sp = _per_option(speedup, "speedup", F, n)
    if (sp <= 0).any() or not np.isfinite(sp).all():
        raise ConfigError("tuner: speedups must be finite and positive")
    if (transfer_time is None) != (compute_time is None):
        raise ConfigError("tuner: give both transfer_time and compute_time, or neither")
    if transfer_time is not None:
        tr = _per_option(transfer_time, "transfer_time", F, n)
        ct = np.asarray(compute_time, dtype=np.float64)
        if ct.shape != (F,):
            raise ConfigError(f"tuner: compute_time must have shape [frames={F}], got {ct.shape}")
        comp = s[None, :] * ct[:, None] / sp
        stall = tr > comp
        frame_time = np.ceil(frame_size / s)[None, :] * np.maximum(tr, comp)
    else:
        stall = np.zeros((F, n), dtype=bool)
        frame_time = None
    ok = memory_ok & ~stall
    fallback = ~ok.any(axis=1)
    # Highest speedup, ties to the larger S_per: score by speedup then option index.
    score = np.where(ok, sp, -np.inf)
    best = n - 1 - np.argmax(score[:, ::-1], axis=1)
    if fallback.any():
        ft = np.where(memory_ok, frame_time, np.inf)
        best[fallback] = np.argmin(ft[fallback], axis=1)
    rows = np.arange(F)
    return TunerPlan(int(frame_size), options, np.asarray(options, dtype=np.int64)[best], sp[rows, best],
                     memory_ok, stall, fallback)


def partition_options(frame_size: int, options=OPTIONS) -> tuple[int, ...]:
    """The S_per a frame of ``frame_size`` snapshots can take: the options up to it, and itself."""
    s = int(frame_size)
    return tuple(sorted({int(o) for o in options if int(o) <= s} | {s}))


def frame_size_for(window: int, snapshot_bytes: float, bytes_available: float, cap: int = 16) -> int:
    """S, the snapshots a frame holds: as many as fit ``bytes_available`` at ``snapshot_bytes`` each
    (PiPAD's bound: N snapshots take at most N times one snapshot's memory), at most the window (a
    frame never spans two windows) and ``cap`` (PiPAD's frame size, 16). At least 1."""
    fit = int(bytes_available // max(float(snapshot_bytes), 1.0))
    return max(1, min(int(window), int(cap), fit))


@dataclass(frozen=True, order=True)
class Candidate:
    """One configuration the run-time tuner times: S snapshots per frame, the largest S_per its
    frames may take (1: each snapshot with its own matrix; S: the traffic model's free choice), and
    whether the producer thread prepares the next frame (the pipeline). Ordered simplest first:
    smaller S, then smaller S_per cap, then the pipeline off."""

    frame_size: int
    max_s_per: int
    pipeline: bool = False


# Candidates within this fraction of the fastest count as tied, and the simplest of them is kept:
# a trial that is 1-2% faster on a few windows does not predict the epochs after it (measured:
# churn EvolveGCN-O, S = 2 frozen from trials, then slower per epoch than S = 1 with reuse).
TIE = 0.03


def candidates(max_frame: int, options=OPTIONS, partitions: bool = True, pipeline: bool = False) -> list[Candidate]:
    """The configurations to time: every S among ``options`` up to ``max_frame`` (the memory bound)
    and ``max_frame`` itself, S = 1 always among them (PiPAD's -R when the model reuses ``Â X``); per
    S, S_per capped at 1 and left to the traffic model (S). With ``partitions`` False (the model reads
    only the reused ``Â X``, so S_per is never used) one per S. All with ``pipeline`` as given."""
    sizes = sorted({int(o) for o in options if int(o) <= max_frame} | {int(max_frame), 1})
    return [Candidate(s, p, bool(pipeline)) for s in sizes for p in sorted({1, s} if partitions else {s})]


def trial_seconds(rounds) -> float:
    """A candidate's time from its timed rounds, each the seconds of the same W pieces of work (a
    number, or a sequence of W): per piece the median over the rounds (one disturbed round, slow or
    lucky, moves nothing when there are three), summed."""
    return float(np.median(np.array([np.atleast_1d(np.asarray(r, dtype=np.float64)) for r in rounds]), axis=0).sum())


def fastest(timings: dict[Candidate, list], tie: float = TIE) -> Candidate:
    """The simplest candidate (smallest S, then S_per cap, then pipeline off) among those whose
    :func:`trial_seconds` is within ``tie`` (a fraction) of the least."""
    if not timings:
        raise ValueError("fastest: no timings")
    seconds = {c: trial_seconds(t) for c, t in timings.items()}
    best = min(seconds.values())
    return min(c for c, s in seconds.items() if s <= best * (1.0 + tie))


def interleaved(cands, measure, rounds: int, more=None) -> dict:
    """Each candidate measured ``rounds`` + 1 times, interleaved (A B C A B C ...: load drift hits all
    alike), the first round (warm-up: matrices built, caches filled, first-call allocations) left out:
    {candidate: its ``rounds`` measurements}. The frame tuner's trials and the chooser's
    (:mod:`dynagnn.choose.resolve`) both time this way. ``more(r) -> bool``, asked before each
    timed round r (from 1): False ends the rounds there (the chooser's time bound), every candidate
    with as many measurements as the others."""
    got: dict = {c: [] for c in cands}
    for r in range(int(rounds) + 1):
        if r and more is not None and not more(r):
            break
        for c in cands:
            t = measure(c)
            if r:
                got[c].append(t)
    return got


class FrameTuner:
    """PiPAD's run-time tuner for the frame engine (§4.4): S, then S_per for every frame, frozen.

    ``stats(a, s) -> (overlap rate, bytes)``: the partitions of size s of the frame starting at
    snapshot a (their mean overlap rate and the bytes they move). ``frame_size``: S fixed by hand
    (``--frame-size``); None: the first epoch is a profiling epoch that runs one snapshot per frame
    (PiPAD's preparing epochs), then :meth:`freeze` picks S. Given a ``measure``, it times the
    :func:`candidates` up to the memory bound on real frames and keeps the fastest (PiPAD's tuner is
    a run-time one; the traffic model alone misjudges a CPU, where a frame-wide tensor can leave the
    cache before the shared matrix saves anything); without one, S is the memory bound. Each frame's
    S_per is :func:`tune_frames` on that frame's row (overlap rates, memory, and once profiled the
    stall check) among the options up to the chosen cap, decided the first time the frame is met
    and kept. ``pipeline``: the pipeline of the chosen candidate (None until :meth:`freeze`).
    """

    def __init__(self, stats, window: int, snapshot_bytes: float, bytes_available: float, *,
                 frame_size: int | None = None, options=OPTIONS):
        self.stats = stats
        self.window = int(window)
        self.snapshot_bytes = float(snapshot_bytes)
        self.bytes_available = float(bytes_available)
        self.options = tuple(int(o) for o in options)
        self.fixed = frame_size is not None
        self.frame_size = int(frame_size) if frame_size is not None else 1
        self.max_s_per = self.frame_size
        self.frozen = self.fixed
        self.pipeline: bool | None = None
        self.compute_time: float | None = None
        self.bytes_per_second: float | None = None
        self.timings: dict[Candidate, list] = {}
        self.finals: dict[Candidate, list] = {}
        self._s_per: dict[tuple[int, int], int] = {}

    def use(self, c: Candidate) -> None:
        """Run frames as candidate ``c`` from now on (S_per decisions start afresh)."""
        self.frame_size, self.max_s_per, self.pipeline = int(c.frame_size), int(c.max_s_per), bool(c.pipeline)
        self._s_per.clear()

    def _time(self, cands: list[Candidate], measure, rounds: int) -> dict[Candidate, list]:
        """:func:`interleaved` with each candidate put in use before it is measured."""
        return interleaved(cands, lambda c: (self.use(c), measure(c))[1], rounds)

    def freeze(self, compute_time: float | None = None, bytes_per_second: float | None = None, *,
               measure=None, partitions: bool = True, rounds: int = 3, pipelines=(False,)) -> int:
        """End of the profiling epoch: S, the S_per cap and the pipeline chosen, the measured
        per-snapshot compute time and feed bandwidth kept for the stall check.

        ``measure(candidate) -> seconds`` (a number, or one per piece of work) runs the same real work
        under the candidate the tuner has just put in use. ``pipelines``: the pipeline settings to
        choose from ((False,), (True,), or both for "auto"). Stage 1 times the :func:`candidates`
        (with ``pipelines[0]``; ``partitions``: whether S_per matters) by :meth:`_time`, kept in
        :attr:`timings`; with both pipeline settings, stage 2 times the stage-1 winner and S = 1 each
        with the pipeline off and on, afresh and interleaved (:attr:`finals`), so the choice is
        always measured against S = 1 in the same rounds. :func:`fastest` decides each stage. With S
        fixed by hand only the pipeline is chosen. Returns S."""
        pipelines = tuple(dict.fromkeys(bool(p) for p in pipelines))
        if self.pipeline is not None or (self.frozen and len(pipelines) == 1):
            if self.pipeline is None:
                self.pipeline = pipelines[0]
            return self.frame_size
        if self.frozen:  # S fixed by hand: only the pipeline is chosen
            cands = [Candidate(self.frame_size, self.max_s_per, pipelines[0])]
        else:
            self.compute_time = compute_time
            self.bytes_per_second = bytes_per_second
            cands = candidates(frame_size_for(self.window, self.snapshot_bytes, self.bytes_available),
                               self.options, partitions, pipelines[0])
        best = cands[-1]
        if measure is not None:
            if len(cands) > 1:
                self.timings = self._time(cands, measure, rounds)
                best = fastest(self.timings)
            if len(pipelines) > 1:
                finals = sorted({Candidate(c.frame_size, c.max_s_per, p) for c in {best, cands[0]} for p in pipelines})
                self.finals = self._time(finals, measure, rounds)
                best = fastest(self.finals)
        self.use(best)
        self.frozen = True
        return self.frame_size

    def s_per(self, a: int, size: int) -> int:
        """S_per of the frame of ``size`` snapshots starting at snapshot ``a`` (decided once)."""
        key = (int(a), int(size))
        got = self._s_per.get(key)
        if got is None:
            got = self._s_per[key] = self._decide(*key)
        return got

    def _decide(self, a: int, size: int) -> int:
        opts = tuple(o for o in partition_options(size, self.options) if o <= self.max_s_per)
        if len(opts) == 1:
            return opts[0]
        rows = [self.stats(a, s) if s > 1 else (1.0, 0) for s in opts]
        overlap = np.array([[r[0] for r in rows]])
        kw = {}
        if self.compute_time and self.bytes_per_second:
            kw = {"transfer_time": np.array([[r[1] / self.bytes_per_second for r in rows]]),
                  "compute_time": np.array([self.compute_time])}
        plan = tune_frames(overlap, self.bytes_available, frame_size=size, options=opts,
                           snapshot_bytes=np.array([self.snapshot_bytes]), **kw)
        return int(plan.s_per[0])
