"""Seeded generators of dynamic graphs, for experiments at sizes no public source offers.

Three families, each returning a :class:`~dynagnn.data.types.RawGraph` of T ready snapshots:

- :func:`blad_style`: BLAD's recipe (SC'23, Section 7.1): a large static graph (power-law or
  stochastic block model) made into snapshots by deleting edges at random so that the per-snapshot
  edge counts follow AS-733's trend (rising, with sharp dips), hence strongly varying loads.
- :func:`esdg_random`: ESDG's independent uniformly random snapshots (Erdős–Rényi G(n, m)).
- :func:`churn`: a power-law graph whose edges are replaced at a fixed rate per step, the ~10%
  change between adjacent snapshots that PiPAD measured on real data.

and one static graph for sampled training (BGL): :func:`bgl_classes`, power-law degrees with
communities, node features and labels that the neighbourhood predicts.

Every snapshot holds unique undirected pairs stored once as ``(min, max)``, without self-loops,
sorted by ``(row, col)``; the pipeline symmetrises undirected graphs later. Pairs are handled as
int64 keys ``row * N + col`` (so N stays below 2**31), which sort in (row, col) order. The same
arguments give bit-identical output: all randomness comes from ``np.random.default_rng(seed)``.

This module holds the generators' recipes (what graph, which snapshots), the AS-733 trend and the
thinning into snapshots, and the checks of every parameter (each error names the parameter and
what was expected). How distinct random pairs are drawn from a degree or block model is in
:mod:`dynagnn.data.pair_sampling`, which knows nothing of snapshots or parameters. Used by the
ingest stage (:func:`dynagnn.data.ingest.load_raw`: a config dataset of ``format: synthetic``
calls :func:`generate`), by the tests and by the benchmarks; it sits in ``data`` because it
produces the same RawGraph a source reader does.
"""

from __future__ import annotations

import inspect
import math
import numbers
from typing import Callable

import numpy as np

from dynagnn.data.pair_sampling import (
    PairModel, decode_keys, powerlaw_model, powerlaw_weights, replace_edges, sample_keys, sbm_model,
    uniform_model,
)
from dynagnn.data.types import RawGraph, SnapshotList
from dynagnn.errors import ConfigError

_MAX_NODES = 2**31 - 1          # keys row * N + col must fit in int64


# --------------------------------------------------------------------------------------------
# Public generators
# --------------------------------------------------------------------------------------------

def blad_style(num_nodes: int, num_edges: int, num_snapshots: int, *, graph: str = "powerlaw",
               trend=None, min_fraction: float = 0.15, blocks: int = 8, p_in_ratio: float = 20.0,
               exponent: float = 2.3, deletion: float = 0.05, seed: int = 0) -> RawGraph:
    """BLAD-style dynamic graph: a static graph thinned into snapshots that follow a trend.

    Static graph (exactly ``num_edges`` unique pairs):

    - ``graph="powerlaw"``: Chung-Lu; expected degrees follow a power law of ``exponent``
      (see :func:`~dynagnn.data.pair_sampling.powerlaw_model`), hubs get random ids.
    - ``graph="sbm"``: stochastic block model with ``blocks`` equal blocks, a within-block pair
      ``p_in_ratio`` times as likely as a between-block pair; the block of each node is returned
      as ``node_labels`` (int64 [N]).

    Snapshots (the trend/deletion model): every static edge e gets a birth rank
    ``u_e ~ U(0, 1)`` once; snapshot t keeps e iff ``u_e < trend[t] / (1 - d_t)`` and e survives
    an independent per-snapshot deletion of probability ``d_t = min(deletion, 1 - trend[t])``.
    The expected edge count is then exactly ``trend[t] * num_edges``. The shared rank makes
    snapshots nested along the trend (a rise adds the next-ranked edges, a dip removes the
    last-ranked ones and they come back after it), so neighbours overlap strongly; the
    per-snapshot deletion adds the day-to-day churn of real snapshots (about ``2 * deletion`` of
    the edges differ between neighbours at equal counts; none at ``trend == 1``, which is the
    whole static graph). ``trend`` (float [T] in (0, 1]) defaults to :func:`as733_trend`.
    The static graph, the trend and the thinning draw from separate streams spawned from ``seed``,
    so giving a trend or changing ``deletion`` leaves the static graph as it was.

    Returns a RawGraph with T snapshots, ``times = arange(T)``, undirected, ``time_unit="index"``.
    """
    n = _check_int("num_nodes", num_nodes, 2, _MAX_NODES)
    m = _check_edges("num_edges", num_edges, n)
    t = _check_int("num_snapshots", num_snapshots, 1)
    _check_choice("graph", graph, ("powerlaw", "sbm"))
    min_fraction = _check_float("min_fraction", min_fraction, 0.0, 1.0, lo_open=True)
    deletion = _check_float("deletion", deletion, 0.0, 1.0, hi_open=True)
    if trend is not None:
        trend = _check_trend(trend, t)
    _check_seed(seed)
    rng_graph, rng_trend, rng_thin = np.random.default_rng(seed).spawn(3)

    labels = None
    if graph == "powerlaw":
        model = powerlaw_model(n, m, _check_exponent(exponent), rng_graph)
    else:
        b = _check_int("blocks", blocks, 1, n)
        ratio = _check_float("p_in_ratio", p_in_ratio, 0.0, math.inf, lo_open=True, hi_open=True)
        model, labels = sbm_model(n, b, ratio, rng_graph)
    keys = sample_keys(model, m, n, rng_graph)

    if trend is None:
        trend = _as733_trend(t, min_fraction, rng_trend)
    rows, cols = _thin_by_trend(keys, n, trend, deletion, rng_thin)
    return _raw_graph(f"blad-{graph}", n, rows, cols, labels)


def as733_trend(num_snapshots: int, *, min_fraction: float = 0.15, seed: int = 0) -> np.ndarray:
    """The default edge-count trend of :func:`blad_style`: float64 [T], values in (0, 1].

    Imitates AS-733's daily snapshots: a linear rise from ``min_fraction`` to 1 (the AS graph grew
    steadily), multiplied by 3% Gaussian day-to-day noise, with ``max(1, round(T / 10))`` sharp
    dips (for T >= 4) at random interior days down to 20-50% of ``min_fraction`` (AS-733 has days
    of failed collection with a fraction of the usual edges). The dips and the ramp make the
    active-vertex count vary several-fold between snapshots, as BLAD reports (up to 6.95x).
    """
    t = _check_int("num_snapshots", num_snapshots, 1)
    min_fraction = _check_float("min_fraction", min_fraction, 0.0, 1.0, lo_open=True)
    _check_seed(seed)
    return _as733_trend(t, min_fraction, np.random.default_rng(seed))


def esdg_random(num_nodes: int, num_snapshots: int, avg_degree: float, *, seed: int = 0) -> RawGraph:
    """ESDG-style snapshots: T independent Erdős–Rényi G(n, m) graphs, ``m = round(N * avg_degree / 2)``.

    Each snapshot holds exactly m unique pairs drawn uniformly among all N(N-1)/2 (vectorised
    draws, self-loops and repeats rejected, the surplus of the last round dropped at random).
    """
    n = _check_int("num_nodes", num_nodes, 2, _MAX_NODES)
    t = _check_int("num_snapshots", num_snapshots, 1)
    deg = _check_float("avg_degree", avg_degree, 0.0, math.inf, lo_open=True, hi_open=True)
    m = int(round(n * deg / 2))
    if m < 1:
        raise ConfigError(f"avg_degree={avg_degree!r} gives no edge for num_nodes={n}; "
                          "expected avg_degree >= 1 / num_nodes")
    _check_edges("avg_degree", m, n, what=f"avg_degree={avg_degree!r} gives {m} edges, which")
    _check_seed(seed)
    rng = np.random.default_rng(seed)
    model = uniform_model(n)
    rows, cols = [], []
    for _ in range(t):
        r, c = decode_keys(sample_keys(model, m, n, rng), n)
        rows.append(r)
        cols.append(c)
    return _raw_graph("esdg", n, rows, cols)


def churn(num_nodes: int, num_edges: int, num_snapshots: int, *, change: float = 0.10,
          exponent: float = 2.3, seed: int = 0) -> RawGraph:
    """A power-law graph whose edges are replaced at a fixed rate between snapshots.

    Snapshot 0 is a Chung-Lu graph of exactly ``num_edges`` pairs (as in :func:`blad_style`).
    Each step removes ``r = round(change * num_edges / 2)`` current edges chosen uniformly and adds
    r pairs absent from the current snapshot, drawn from the same Chung-Lu model (so the degree
    distribution stays stationary: removal is proportional to degree, and so is addition).
    Hence every snapshot has ``num_edges`` edges and, exactly,
    ``|E_t Δ E_{t+1}| / |E_t| = 2r / num_edges ≈ change`` (PiPAD measured ~10% on real data).
    """
    n = _check_int("num_nodes", num_nodes, 2, _MAX_NODES)
    m = _check_edges("num_edges", num_edges, n)
    t = _check_int("num_snapshots", num_snapshots, 1)
    change = _check_float("change", change, 0.0, 1.0)
    r = int(round(change * m / 2))
    free = n * (n - 1) // 2 - m
    if r > free:
        raise ConfigError(f"change={change!r} needs {r} new pairs per step but only {free} pairs "
                          f"are absent from a graph of num_edges={m} on num_nodes={n}")
    _check_seed(seed)
    rng = np.random.default_rng(seed)
    model = powerlaw_model(n, m, _check_exponent(exponent), rng)
    keys = sample_keys(model, m, n, rng)
    rows, cols = [], []
    for step in range(t):
        if step:
            keys = replace_edges(keys, r, model, n, rng)
        rc = decode_keys(keys, n)
        rows.append(rc[0])
        cols.append(rc[1])
    return _raw_graph("churn", n, rows, cols)


def bgl_classes(num_nodes: int, num_edges: int, *, feature_dim: int = 128, classes: int = 16,
                within: float = 0.8, exponent: float = 2.3, signal: float = 0.05,
                local: float = 0.0, window: int = 1000, contiguous: bool = False, seed: int = 0) -> RawGraph:
    """A static power-law graph with communities, node features and labels: sampled training at
    the scale BGL studies (NSDI'23, Table 2: Ogbn-products, 2.4M vertices, width 100, 47 classes).

    - Vertices belong to ``classes`` equal communities. The graph is drawn with community c on ids
      ``[c N / K, (c+1) N / K)``, then relabelled by a seeded random permutation, as real graphs'
      ids say nothing of their communities (a BFS over neighbour lists sorted by id would otherwise
      meet a community's vertices in runs, and a chunk of feature rows would hold one community).
      ``contiguous=True`` keeps the drawn ids (community by community, as a graph store lays rows
      out by partition).
    - Degrees follow a power law of ``exponent`` (the Chung-Lu weights of :func:`blad_style`, hubs
      at random ids, capped near 4 sqrt(2m)). An edge draws u by weight; v is drawn by weight inside
      u's community with probability ``within``, else over all vertices. Exactly ``num_edges``
      distinct undirected pairs, no self-loops.
    - Locality (``local`` > 0): a share ``local`` of the edges instead draws v by weight among the
      ids of u's community within ``window`` of u (on the drawn ids, before the relabelling). A
      community of 125,000 vertices says little about who meets whom two hops away: with
      ``local = 0`` a BFS order gives consecutive batches no more common neighbours than a random
      one. Real graphs (OGB products, papers) are locally dense at every scale; the window makes
      neighbourhoods overlap along the drawn ids, so the vertices a BFS reaches together share
      their neighbours, which BGL's proximity order turns into FIFO hits. ``local = 0`` (the
      default) draws exactly the graph it drew before the option existed.
    - Label of v: its community (int64 [N]). Features float32 [N, F]: ``signal * mu_c + noise``,
      ``mu_c`` a random unit-variance centre per class, noise N(0, 1): one vertex's own row says
      little about its class, the mean over its neighbourhood (mostly of its community) much more,
      so a GNN has something to learn that a per-vertex model does not (at the default ``signal``,
      100k vertices, mean degree 20: nearest class centre 16% right on a vertex's own row, 50% on
      its neighbours' mean, 95% on the two-hop mean; 16 classes).

    One snapshot (time 0), undirected, ``node_labels`` and ``node_features`` set.
    """
    n = _check_int("num_nodes", num_nodes, 2, _MAX_NODES)
    m = _check_edges("num_edges", num_edges, n)
    f = _check_int("feature_dim", feature_dim, 1)
    k = _check_int("classes", classes, 2, n)
    within = _check_float("within", within, 0.0, 1.0)
    local = _check_float("local", local, 0.0, 1.0)
    window = _check_int("window", window, 1)
    signal = _check_float("signal", signal, 0.0, math.inf, hi_open=True)
    _check_seed(seed)
    if not isinstance(contiguous, bool):
        raise ConfigError(f"contiguous must be true or false, got {contiguous!r}")
    rng_graph, rng_feat, rng_ids = np.random.default_rng(seed).spawn(3)
    _, _, _, weight = powerlaw_weights(n, m, _check_exponent(exponent), rng_graph)
    community = (np.arange(n, dtype=np.int64) * k) // n
    start = np.searchsorted(community, np.arange(k + 1))       # community c: ids start[c]:start[c+1]
    cum = np.concatenate([[0.0], np.cumsum(weight)])

    def pick(lo, hi, rng):   # ids drawn by weight among [lo, hi) (arrays of bounds)
        ids = np.searchsorted(cum, cum[lo] + rng.random(lo.size) * (cum[hi] - cum[lo]), side="right") - 1
        return np.clip(ids, lo, hi - 1)

    def draw(count, rng):
        zeros, alls = np.zeros(count, np.int64), np.full(count, n, np.int64)
        u = pick(zeros, alls, rng)
        inside = rng.random(count) < within
        c = community[u]
        lo, hi = np.where(inside, start[c], 0), np.where(inside, start[c + 1], n)
        if local:   # drawn only then: local = 0 keeps the generator's former random stream
            near = rng.random(count) < local
            lo = np.where(near, near_lo(u), lo)
            hi = np.where(near, near_hi(u), hi)
        return u, pick(lo, hi, rng)

    def near_lo(u):
        return np.maximum(start[community[u]], u - window)

    def near_hi(u):
        return np.minimum(start[community[u] + 1], u + window + 1)

    def pair_weight(u, v):   # only where pairs are enumerated (dense graphs): the draw's mixture
        same = community[u] == community[v]
        wc = cum[start[community[u] + 1]] - cum[start[community[u]]]
        far = within * same / wc + (1 - within) / cum[-1]
        if not local:
            return weight[u] * weight[v] * far
        near = same & (np.abs(u - v) <= window)
        win = 0.5 * (1 / (cum[near_hi(u)] - cum[near_lo(u)]) + 1 / (cum[near_hi(v)] - cum[near_lo(v)]))
        return weight[u] * weight[v] * ((1 - local) * far + local * near * win)

    keys = sample_keys(PairModel(draw, pair_weight), m, n, rng_graph)
    centres = rng_feat.standard_normal((k, f)).astype(np.float32)
    x = rng_feat.standard_normal((n, f), dtype=np.float32)   # i.i.d. rows: their order is free
    row, col = decode_keys(keys, n)
    if contiguous:
        for c in range(k):   # in place, one community at a time: no second [N, F] temporary
            x[start[c]:start[c + 1]] += np.float32(signal) * centres[c]
    else:
        new_id = rng_ids.permutation(n).astype(np.int64)
        a, b = new_id[row], new_id[col]
        keys = np.sort(np.minimum(a, b) * n + np.maximum(a, b))
        del a, b
        row, col = decode_keys(keys, n)
        label = np.empty(n, dtype=np.int64)
        label[new_id] = community
        community = label
        for c in range(k):
            ids = np.flatnonzero(community == c)
            x[ids] += np.float32(signal) * centres[c]
    raw = _raw_graph("bgl-classes", n, [row], [col], community)
    raw.node_features = x
    return raw


GENERATORS: dict[str, Callable[..., RawGraph]] = {
    "blad": blad_style,
    "esdg": esdg_random,
    "churn": churn,
    "bgl": bgl_classes,
}


def generate(name: str, **params) -> RawGraph:
    """Run the generator registered as ``name`` (a key of :data:`GENERATORS`) with ``params``.

    Raises ConfigError for an unknown name (listing the known ones), for parameters the generator
    does not take or lacks, and for bad values (naming the parameter).
    """
    if name not in GENERATORS:
        raise ConfigError(f"unknown synthetic generator {name!r}; known: {', '.join(sorted(GENERATORS))}")
    fn = GENERATORS[name]
    try:
        inspect.signature(fn).bind(**params)
    except TypeError as exc:
        raise ConfigError(f"synthetic generator {name!r}: {exc}") from None
    return fn(**params)


# --------------------------------------------------------------------------------------------
# Trend and thinning
# --------------------------------------------------------------------------------------------

def _as733_trend(t: int, min_fraction: float, rng: np.random.Generator) -> np.ndarray:
    """See :func:`as733_trend`; float64 [t] in (0, 1]."""
    if t == 1:
        return np.ones(1)
    trend = np.linspace(min_fraction, 1.0, t) * (1.0 + 0.03 * rng.standard_normal(t))
    if t >= 4:
        n_dips = max(1, round(t / 10))
        days = rng.choice(np.arange(1, t - 1), n_dips, replace=False)
        trend[days] = min_fraction * rng.uniform(0.2, 0.5, n_dips)
    return np.clip(trend, 1e-6, 1.0)


def _thin_by_trend(keys: np.ndarray, n: int, trend: np.ndarray, deletion: float,
                   rng: np.random.Generator) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """Snapshots of the static graph ``keys`` (sorted int64 [m]) following ``trend`` (float [T]).

    Edge e is in snapshot t iff rank_e < trend[t] / (1 - d_t) and it survives deletion d_t =
    min(deletion, 1 - trend[t]); see :func:`blad_style`. Boolean masks over the sorted static
    edges keep every snapshot sorted without a sort. Returns rows, cols: T arrays of int64.
    """
    row, col = decode_keys(keys, n)
    rank = rng.random(keys.size, dtype=np.float32)
    rows, cols = [], []
    for frac in trend:
        d = min(deletion, 1.0 - float(frac))
        keep = rank < np.float32(frac / (1.0 - d))
        if d > 0:
            keep &= rng.random(keys.size, dtype=np.float32) >= np.float32(d)
        rows.append(row[keep])
        cols.append(col[keep])
    return rows, cols


def _raw_graph(name: str, n: int, rows: list[np.ndarray], cols: list[np.ndarray],
               node_labels: np.ndarray | None = None) -> RawGraph:
    """Wrap T snapshots into an undirected RawGraph with index times and identity node ids."""
    snapshots = SnapshotList(rows=rows, cols=cols, weights=None,
                             times=np.arange(len(rows), dtype=np.int64))
    return RawGraph(num_nodes=n, node_ids=np.arange(n, dtype=np.int64), snapshots=snapshots,
                    node_labels=node_labels, time_unit="index", directed=False, sources=[],
                    name=name)


# --------------------------------------------------------------------------------------------
# Parameter checks: each names the parameter and what was expected
# --------------------------------------------------------------------------------------------

def _check_int(name: str, value, lo: int, hi: int | None = None) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise ConfigError(f"{name} must be an integer, got {value!r}")
    value = int(value)
    if value < lo or (hi is not None and value > hi):
        bound = f">= {lo}" if hi is None else f"in [{lo}, {hi}]"
        raise ConfigError(f"{name} must be {bound}, got {value}")
    return value


def _check_float(name: str, value, lo: float, hi: float, *, lo_open: bool = False,
                 hi_open: bool = False) -> float:
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise ConfigError(f"{name} must be a number, got {value!r}")
    value = float(value)
    ok = (value > lo if lo_open else value >= lo) and (value < hi if hi_open else value <= hi)
    if not ok or math.isnan(value):
        interval = f"{'(' if lo_open else '['}{lo}, {hi}{')' if hi_open else ']'}"
        raise ConfigError(f"{name} must be in {interval}, got {value}")
    return value


def _check_edges(name: str, value, n: int, what: str | None = None) -> int:
    m = _check_int(name, value, 1)
    pairs = n * (n - 1) // 2
    if m > pairs:
        what = what or f"{name}={m}"
        raise ConfigError(f"{what} exceeds the {pairs} undirected pairs of num_nodes={n}")
    return m


def _check_exponent(value) -> float:
    return _check_float("exponent", value, 2.0, math.inf, lo_open=True, hi_open=True)


def _check_choice(name: str, value, choices: tuple[str, ...]) -> None:
    if value not in choices:
        raise ConfigError(f"{name} must be one of {', '.join(choices)}; got {value!r}")


def _check_trend(trend, t: int) -> np.ndarray:
    arr = np.asarray(trend, dtype=np.float64) if _is_numeric(trend) else None
    if arr is None or arr.ndim != 1 or arr.shape[0] != t:
        raise ConfigError(f"trend must be a list of num_snapshots={t} fractions, got "
                          f"{'shape ' + str(arr.shape) if arr is not None else repr(trend)}")
    if not np.all((arr > 0) & (arr <= 1)):
        raise ConfigError(f"trend values must be in (0, 1], got min {arr.min()} max {arr.max()}")
    return arr


def _is_numeric(x) -> bool:
    try:
        np.asarray(x, dtype=np.float64)
    except (TypeError, ValueError):
        return False
    return True


def _check_seed(seed) -> None:
    _check_int("seed", seed, 0)
