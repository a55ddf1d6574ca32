r"""Communication volume of each way to spread dynamic-GNN training over P workers: closed forms,
and the same quantity counted by enumeration on a real partition.

Every ``*_volume`` function is a closed form; every ``count_*`` function enumerates what is sent
(per snapshot, vertex, chunk or batch occurrence) on an actual partition, without using the closed
form, so that tests and the ``volume`` table can hold one against the other. Convention: a volume
is what crosses the network, each element counted **once, at its sender** (a worker's data for
itself costs nothing). A :class:`Volume` carries ``units`` (rows: feature vectors, N&M rows,
parameters, snapshots), the ``width`` of a unit in elements and the ``dtype_size`` of an element,
hence ``elements`` and ``bytes``.

Model (BLAD eq. 1, ESDG §2): L layers, each a GCN per snapshot (weights F_{l-1} x h + h) then an RNN
per vertex along time (``cell`` lstm: 4 gates, gru: 3; weights gates·(h·h + h·h + 2h)); layer 1
reads F input features, later layers h; T snapshots over N vertices; P workers.

* **Snapshot partitioning (ESDG §4.2).** Worker p owns a contiguous range of t_p snapshots
  (:func:`~dynagnn.splits.even_ranges`) and, for the RNN, a contiguous chunk of
  n_p vertices (:func:`~dynagnn.graph.partition.range_partition`). Redistribution 1 sends Y_t[V_q]
  from the owner of t to q, redistribution 2 sends Z_t[V_q] back; (t, v) moves unless both owners
  are the same worker, so one redistribution moves exactly ``T·N − Σ_p t_p·n_p`` rows
  (:func:`snapshot_redistribution_volume`). With q, r = divmod: Σ_p t_p n_p = P·q_T·q_N + q_T·r_N +
  q_N·r_T + min(r_T, r_N) (both splits make the first parts larger). ESDG's T·N·(P−1)/P is the
  special case P | T and P | N. Two redistributions per layer forward, two backward (gradients).
* **Vertex partitioning (ESDG §4.1, BLAD Table 3 "Vertex").** Per GCN layer and snapshot, v's row
  goes to every *other* worker holding a neighbour: Σ_t Σ_v λ_t(v) rows (connectivity − 1; the
  count is :func:`~dynagnn.graph.partition.snapshot_volume`), the same again backward (gradients
  of the remote rows return to their owners). BLAD writes ``T · prob · N_khop · F`` with prob the
  chance that a neighbour is remote. Made exact for a hash partition (a uniformly random
  permutation mod P, part sizes n_q): given parts[v] = p, the d distinct neighbours of v are d of
  the other N−1 vertices drawn without replacement, so part q ≠ p holds none of them with
  probability C(N−1−n_q, d)/C(N−1, d), and

      E[λ(v)] = Σ_q (1 − n_q/N) · (1 − C(N−1−n_q, d_v) / C(N−1, d_v))

  (:func:`vertex_volume_hash`; an *expectation* over the permutation, equal to the mean count over
  all N! permutations, tested so). BLAD's ``prob·N_khop`` counts every remote neighbour slot,
  (P−1)/P · Σ_t nnz_t, not the distinct (vertex, worker) pairs: an upper bound.
* **Parameter synchronisation.** A ring all-reduce of W parameters moves exactly 2(P−1)·W
  elements (:func:`ring_allreduce_volume`; counted chunk by chunk by :func:`count_ring_allreduce`).
  BLAD's Table 3 writes p·W. It also leaves the GNN parameters out of the snapshot row, which is
  wrong: ESDG replicates the GCN weights on every worker, so their gradients are all-reduced too;
  the only saving of the group scheme over the snapshot scheme is the features.
* **Snapshot-group partitioning (BLAD §5.1).** Worker p trains whole groups (snapshot S with its l
  predecessors) for its contiguous range of S (:func:`~dynagnn.splits.minmax_ranges`):
  no features cross workers during training; the input snapshots before a range's start must be
  replicated once: Σ_p min(l, t0_p) snapshots (:func:`group_halo_volume`).
* **Sven (TPDS §3.2 / HPDC §3.1.3), memory-based TGNN on M trainers.** A batch of bs events is
  split into M contiguous chunks, one per trainer; the node memory and messages (N&M) of v live on
  ``owner[v]``; d_msg = 2·d_mem + d_edge, a raw N&M row is w = d_msg + d_mem wide. Per trainer i:
  N1_i sampled occurrences (U1_i distinct), N2_i batch occurrences (U2_i distinct).

  - DepCache: full replicas; aggregation all-gathers every trainer's deduplicated updates to the
    M−1 others: (M−1)·Σ_i U2_i·w. Exact.
  - DepComm: dispatch sends the *updated* memory (d_mem) for every remote sampled occurrence, no
    dedup; aggregation sends each remote distinct updated vertex once: Σ_i ρ_i (N1_i·d_mem +
    U2_i·w).
  - Sven (redundancy-free): dispatch sends the raw N&M of each remote distinct sampled vertex once,
    aggregation as DepComm: Σ_i ρ_i (U1_i + U2_i)·w.

  ρ_i is the chance that a vertex is not owned by trainer i: 1 − n_i/N under a hash partition (so
  the Sven and DepComm models are expectations; conditioned on the partition the count is
  ``R``, the remote rows). The paper's formulas (J 7–9) carry 2(M−1)/M (DepCache 2(M−1)²/M): they
  count each element at sender and receiver; kept as ``paper_*`` for comparison.

  **The wrong condition (J 11 / C 11).** The paper claims C_Sven < C_DepComm whenever
  η1 > 2/3 − d_mem/d_edge. The aggregation terms are equal and cancel; what is left is
  (1 − η1)·(d_msg + d_mem) < d_mem, i.e. (1−η1)(3·d_mem + d_edge) < d_mem, i.e.

      η1 > (2·Π + 1) / (3·Π + 1),    Π = d_mem / d_edge      (η1 > 2/3 when d_edge = 0),

  always ≥ 2/3 (the paper's threshold is below 2/3 and even negative for Π > 2/3: with d_mem = 100,
  d_edge = 172 it says 0.085, the truth is 0.788). Conditioned on a partition the exact statement
  is the same with η1 replaced by the redundancy of the *remote* sampled occurrences,
  η1ʳ = 1 − R1u/R1o (R1u remote distinct, R1o remote occurrences); under a hash partition
  E[R1u]/E[R1o] = 1 − η1. :func:`sven_beats_depcomm` gives the corrected test,
  :func:`paper_sven_beats_depcomm` the printed one. The DepCache condition (J 10, M > τ + 2 with
  τ = U1/U2) is right under the paper's own factors; with the one-count convention and equal parts
  it reads M > τ + 1 (:func:`sven_beats_depcache`).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

import numpy as np
import pandas as pd

from ..errors import InputError
from ..graph import partition as gp
from ..splits import check_split, even_ranges, minmax_ranges
from ..sortedkeys import unique_sorted

log = logging.getLogger(__name__)

CELLS = {"lstm": 4, "gru": 3, "rnn": 1}


@dataclass(frozen=True)
class Volume:
    """``units`` rows of ``width`` elements of ``dtype_size`` bytes each."""

    units: float
    width: int = 1
    dtype_size: int = 4

    @property
    def elements(self) -> float:
        return self.units * self.width

    @property
    def bytes(self) -> float:
        return self.elements * self.dtype_size


# ----------------------------------------------------------------------------- shapes and checks

def gnn_params(features: int, hidden: int, layers: int) -> int:
    """GCN weights and biases of L layers: (F·h + h) + (L−1)·(h·h + h)."""
    _check_model(features, hidden, layers)
    return features * hidden + hidden + (layers - 1) * (hidden * hidden + hidden)


def rnn_params(hidden: int, layers: int, cell: str = "lstm") -> int:
    """Per-vertex RNN weights of L layers (PyTorch layout): L·gates·(h·h + h·h + 2h)."""
    _check_model(1, hidden, layers)
    if cell not in CELLS:
        raise InputError(f"unknown RNN cell {cell!r}: expected one of {sorted(CELLS)}")
    return layers * CELLS[cell] * (2 * hidden * hidden + 2 * hidden)


def layer_widths(features: int, hidden: int, layers: int) -> list[int]:
    """Width of the rows a vertex-partitioned GCN exchanges at each layer: F, then h."""
    _check_model(features, hidden, layers)
    return [features] + [hidden] * (layers - 1)


def _check_model(features, hidden, layers) -> None:
    if min(int(features), int(hidden), int(layers)) < 1:
        raise InputError(f"features, hidden width and layers must be >= 1, got {features}, {hidden}, {layers}")


# ----------------------------------------------------------------------------- snapshot partitioning (ESDG)

def snapshot_redistribution_volume(T: int, N: int, P: int, width: int = 1, dtype_size: int = 4) -> Volume:
    """Rows one ESDG redistribution (time -> vertex owners, or back) moves: T·N − Σ_p t_p·n_p, exact."""
    T, P = check_split(T, P)
    N, P = gp.check_parts(N, P)
    qt, rt = divmod(T, P)
    qn, rn = divmod(N, P)
    local = P * qt * qn + qt * rn + qn * rt + min(rt, rn)
    return Volume(T * N - local, width, dtype_size)


def esdg_paper_volume(T: int, N: int, P: int) -> float:
    """ESDG's per-redistribution volume as printed: T·N·(P−1)/P rows (exact when P | T and P | N)."""
    return T * N * (P - 1) / P


def count_snapshot_redistribution(T: int, N: int, P: int) -> int:
    """Count, snapshot by snapshot, the (t, v) rows whose snapshot owner is not v's RNN owner."""
    time_owner = np.empty(int(T), dtype=np.int64)
    for p, (a, b) in enumerate(even_ranges(T, P)):
        time_owner[a:b] = p
    vertex_owner = gp.range_partition(N, P)
    return int(sum(np.count_nonzero(vertex_owner != time_owner[t]) for t in range(int(T))))


# ----------------------------------------------------------------------------- vertex partitioning

def _distinct_degrees(edge_lists, N: int) -> np.ndarray:
    """Distinct non-self neighbours of every (snapshot, vertex), flattened [T·N]."""
    out = []
    for e in edge_lists:
        r = np.asarray(e[0], dtype=np.int64)
        c = np.asarray(e[1], dtype=np.int64)
        keep = r != c
        keys = unique_sorted(r[keep] * N + c[keep])
        out.append(np.bincount(keys // N, minlength=N))
    return np.concatenate(out) if out else np.zeros(0, dtype=np.int64)


def _hash_part_sizes(N: int, P: int) -> np.ndarray:
    """Part sizes of :func:`~dynagnn.graph.partition.hash_partition` (a permutation mod P)."""
    N, P = gp.check_parts(N, P)
    return np.bincount(np.arange(N) % P, minlength=P)


def vertex_volume_hash(edge_lists, N: int, P: int, width: int = 1, dtype_size: int = 4) -> Volume:
    """Expected Σ_t Σ_v λ_t(v) over a hash partition (uniform random permutation mod P).

    edge_lists: per snapshot (row, col[, ...]); λ counts parts other than v's holding a ``col``
    neighbour of ``row`` v, exactly as :func:`~dynagnn.graph.partition.snapshot_volume` does.
    Exact expectation: see the module docstring.
    """
    from scipy.special import gammaln

    sizes = _hash_part_sizes(N, P)
    deg = _distinct_degrees(edge_lists, N)
    hist = np.bincount(deg) if deg.size else np.zeros(1, dtype=np.int64)
    d = np.flatnonzero(hist)
    total = 0.0
    for nq in sizes:
        a = N - 1 - nq
        with np.errstate(invalid="ignore"):
            log_h = gammaln(a + 1) - gammaln(a - d + 1) - gammaln(N) + gammaln(N - d)
        none = np.where(d <= a, np.exp(np.where(d <= a, log_h, 0.0)), 0.0)
        total += (1 - nq / N) * float(np.sum(hist[d] * (1.0 - none)))
    return Volume(total, width, dtype_size)


def count_vertex_volume(edge_lists, N: int, parts, P: int) -> int:
    """Σ_t Σ_v λ_t(v) on the given partition (ESDG's vertex-partition volume, counted)."""
    return gp.snapshot_volume(edge_lists, N, parts, P)


def blad_paper_vertex_volume(edge_lists, P: int) -> float:
    """BLAD Table 3 as printed, T·prob·N_khop per unit width: (P−1)/P · Σ_t (non-self nnz_t)."""
    slots = sum(int(np.count_nonzero(np.asarray(e[0]) != np.asarray(e[1]))) for e in edge_lists)
    return slots * (P - 1) / P


# ----------------------------------------------------------------------------- parameter all-reduce

def ring_allreduce_volume(params: int, P: int, dtype_size: int = 4) -> Volume:
    """Elements a ring all-reduce of ``params`` values moves among P workers: 2·(P−1)·W, exact."""
    if P < 1 or params < 0:
        raise InputError(f"an all-reduce needs P >= 1 workers and W >= 0 parameters, got P={P}, W={params}")
    return Volume(2 * (P - 1) * params, 1, dtype_size)


def count_ring_allreduce(params: int, P: int) -> int:
    """Simulate the ring: W cut into P chunks; P−1 reduce-scatter then P−1 all-gather steps, in
    each of which worker i sends one chunk to worker i+1. Returns the elements sent."""
    if P < 1:
        raise InputError(f"an all-reduce needs P >= 1 workers, got {P}")
    chunk = np.array([len(c) for c in np.array_split(np.arange(params), P)])
    sent = 0
    for phase in (0, 1):  # reduce-scatter, all-gather
        for s in range(P - 1):
            for i in range(P):
                sent += int(chunk[(i - s + phase) % P])
    return sent


# ----------------------------------------------------------------------------- snapshot groups (BLAD)

def group_halo_volume(ranges, window: int, N: int, features: int, dtype_size: int = 4) -> Volume:
    """Snapshots a worker of contiguous group ranges must hold beyond its own: Σ_p min(l, t0_p),
    each N·F feature elements (loaded once; no feature crosses workers during training)."""
    if window < 0:
        raise InputError(f"window l must be >= 0, got {window}")
    return Volume(sum(min(window, int(a)) for a, _ in ranges), N * features, dtype_size)


def count_group_halo(ranges, window: int) -> int:
    """For every worker, the snapshots its groups {S−l..S} touch that lie outside its range."""
    total = 0
    for a, b in ranges:
        need = {t for s in range(a, b) for t in range(max(0, s - window), s + 1)}
        total += len(need - set(range(a, b)))
    return total


# ----------------------------------------------------------------------------- Sven

@dataclass(frozen=True)
class SvenBatches:
    """A stream cut into batches of ``bs`` events, each split into M contiguous trainer chunks.

    group: int64 [2E'] trainer-chunk id (batch·M + trainer) of every batch occurrence (src, dst
    interleaved); roots [2E']: the vertices; nbrs [2E', k] their sampled neighbours (−1 = none).
    """

    roots: np.ndarray
    nbrs: np.ndarray
    group: np.ndarray
    M: int
    batches: int

    @property
    def trainer(self) -> np.ndarray:
        return self.group % self.M


def sven_batches(roots, nbrs, bs: int, M: int) -> SvenBatches:
    """Cut Sven's flattened stream (``analysis.redundancy._sample_all``) into full batches of bs
    events (a last partial batch is dropped) and each batch into M contiguous trainer chunks."""
    roots = np.asarray(roots, dtype=np.int64)
    nbrs = np.asarray(nbrs, dtype=np.int64).reshape(roots.size, -1)
    bs, M = int(bs), int(M)
    if M < 1:
        raise InputError(f"Sven needs M >= 1 trainers, got {M}")
    if bs < M:
        raise InputError(f"a batch of {bs} events cannot feed M={M} trainers: need batch size >= M")
    n_batches = roots.size // 2 // bs
    n = 2 * n_batches * bs
    event = np.arange(n) // 2
    trainer = (event % bs) * M // bs  # contiguous chunks of bs/M events
    return SvenBatches(roots[:n], nbrs[:n], (event // bs) * M + trainer, M, n_batches)


def _sampled(b: SvenBatches) -> tuple[np.ndarray, np.ndarray]:
    """(group, vertex) of every sampled occurrence: the batch's vertices and their neighbours."""
    k = b.nbrs.shape[1]
    g = np.concatenate([b.group, np.repeat(b.group, k)])
    v = np.concatenate([b.roots, b.nbrs.ravel()])
    ok = v >= 0
    return g[ok], v[ok]


def sven_stats(b: SvenBatches) -> pd.DataFrame:
    """Per trainer, summed over batches: N1 (sampled occurrences), U1 (distinct per batch), N2
    (batch occurrences), U2 (distinct per batch) -- Sven's N·(1 − η) terms."""
    M = b.M
    g1, v1 = _sampled(b)
    span = np.int64(max(int(v1.max(initial=0)), int(b.roots.max(initial=0))) + 1)
    u1 = unique_sorted(g1 * span + v1) // span
    u2 = unique_sorted(b.group * span + b.roots) // span

    def per_trainer(groups):
        return np.bincount(groups % M, minlength=M)

    return pd.DataFrame({"trainer": np.arange(M), "N1": per_trainer(g1), "U1": per_trainer(u1),
                         "N2": per_trainer(b.group), "U2": per_trainer(u2)})


def sven_volumes(stats: pd.DataFrame, owner_sizes, N: int, memory_dim: int, edge_dim: int = 0,
                 dtype_size: int = 4) -> dict[str, Volume]:
    """Closed forms of DepCache, DepComm and Sven (dispatch and aggregation) from per-trainer
    counts: expectation under a hash partition with part sizes ``owner_sizes`` (DepCache exact)."""
    M = len(stats)
    sizes = np.asarray(owner_sizes, dtype=np.float64)
    if sizes.size != M:
        raise InputError(f"{sizes.size} part sizes for {M} trainers")
    rho = 1.0 - sizes / N
    w = 3 * memory_dim + edge_dim
    n1, u1, u2 = (stats[c].to_numpy(np.float64) for c in ("N1", "U1", "U2"))
    return {
        "depcache/dispatch": Volume(0.0, w, dtype_size),
        "depcache/aggregation": Volume((M - 1) * u2.sum(), w, dtype_size),
        "depcomm/dispatch": Volume(float(rho @ n1), memory_dim, dtype_size),
        "depcomm/aggregation": Volume(float(rho @ u2), w, dtype_size),
        "sven/dispatch": Volume(float(rho @ u1), w, dtype_size),
        "sven/aggregation": Volume(float(rho @ u2), w, dtype_size),
    }


def paper_sven_volumes(stats: pd.DataFrame, memory_dim: int, edge_dim: int = 0) -> dict[str, float]:
    """The paper's J 7–9 (elements, C0 = 1) with N·(1 − η) = the distinct counts."""
    M = len(stats)
    w = 3 * memory_dim + edge_dim
    f = 2 * (M - 1) / M
    n1, u1, u2 = (float(stats[c].sum()) for c in ("N1", "U1", "U2"))
    return {"depcache/dispatch": 0.0, "depcache/aggregation": u2 * w * 2 * (M - 1) ** 2 / M,
            "depcomm/dispatch": n1 * memory_dim * f, "depcomm/aggregation": u2 * w * f,
            "sven/dispatch": u1 * w * f, "sven/aggregation": u2 * w * f}


def count_sven_volumes(b: SvenBatches, owner, memory_dim: int, edge_dim: int = 0) -> dict[str, int]:
    """Elements each scheme sends, enumerated on the partition ``owner`` [N] (values 0..M−1)."""
    owner = np.asarray(owner, dtype=np.int64)
    M = b.M
    w = 3 * memory_dim + edge_dim
    g1, v1 = _sampled(b)
    remote_occ = owner[v1] != g1 % M
    # distinct (batch-trainer, vertex) pairs, each checked once
    span = np.int64(owner.size)
    d1 = unique_sorted(g1 * span + v1)
    d2 = unique_sorted(b.group * span + b.roots)
    remote_d1 = int(np.count_nonzero(owner[d1 % span] != (d1 // span) % M))
    remote_d2 = int(np.count_nonzero(owner[d2 % span] != (d2 // span) % M))
    gathered = sum(int(np.count_nonzero((d2 // span) % M == i)) * (M - 1) for i in range(M))
    return {"depcache/dispatch": 0, "depcache/aggregation": gathered * w,
            "depcomm/dispatch": int(np.count_nonzero(remote_occ)) * memory_dim,
            "depcomm/aggregation": remote_d2 * w,
            "sven/dispatch": remote_d1 * w, "sven/aggregation": remote_d2 * w}


def sven_threshold(memory_dim: int, edge_dim: int) -> float:
    """The η1 above which Sven's dispatch beats DepComm's: (2Π+1)/(3Π+1), Π = d_mem/d_edge
    (written (2·d_mem + d_edge)/(3·d_mem + d_edge) so that d_edge = 0 gives 2/3)."""
    return (2 * memory_dim + edge_dim) / (3 * memory_dim + edge_dim)


def sven_beats_depcomm(eta1: float, memory_dim: int, edge_dim: int) -> bool:
    """Corrected J 11: C_Sven < C_DepComm iff η1 > (2Π+1)/(3Π+1)."""
    return eta1 > sven_threshold(memory_dim, edge_dim)


def paper_sven_beats_depcomm(eta1: float, memory_dim: int, edge_dim: int) -> bool:
    """J 11 / C 11 as printed: η1 > 2/3 − Π (wrong; kept to show where it errs)."""
    return eta1 > 2 / 3 - (memory_dim / edge_dim if edge_dim else np.inf)


def sven_beats_depcache(tau: float, M: int) -> bool:
    """C_Sven < C_DepCache in expectation (equal parts): M > τ + 1, τ = U1/U2."""
    return M > tau + 1


# ----------------------------------------------------------------------------- the table

COLUMNS = ["scheme", "partitioner", "workers", "layer", "direction", "component", "width", "exact",
           "modelled_units", "counted_units", "modelled", "counted", "paper", "modelled_bytes",
           "counted_bytes"]


def _row(scheme, partitioner, P, layer, direction, component, model: Volume, counted_units, paper,
         exact) -> dict:
    return dict(scheme=scheme, partitioner=partitioner, workers=int(P), layer=int(layer), direction=direction,
                component=component, width=int(model.width), exact=bool(exact),
                modelled_units=float(model.units), counted_units=float(counted_units),
                modelled=float(model.elements), counted=float(counted_units * model.width),
                paper=float(paper), modelled_bytes=float(model.bytes),
                counted_bytes=float(counted_units * model.width * model.dtype_size))


def _param_rows(scheme, partitioner, P, W_gnn, W_rnn, dtype_size) -> list[dict]:
    rows = []
    for comp, W in (("gnn_params", W_gnn), ("rnn_params", W_rnn)):
        if W is None:
            continue
        rows.append(_row(scheme, partitioner, P, 0, "backward", comp, ring_allreduce_volume(W, P, dtype_size),
                         count_ring_allreduce(W, P), P * W, True))
    return rows


def vertex_rows(store_path: str, method: str, P: int, union, model: dict, seed: int = 0) -> list[dict]:
    """Vertex-partition rows of one (partitioner, P): features per layer and direction, parameters
    (a Dask task, as :func:`~dynagnn.analysis.partitions.score`)."""
    from ..data.store import open_store
    from .partitions import _vertex_parts

    store = open_store(store_path)
    N, T = store.num_nodes, store.num_snapshots
    edges = [(r, c) for r, c, _ in store.window_edges(0, T)]
    parts = _vertex_parts(method, union[0], union[1], N, P, seed)
    counted = count_vertex_volume(edges, N, parts, P)
    expected = vertex_volume_hash(edges, N, P).units
    paper = blad_paper_vertex_volume(edges, P)
    rows = []
    for layer, width in enumerate(layer_widths(model["features"], model["hidden"], model["layers"]), 1):
        for direction in ("forward", "backward"):
            rows.append(_row("vertex", method, P, layer, direction, "features",
                             Volume(expected, width, model["dtype_size"]), counted, paper * width, False))
    return rows + _param_rows("vertex", method, P, model["W_gnn"], model["W_rnn"], model["dtype_size"])


def snapshot_rows(T: int, N: int, P: int, model: dict) -> list[dict]:
    """ESDG snapshot partitioning: two redistributions per layer, forward and backward, + params."""
    units = count_snapshot_redistribution(T, N, P)
    rows = []
    for layer in range(1, model["layers"] + 1):
        for direction in ("forward", "backward"):
            for comp in ("redistribution1", "redistribution2"):
                v = snapshot_redistribution_volume(T, N, P, model["hidden"], model["dtype_size"])
                rows.append(_row("snapshot", "esdg_even", P, layer, direction, comp, v, units,
                                 esdg_paper_volume(T, N, P) * model["hidden"], True))
    return rows + _param_rows("snapshot", "esdg_even", P, model["W_gnn"], model["W_rnn"], model["dtype_size"])


def group_rows(nnz, N: int, P: int, model: dict) -> list[dict]:
    """BLAD snapshot groups: no training features; the replicated halo snapshots; params."""
    ranges = minmax_ranges(np.asarray(nnz, dtype=float), P)
    v = group_halo_volume(ranges, model["window"], N, model["features"], model["dtype_size"])
    rows = [_row("group", "blad_groups", P, 0, "forward", "halo", v, count_group_halo(ranges, model["window"]),
                 0.0, True)]
    return rows + _param_rows("group", "blad_groups", P, model["W_gnn"], model["W_rnn"], model["dtype_size"])


def sven_rows(events, N: int, workers, model: dict, seed: int = 0) -> list[dict]:
    """DepCache / DepComm / Sven per trainer count, summed over the stream's full batches, with
    N&M owned by a hash partition (a Dask task: samples once, then every M)."""
    from .redundancy import _sample_all

    roots, nbrs = _sample_all(events, N, model["neighbors"], None)
    rows = []
    for M in workers:
        b = sven_batches(roots, nbrs, model["batch_size"], M)
        if b.batches == 0:
            log.warning("Sven volume: fewer than %d events, no full batch", model["batch_size"])
            continue
        owner = gp.hash_partition(N, M, seed=seed)
        stats = sven_stats(b)
        modelled = sven_volumes(stats, _hash_part_sizes(N, M), N, model["memory_dim"], model["edge_dim"],
                                model["dtype_size"])
        counted = count_sven_volumes(b, owner, model["memory_dim"], model["edge_dim"])
        paper = paper_sven_volumes(stats, model["memory_dim"], model["edge_dim"])
        for key, v in modelled.items():
            scheme, comp = key.split("/")
            rows.append(_row(scheme, "hash", M, 0, "forward", comp, v, counted[key] / v.width, paper[key],
                             scheme == "depcache"))
    return rows


def volume_table(store_path, client=None, workers=(2, 4, 8), *, layers: int = 2, hidden: int = 32,
                 window: int = 3, cell: str = "lstm", partitioners=("hash", "metis"), batch_size: int = 1000,
                 neighbors: int = 10, memory_dim: int = 100, dtype_size: int = 4, seed: int = 0) -> pd.DataFrame:
    """Modelled against counted volume per (scheme, partitioner, workers, layer, direction,
    component) of a store (columns :data:`COLUMNS`; elements, bytes with ``dtype_size``).

    Vertex partitions are recomputed as the partitions table does (same partitioners, seed);
    Sven rows need an event stream (left out without one). One Dask task per (partitioner, P) and
    one for Sven when a client is given. Raises InputError for a worker count above N or T.
    """
    from ..data.store import open_store
    from .partitions import VERTEX_METHODS, check_workers, union_graph

    bad = [m for m in partitioners if m not in VERTEX_METHODS]
    if bad:
        raise InputError(f"unknown vertex partitioner(s) {bad}: expected some of {VERTEX_METHODS}")
    store = open_store(store_path)
    check_workers(store, workers)
    N, T = store.num_nodes, store.num_snapshots
    F = int(store.root["features/x"].shape[-1]) if store.has("features/x") else hidden
    edge_dim = int(store.root["events/features"].shape[-1]) if store.has("events/features") else 0
    model = dict(layers=int(layers), hidden=int(hidden), features=F, window=int(window), dtype_size=int(dtype_size),
                 W_gnn=gnn_params(F, hidden, layers), W_rnn=rnn_params(hidden, layers, cell),
                 batch_size=int(batch_size), neighbors=int(neighbors), memory_dim=int(memory_dim), edge_dim=edge_dim)
    union = union_graph(store)
    events = store.events() if store.has("events/src") else None
    jobs = [(m, P) for m in partitioners for P in workers]
    path = str(store_path)
    if client is None:
        parts = [vertex_rows(path, m, P, union, model, seed) for m, P in jobs]
        sven = sven_rows(events, N, workers, model, seed) if events is not None else []
    else:
        shared = client.scatter(union, broadcast=True)
        futures = [client.submit(vertex_rows, path, m, P, shared, model, seed, pure=False) for m, P in jobs]
        sfut = client.submit(sven_rows, events, N, tuple(workers), model, seed, pure=False) if events is not None else None
        parts = [f.result() for f in futures]
        sven = sfut.result() if sfut is not None else []
    nnz = np.diff(store.offsets)
    rows = [r for p in parts for r in p]
    for P in workers:
        rows += snapshot_rows(T, N, P, model) + group_rows(nnz, N, P, model)
    return pd.DataFrame(rows + sven, columns=COLUMNS)
