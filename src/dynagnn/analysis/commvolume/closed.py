"""The closed forms of every scheme's volume, one section per scheme; their enumerated counterparts are
in :mod:`.counted`, so that tests and the volume table hold one against the other."""

from __future__ import annotations

import numpy as np
import pandas as pd

from ...errors import InputError
from ...graph import partition as gp
from ...sortedkeys import unique_sorted
from ...splits import check_split
from .base import Volume

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


def hash_part_sizes(N: int, P: int) -> np.ndarray:
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

    sizes = hash_part_sizes(N, P)
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


# ----------------------------------------------------------------------------- snapshot groups (BLAD)

def group_halo_volume(ranges, window: int, N: int, features: int, dtype_size: int = 4) -> Volume:
    """Snapshots a worker of contiguous group ranges must hold beyond its own: Σ_p min(l, t0_p),
    each N·F feature elements (loaded once; no feature crosses workers during training)."""
    if window < 0:
        raise InputError(f"window l must be >= 0, got {window}")
    return Volume(sum(min(window, int(a)) for a, _ in ranges), N * features, dtype_size)


# ----------------------------------------------------------------------------- Sven

REMOTE = ("N1_remote", "U1_remote", "U2_remote")


def sven_volumes(stats: pd.DataFrame, owner_sizes, N: int, memory_dim: int, edge_dim: int = 0,
                 dtype_size: int = 4, mailbox: int = 1) -> dict[str, Volume]:
    """Closed forms of DepCache, DepComm and Sven (dispatch and aggregation) from per-trainer
    counts: expectation under a hash partition with part sizes ``owner_sizes`` (DepCache exact).

    When ``stats`` has the columns N1_remote, U1_remote and U2_remote (the counts on a given
    partition whose owner is not the trainer, :func:`~.counted.sven_trainer_stats`), they replace the
    hash expectation ρ·N1, ρ·U1, ρ·U2 and every form is exact on that partition (``owner_sizes`` is
    then not read). Widths: a dispatched row is the memory and the mailbox, d_mem + M·d_msg
    (``mailbox`` M; Sven's d_mem + d_msg at M = 1, d_msg = 2·d_mem + d_edge); a written row is the
    memory and one mail, d_mem + d_msg. ``depcomm/dispatch_backward``: DepComm's owner updates the
    memory it sends, so the gradient of each sent row returns to it (the paper does not count it).

    The aggregation forms count one memory and one mail per written endpoint (U2): TGN's and JODIE's
    writes. APAN also sends mails to its endpoints' sampled neighbours, so its aggregation is larger
    than these forms say.
    """
    M = len(stats)
    n1, u1, u2 = (stats[c].to_numpy(np.float64) for c in ("N1", "U1", "U2"))
    if all(c in stats for c in REMOTE):
        r1, q1, r2 = (float(stats[c].sum()) for c in REMOTE)
    else:
        sizes = np.asarray(owner_sizes, dtype=np.float64)
        if sizes.size != M:
            raise InputError(f"{sizes.size} part sizes for {M} trainers")
        rho = 1.0 - sizes / N
        r1, q1, r2 = float(rho @ n1), float(rho @ u1), float(rho @ u2)
    d_msg = 2 * memory_dim + edge_dim
    w = memory_dim + d_msg
    return {
        "depcache/dispatch": Volume(0.0, memory_dim + mailbox * d_msg, dtype_size),
        "depcache/aggregation": Volume((M - 1) * u2.sum(), w, dtype_size),
        "depcomm/dispatch": Volume(r1, memory_dim, dtype_size),
        "depcomm/dispatch_backward": Volume(r1, memory_dim, dtype_size),
        "depcomm/aggregation": Volume(r2, w, dtype_size),
        "sven/dispatch": Volume(q1, memory_dim + mailbox * d_msg, dtype_size),
        "sven/aggregation": Volume(r2, w, dtype_size),
    }


def paper_sven_volumes(stats: pd.DataFrame, memory_dim: int, edge_dim: int = 0) -> dict[str, float]:
    """The paper's J 7–9 (elements, C0 = 1) with N·(1 − η) = the distinct counts."""
    M = len(stats)
    w = 3 * memory_dim + edge_dim
    f = 2 * (M - 1) / M
    n1, u1, u2 = (float(stats[c].sum()) for c in ("N1", "U1", "U2"))
    return {"depcache/dispatch": 0.0, "depcache/aggregation": u2 * w * 2 * (M - 1) ** 2 / M,
            "depcomm/dispatch": n1 * memory_dim * f, "depcomm/dispatch_backward": 0.0, "depcomm/aggregation": u2 * w * f,
            "sven/dispatch": u1 * w * f, "sven/aggregation": u2 * w * f}


def sven_threshold(memory_dim: int, edge_dim: int, gradient_return: bool = False) -> float:
    """The η1 above which Sven's dispatch beats DepComm's: (2Π+1)/(3Π+1), Π = d_mem/d_edge
    (written (2·d_mem + d_edge)/(3·d_mem + d_edge) so that d_edge = 0 gives 2/3).

    ``gradient_return``: counting DepComm's return of the memory's gradient too (2·d_mem per remote
    occurrence against d_mem + d_msg per distinct row), Sven wins when (1 − η1)(3·d_mem + d_edge) <
    2·d_mem, i.e. η1 > (d_mem + d_edge)/(3·d_mem + d_edge)."""
    if gradient_return:
        return (memory_dim + edge_dim) / (3 * memory_dim + edge_dim)
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
