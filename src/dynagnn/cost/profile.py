"""Operator micro-benchmarks: the measurements BLAD's cost model is fitted to.

BLAD (SC'23, §5) schedules work it has not run yet: it times each training operator offline at
typical loads and fits a linear model per operator. This module is the offline part. It times, on one
device, each operator a snapshot-based GCN-RNN model is made of:

==========  ==========================================================  =======================
operator    what runs                                                   shape columns used
==========  ==========================================================  =======================
graph_op    ``aggregate(Â, X)``: sparse CSR ``[N, N]`` times ``[N, F]``    N, nnz, F (in = out)
nn_op       the GCN update ``X @ W``: ``[N, F_in] @ [F_in, F_out]``        N, F_in, F_out
gru         ``torch.nn.GRUCell(F_in, F_out)`` over N vertices              N, F_in, F_out
lstm        ``torch.nn.LSTMCell(F_in, F_out)`` over N vertices             N, F_in, F_out
evolve      EvolveGCN's weight step: ``GRUCell(F_out, F_out)`` whose       F_in, F_out
            batch is the F_in rows of the ``[F_in, F_out]`` weight
elementwise one element-wise pass over ``[N, F]``: ``a * b`` (the unit    N, F (in = out)
            in which the models' gate arithmetic, bias adds,
            ReLUs and concatenations are counted)
sigmoid     ``torch.sigmoid`` over ``[N, F]`` (the GRU/LSTM-style gates     N, F (in = out)
            outside the profiled cells: 3-7x the cost of ``a * b``
            per element on CPU)
tanh        ``torch.tanh`` over ``[N, F]`` (candidate states)               N, F (in = out)
==========  ==========================================================  =======================

Forward and backward are timed separately. The backward time of an operator is that of
``torch.autograd.grad`` of its saved output alone, w.r.t. every input that would carry a gradient
in training (features/hidden state and parameters), with a random output gradient. It is measured by
calling ``autograd.grad(..., retain_graph=True)`` on one recorded forward, so no forward is included.

Timing method: each measurement point gets ``warmup`` unmeasured calls, then ``repeats`` samples;
a sample times a loop of ``number`` calls (``number`` is calibrated so that one sample lasts at
least ``min_sample_s``: a 20 µs kernel is not timed alone against a 1 µs timer jitter) and
records the mean per call. The table keeps the median over samples. On CUDA, samples are timed with
CUDA events, with ``torch.cuda.synchronize()`` before the first event and after the last. The
operators of :data:`COLD_OPERATORS` (the graph operator) are timed cache-cold, as training runs them:
each call alone, after an untimed write of a buffer twice the last-level cache (:class:`Evictor`);
the ``cold`` column says which rows.

Graphs are uniform random graphs with the requested number of edges, drawn with numpy from a seed
(one seed per point, so a point is reproducible on its own), then normalised with
:func:`dynagnn.graph.csr.normalize`, which adds N self-loops: the ``nnz`` column is the nnz of
``Â`` as the operator sees it (edges + N), i.e. :attr:`Adjacency.num_edges`.

The output is a table with one row per (operator, direction, device, N, nnz, in_width, out_width);
columns that an operator does not depend on are 0 (nnz for the dense operators, N and nnz for
``evolve``).
"""

from __future__ import annotations

import logging
import math
import statistics
import time
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterable, Sequence

import numpy as np
import pandas as pd
import torch

from ..atomic import write_atomic
from ..errors import ConfigError, CostError
from ..graph.csr import Adjacency, aggregate, normalize
from .models import ELEMENTWISE

log = logging.getLogger(__name__)

OPERATORS: tuple[str, ...] = ("graph_op", "nn_op", "gru", "lstm", "evolve", "elementwise", "sigmoid", "tanh")

DIRECTIONS: tuple[str, ...] = ("forward", "backward")
KEY_COLUMNS = ["operator", "direction", "device", "N", "nnz", "in_width", "out_width"]
COLUMNS = KEY_COLUMNS + ["median_s", "min_s", "repeats", "number", "threads", "cold"]

# operators timed cache-cold (each call after evicting the caches), as training runs them: a
# snapshot's Â is read once per step, with the recurrent cell and the other snapshots' operators in
# between. Timed hot, in a loop on one matrix, graph_op measured 0.07-0.33 ms per call on blad_group
# (N = 5,000, 12k-125k nnz, F = 32, 1 thread) against 0.36-0.70 ms inside a training step and
# 0.36-0.75 ms after an eviction: the cost model predicted a third of the epoch's aggregation time.
# The dense operators read what the operator before them just wrote, and stay timed hot.
COLD_OPERATORS: tuple[str, ...] = ("graph_op",)
# bytes an eviction writes: twice the largest last-level cache we run on (32 MiB here)
COLD_BYTES = 64 * 2**20


# ----------------------------------------------------------------------------------------- grid


@dataclass(frozen=True)
class Point:
    """One shape to time. ``nnz`` is the target nnz of ``Â`` (edges + N); 0 where unused."""

    operator: str
    N: int
    nnz: int
    in_width: int
    out_width: int


@dataclass
class Grid:
    """Log-spaced levels of each shape dimension; :meth:`points` crosses them per operator.

    ``degrees`` are average nnz per row of ``Â`` (self-loop included, so >= 1); a graph point has
    ``nnz = round(N * degree)``, capped at N². The dense RNN/NN operators cross N with
    (in, out) width pairs; ``evolve`` crosses in-widths (the rows of the evolving weight) with
    out-widths.
    """

    vertices: list[int]
    degrees: list[float]
    widths: list[int]
    operators: tuple[str, ...] = OPERATORS

    def points(self) -> list[Point]:
        unknown = [op for op in self.operators if op not in OPERATORS]
        if unknown:
            raise ConfigError(f"unknown operator(s) {unknown} in the profile grid; known: {', '.join(OPERATORS)}")
        pts: list[Point] = []
        for op in self.operators:
            if op == "graph_op":
                for n in self.vertices:
                    for d in self.degrees:
                        nnz = min(int(round(n * d)), n * n)
                        for f in self.widths:
                            pts.append(Point(op, n, max(nnz, n), f, f))
            elif op in ELEMENTWISE:
                for n in self.vertices:
                    for f in self.widths:
                        pts.append(Point(op, n, 0, f, f))
            elif op == "evolve":
                for fi in self.widths:
                    for fo in self.widths:
                        pts.append(Point(op, 0, 0, fi, fo))
            else:
                for n in self.vertices:
                    for fi in self.widths:
                        for fo in self.widths:
                            pts.append(Point(op, n, 0, fi, fo))
        return pts


def _log_levels(lo: float, hi: float, k: int, integer: bool = True) -> list:
    """k log-spaced values from lo to hi (both included; one value if lo == hi), deduplicated."""
    lo, hi = float(lo), float(hi)
    if lo <= 0 or hi <= 0:
        raise ConfigError(f"log-spaced levels need positive bounds, got {lo} and {hi}")
    if hi < lo:
        lo, hi = hi, lo
    vals = [lo] if (k <= 1 or hi == lo) else list(np.geomspace(lo, hi, k))
    if integer:
        return sorted({int(round(v)) for v in vals})
    return sorted({round(float(v), 6) for v in vals})


def build_grid(shapes: Sequence[tuple[int, int]], widths: Iterable[int], *, vertex_levels: int = 5,
               degree_levels: int = 3, width_levels: int = 4, operators: Sequence[str] = OPERATORS,
               margin: float = 1.0) -> Grid:
    """A log-spaced grid that spans the given dataset shapes and feature widths.

    shapes: (N, nnz) per snapshot or per dataset, with nnz the edges of ``Â`` (edges + self-loops;
    a smaller nnz is raised to N). widths: every feature/hidden width the models use. The grid's
    vertex levels run from the smallest to the largest N (widened by ``margin`` on both sides, so a
    margin of 1.5 covers N/1.5 .. 1.5 N), its degree levels from the smallest to the largest nnz/N,
    its width levels from the smallest to the largest width. Spanning the data is what matters for a
    linear model used for interpolation; the levels in between are log-spaced because costs vary
    over orders of magnitude.
    """
    shapes = [(int(n), int(e)) for n, e in shapes]
    widths = [int(w) for w in widths]
    if not shapes or any(n <= 0 for n, _ in shapes):
        raise ConfigError(f"build_grid needs at least one (N, nnz) shape with N > 0, got {shapes}")
    if not widths or any(w <= 0 for w in widths):
        raise ConfigError(f"build_grid needs positive feature widths, got {widths}")
    ns = [n for n, _ in shapes]
    degs = [max(e, n) / n for n, e in shapes]
    m = max(float(margin), 1.0)
    return Grid(vertices=_log_levels(max(min(ns) / m, 1), max(ns) * m, vertex_levels),
                degrees=_log_levels(max(min(degs) / m, 1.0), max(degs) * m, degree_levels, integer=False),
                widths=_log_levels(min(widths), max(widths), width_levels),
                operators=tuple(operators))


def quick_grid() -> Grid:
    """A tiny grid for tests: every operator, both directions, a few seconds on one CPU core."""
    return Grid(vertices=[64, 512], degrees=[2.0, 8.0], widths=[4, 16])


def medium_grid() -> Grid:
    """The benchmark's grid: shapes of small real datasets (10^3-3·10^4 vertices, degree 2-32,
    widths 8-64): 272 shapes, about a minute on one CPU core."""
    return Grid(vertices=[1000, 3000, 10000, 30000], degrees=[2.0, 6.0, 16.0, 32.0], widths=[8, 16, 32, 64])


# ----------------------------------------------------------------------------------------- inputs


def random_adjacency(num_nodes: int, nnz: int, seed: int = 0) -> Adjacency:
    """``Â`` of a uniform random graph whose nnz (edges + N self-loops) is ``nnz`` (CPU).

    Edges are drawn as unique keys ``row * N + col`` (off-diagonal, no duplicates) in at most a few
    vectorised rounds of numpy sampling: fast for any sparse nnz.
    """
    n = int(num_nodes)
    target = int(min(max(int(nnz) - n, 0), n * (n - 1)))
    rng = np.random.default_rng(seed)
    keys = np.zeros(0, np.int64)
    if target > n * (n - 1) // 2:  # dense: choose among all off-diagonal keys
        allk = np.arange(n * n, dtype=np.int64)
        allk = allk[allk // n != allk % n]
        keys = np.sort(rng.choice(allk, size=target, replace=False))
    else:
        while keys.shape[0] < target:
            need = target - keys.shape[0]
            cand = rng.integers(0, n * n, int(need * 1.1) + 16, dtype=np.int64)
            cand = cand[cand // n != cand % n]
            keys = np.unique(np.concatenate([keys, cand]))
        if keys.shape[0] > target:
            keys = np.sort(rng.choice(keys, size=target, replace=False))
    return normalize(keys // n, keys % n, None, n)


# ----------------------------------------------------------------------------------------- timing


class _Timer:
    """Times ``number`` calls of a function: perf_counter on CPU, CUDA events on GPU."""

    def __init__(self, device: torch.device):
        self.cuda = device.type == "cuda"

    def sync(self) -> None:
        if self.cuda:
            torch.cuda.synchronize()

    def __call__(self, fn: Callable[[], object], number: int, before: Callable[[], object] | None = None) -> float:
        """Mean seconds per call over ``number`` back-to-back calls; with ``before``, ``number``
        calls each timed alone after an untimed ``before()`` (a cache eviction)."""
        if before is not None:
            total = 0.0
            for _ in range(number):
                before()
                total += self(fn, 1)
            return total / number
        if self.cuda:
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            torch.cuda.synchronize()
            start.record()
            for _ in range(number):
                fn()
            end.record()
            torch.cuda.synchronize()
            return start.elapsed_time(end) / 1000.0 / number
        t0 = time.perf_counter()
        for _ in range(number):
            fn()
        return (time.perf_counter() - t0) / number


def measure(fn: Callable[[], object], timer: _Timer, *, warmup: int = 2, repeats: int = 7,
            min_sample_s: float = 2e-3, max_number: int = 1000,
            before: Callable[[], object] | None = None) -> tuple[float, float, int]:
    """(median seconds per call, min seconds per call, calls per sample) of ``fn``.

    After ``warmup`` calls, the fastest of three single calls estimates the cost and sets ``number``
    so that a sample lasts about ``min_sample_s``; then ``repeats`` samples are taken. ``before``:
    run untimed before every timed call (an :class:`Evictor`: cache-cold timing); each sample is
    then one call (an eviction costs more than the calls it would be averaged over).
    """
    for _ in range(max(warmup, 0)):
        fn()
    timer.sync()
    if before is not None:
        samples = [timer(fn, 1, before) for _ in range(max(repeats, 1))]
        return statistics.median(samples), min(samples), 1
    est = min(timer(fn, 1) for _ in range(3))  # min: one preempted call must not set number = 1
    number = int(min(max_number, max(1, math.ceil(min_sample_s / max(est, 1e-9)))))
    samples = [timer(fn, number) for _ in range(max(repeats, 1))]
    return statistics.median(samples), min(samples), number


class Evictor:
    """Evicts the device's caches by writing a buffer of ``nbytes`` (default :data:`COLD_BYTES`, or
    twice a GPU's L2 where that is larger), for cache-cold timing (:data:`COLD_OPERATORS`)."""

    def __init__(self, device: torch.device, nbytes: int | None = None):
        if nbytes is None:
            nbytes = COLD_BYTES
            if device.type == "cuda":
                l2 = getattr(torch.cuda.get_device_properties(device), "L2_cache_size", 0)
                nbytes = max(nbytes, 2 * int(l2))
        self.buffer = torch.zeros(max(int(nbytes) // 4, 1), device=device)

    def __call__(self) -> None:
        self.buffer.add_(1.0)


def _seed(pt: Point, base: int) -> int:
    """A per-point seed, stable across processes (``hash`` of a str is salted per process)."""
    return zlib.crc32(f"{base}:{pt.operator}:{pt.N}:{pt.nnz}:{pt.in_width}:{pt.out_width}".encode()) & 0x7FFFFFFF


def _operator_calls(pt: Point, device: torch.device, seed: int) -> tuple[Callable, Callable, int]:
    """(forward call, backward call, actual nnz) for one point; the backward call differentiates
    one saved forward output w.r.t. its inputs and parameters, with ``retain_graph`` for repeats."""
    gen = torch.Generator().manual_seed(seed)

    def rand(*shape):
        return torch.randn(*shape, generator=gen).to(device)

    nnz = 0
    if pt.operator == "graph_op":
        adj = random_adjacency(pt.N, pt.nnz, seed).to(device)
        nnz = adj.num_edges
        x = rand(pt.N, pt.in_width).requires_grad_(True)
        fwd = lambda: aggregate(adj, x)  # noqa: E731
        inputs: list[torch.Tensor] = [x]
    elif pt.operator == "nn_op":
        x = rand(pt.N, pt.in_width).requires_grad_(True)
        w = (rand(pt.in_width, pt.out_width) / math.sqrt(pt.in_width)).requires_grad_(True)
        fwd = lambda: x @ w  # noqa: E731
        inputs = [x, w]
    elif pt.operator in ("gru", "lstm"):
        torch.manual_seed(seed)
        cell = (torch.nn.GRUCell if pt.operator == "gru" else torch.nn.LSTMCell)(pt.in_width, pt.out_width).to(device)
        x = rand(pt.N, pt.in_width).requires_grad_(True)
        h = rand(pt.N, pt.out_width).requires_grad_(True)
        if pt.operator == "gru":
            fwd = lambda: cell(x, h)  # noqa: E731
            inputs = [x, h, *cell.parameters()]
        else:
            c = rand(pt.N, pt.out_width).requires_grad_(True)
            fwd = lambda: cell(x, (h, c))  # noqa: E731  (returns (h', c'); both get an output gradient)
            inputs = [x, h, c, *cell.parameters()]
    elif pt.operator == "evolve":
        torch.manual_seed(seed)
        cell = torch.nn.GRUCell(pt.out_width, pt.out_width).to(device)
        w = rand(pt.in_width, pt.out_width).requires_grad_(True)
        fwd = lambda: cell(w, w)  # noqa: E731  (EvolveGCN-O: W_t = GRU(W_{t-1}, W_{t-1}))
        inputs = [w, *cell.parameters()]
    elif pt.operator == "elementwise":
        a = rand(pt.N, pt.in_width).requires_grad_(True)
        b = rand(pt.N, pt.in_width).requires_grad_(True)
        fwd = lambda: a * b  # noqa: E731
        inputs = [a, b]
    elif pt.operator in ("sigmoid", "tanh"):
        a = rand(pt.N, pt.in_width).requires_grad_(True)
        act = torch.sigmoid if pt.operator == "sigmoid" else torch.tanh
        fwd = lambda: act(a)  # noqa: E731
        inputs = [a]
    else:
        raise ConfigError(f"unknown operator {pt.operator!r}; known: {', '.join(OPERATORS)}")

    out = fwd()
    outs = list(out) if isinstance(out, tuple) else [out]
    grads = [torch.randn(o.shape, generator=gen).to(device) for o in outs]

    def bwd():
        return torch.autograd.grad(outs, inputs, grads, retain_graph=True)

    return fwd, bwd, nnz


def resolve_device(device: str | torch.device) -> torch.device:
    """``"cpu"``, ``"cuda"`` or ``"cuda:k"`` as a torch device; a clear error if CUDA is absent."""
    dev = torch.device(device)
    if dev.type == "cuda" and not torch.cuda.is_available():
        raise ConfigError(f"profile device {str(device)!r} asked for, but torch sees no CUDA device "
                          f"(torch {torch.__version__}); use device 'cpu'")
    if dev.type not in ("cpu", "cuda"):
        raise ConfigError(f"profile device must be 'cpu' or 'cuda', got {str(device)!r}")
    return dev


def device_label(device: torch.device) -> str:
    """The device name stored in the table and the predictor: ``cpu`` or ``cuda``."""
    return device.type


def profile_operators(grid: Grid | Sequence[Point], device: str | torch.device = "cpu", *, warmup: int = 2,
                      repeats: int = 7, min_sample_s: float = 2e-3, seed: int = 0, progress: bool = True,
                      threads: int | None = None) -> pd.DataFrame:
    """Time every point of ``grid`` forward and backward on ``device``; one row per (point, direction).

    Returns a DataFrame with columns :data:`COLUMNS`: the key (operator, direction, device, N, nnz,
    in_width, out_width), ``median_s`` and ``min_s`` (seconds per call), ``repeats`` (samples),
    ``number`` (calls per sample) and ``threads`` (torch intra-op threads; CPU timings depend on it).
    ``threads`` sets ``torch.set_num_threads`` for the run and restores it afterwards.
    """
    from tqdm.auto import tqdm

    from dynagnn.allocator import keep_freed_heap

    keep_freed_heap()  # timed under the allocator training runs under
    dev = resolve_device(device)
    points = grid.points() if isinstance(grid, Grid) else list(grid)
    label = device_label(dev)
    old_threads = torch.get_num_threads()
    if threads is not None:
        torch.set_num_threads(int(threads))
    rows = []
    log.info("profiling %d points x 2 directions on %s (%d threads, warmup %d, repeats %d)",
             len(points), dev, torch.get_num_threads(), warmup, repeats)
    t_start = time.perf_counter()
    timer = _Timer(dev)
    evict = Evictor(dev) if any(p.operator in COLD_OPERATORS for p in points) else None
    try:
        if points:
            # the first operator of a process runs cold (allocator, thread pool, lazy kernels): measured
            # at 6x its later time, it skewed the fit; one untimed pass of the first point absorbs it
            fwd, bwd, _ = _operator_calls(points[0], dev, _seed(points[0], seed))
            for fn in (fwd, bwd):
                measure(fn, timer, warmup=warmup, repeats=1, min_sample_s=min_sample_s)
            del fwd, bwd
        for pt in tqdm(points, desc=f"profile {label}", unit="shape", disable=not progress):
            fwd, bwd, nnz = _operator_calls(pt, dev, _seed(pt, seed))
            cold = pt.operator in COLD_OPERATORS
            # forward runs with autograd recording on, as in training (the graph is then dropped)
            for direction, fn in (("forward", fwd), ("backward", bwd)):
                med, mn, number = measure(fn, timer, warmup=warmup, repeats=repeats, min_sample_s=min_sample_s,
                                          before=evict if cold else None)
                rows.append({"operator": pt.operator, "direction": direction, "device": label, "N": int(pt.N),
                             "nnz": int(nnz), "in_width": int(pt.in_width), "out_width": int(pt.out_width),
                             "median_s": float(med), "min_s": float(mn), "repeats": int(repeats),
                             "number": int(number), "threads": int(torch.get_num_threads()), "cold": cold})
            del fwd, bwd
    finally:
        torch.set_num_threads(old_threads)
    log.info("profiled %d rows in %.1f s", len(rows), time.perf_counter() - t_start)
    df = pd.DataFrame(rows, columns=COLUMNS)
    return df


def write_profile(df: pd.DataFrame, out: str | Path) -> Path:
    """Write a profile table as Parquet, atomically."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    table = pa.Table.from_pandas(df, preserve_index=False)
    meta = {**(table.schema.metadata or {}), b"dynagnn.torch": torch.__version__.encode()}
    table = table.replace_schema_metadata(meta)
    return write_atomic(out, lambda tmp: pq.write_table(table, tmp))


def read_profile(path: str | Path) -> pd.DataFrame:
    """Read a profile table, checking that it has the columns a fit needs."""
    path = Path(path)
    if not path.exists():
        raise CostError(f"{path}: profile table not found (run the profile stage first)")
    df = pd.read_parquet(path)
    missing = [c for c in KEY_COLUMNS + ["median_s"] if c not in df.columns]
    if missing:
        raise CostError(f"{path}: not a profile table, columns {missing} are missing")
    return df
