r"""Sven's temporal redundancy of TGNN mini-batches (Xia et al., HPDC'23 / TPDS; notes §3).

The event stream is cut into batches of ``bs`` consecutive events ξ(t_s, t_e). For a batch b:

* the *original* vertex occurrences V_b (aggregation, Fig. 6b) are the batch flattened at
  interaction level, ``V_o = (v_i(t_s), v_j(t_s), …, v_m(t_e), v_n(t_e))``, i.e. src and dst of
  every event interleaved: N2 = |V_b| = 2·bs occurrences;
* the *sampled* occurrences (dispatch, Fig. 6a) are V_b plus, for every occurrence v(t) of V_b, the
  (valid) k most recent neighbours of v strictly before t (:class:`TemporalNeighbors`):
  N1 = 2·bs + Σ counts.

Eq. 1 (both versions) is η1 = N1^r / N1, η2 = N2^r / N2 with N^r the number of *duplicated*
occurrences, N^r = N − |unique|. Hence

    η1 = 1 − |unique(sampled occurrences)| / N1      (dispatch redundancy)
    η2 = 1 − |unique(V_b)| / N2                       (aggregation redundancy)

and 1 − η is the fraction of rows Sven actually sends (C_Sven = N(1−η)(d_msg+d_mem)…, §5).

Where this reading differs from, or fills gaps in, the paper:

* the sampler is deterministic *most recent* (TGL/TGN), not TGL's uniform sampler; k (default
  10, TGL's default for TGN/APAN) and one layer are our choice, the paper gives neither;
* a sampled interaction (v, u, t') adds one occurrence, the neighbour u (its root v is already in
  V_b); negative destinations are not counted (the paper is silent);
* neighbours are taken strictly before each event's own time, so earlier events of the same batch
  count as history (as in TGL); ties in time are not history;
* the unique vertex list 𝓥_u is returned in sorted id order (as torch.unique does) instead of
  Algorithm 2's first-appearance order; Ψ is relabelled accordingly, the set and all counts are
  the same. A last partial batch is dropped by default (``drop_last``) so that every row has
  exactly ``bs`` events.

:func:`fit_reciprocal` fits Sven's η ≈ A + B / bs (C eq. 12) by least squares.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from dynagnn.graph.dispatch import redundancy_free
from dynagnn.graph.sample import TemporalNeighbors

DEFAULT_BATCH_SIZES = (200, 500, 1000, 2000, 4000)


def _flatten(events) -> tuple[np.ndarray, np.ndarray]:
    """V_o of the whole stream: (vertices int64 [2E] src/dst interleaved, times [2E])."""
    v = np.stack([np.asarray(events.src, dtype=np.int64),
                  np.asarray(events.dst, dtype=np.int64)], axis=1).ravel()
    return v, np.repeat(np.asarray(events.t), 2)


def _sample_all(events, num_nodes: int, k: int, sampler: TemporalNeighbors | None):
    """Roots [2E] and their k most recent neighbours [2E, k] (-1 padded); independent of bs."""
    if sampler is None:
        sampler = TemporalNeighbors.from_events(events, num_nodes, undirected=True)
    roots, times = _flatten(events)
    nbrs, _, _ = sampler.most_recent(roots, times, k)
    return roots, nbrs


def _per_batch(roots: np.ndarray, nbrs: np.ndarray, bs: int, drop_last: bool) -> pd.DataFrame:
    n_ev = roots.size // 2
    n_batches = n_ev // bs if drop_last else -(-n_ev // bs)
    rows = []
    for b in range(n_batches):
        a, z = 2 * b * bs, 2 * min((b + 1) * bs, n_ev)
        vb = roots[a:z]
        nb = nbrs[a:z].ravel()
        sampled = np.concatenate([vb, nb[nb >= 0]])
        agg = redundancy_free(vb, np.arange(vb.size) // 2)
        disp = redundancy_free(sampled)
        n2, u2 = vb.size, agg.unique.size
        n1, u1 = sampled.size, disp.unique.size
        rows.append((b, a // 2, z // 2, z // 2 - a // 2, n1, u1, 1.0 - u1 / n1,
                     n2, u2, 1.0 - u2 / n2))
    return pd.DataFrame(rows, columns=["batch", "start", "stop", "events", "sampled",
                                       "sampled_unique", "eta1", "original", "original_unique",
                                       "eta2"])


def per_batch_redundancy(events, num_nodes: int, bs: int, k: int = 10, *, drop_last: bool = True,
                         sampler: TemporalNeighbors | None = None) -> pd.DataFrame:
    """One row per batch of ``bs`` consecutive events: Sven's η1 (dispatch), η2 (aggregation).

    events: an EventStream (time-sorted src, dst, t [E]). Columns: batch, start, stop (event
    range), events, sampled (N1), sampled_unique, eta1, original (N2 = 2·events),
    original_unique, eta2. ``sampler`` lets callers reuse one :class:`TemporalNeighbors`.
    """
    roots, nbrs = _sample_all(events, num_nodes, k, sampler)
    return _per_batch(roots, nbrs, int(bs), drop_last)


def fit_reciprocal(batch_sizes, eta) -> tuple[float, float]:
    """Least-squares (A, B) of Sven's η(bs) ≈ A + B / bs (C eq. 12); needs >= 2 distinct sizes."""
    bs = np.asarray(batch_sizes, dtype=np.float64)
    y = np.asarray(eta, dtype=np.float64)
    ok = np.isfinite(y)
    design = np.stack([np.ones(int(ok.sum())), 1.0 / bs[ok]], axis=1)
    (a, b), *_ = np.linalg.lstsq(design, y[ok], rcond=None)
    return float(a), float(b)


def batch_redundancy(events, num_nodes: int, batch_sizes=DEFAULT_BATCH_SIZES, k: int = 10, *,
                     drop_last: bool = True) -> pd.DataFrame:
    """Mean Sven redundancy per batch size: one row per bs.

    Columns: batch_size, batches, mean_eta1, mean_eta2, mean_sampled (N1), mean_sampled_unique,
    mean_original (N2), mean_original_unique. The sampler runs once over the whole stream (a
    neighbour list depends on the event, not on bs). ``df.attrs["fit"]`` holds
    ``{"eta1": (A, B), "eta2": (A, B)}`` of :func:`fit_reciprocal` when >= 2 sizes have batches.
    """
    roots, nbrs = _sample_all(events, num_nodes, k, None)
    rows = []
    for bs in batch_sizes:
        d = _per_batch(roots, nbrs, int(bs), drop_last)
        rows.append({"batch_size": int(bs), "batches": len(d),
                     "mean_eta1": d["eta1"].mean(), "mean_eta2": d["eta2"].mean(),
                     "mean_sampled": d["sampled"].mean(),
                     "mean_sampled_unique": d["sampled_unique"].mean(),
                     "mean_original": d["original"].mean(),
                     "mean_original_unique": d["original_unique"].mean()})
    out = pd.DataFrame(rows)
    have = out["batches"] > 0
    if int(have.sum()) >= 2:
        out.attrs["fit"] = {
            "eta1": fit_reciprocal(out.loc[have, "batch_size"], out.loc[have, "mean_eta1"]),
            "eta2": fit_reciprocal(out.loc[have, "batch_size"], out.loc[have, "mean_eta2"]),
        }
    return out


def redundancy_table(store_path, client, batch_sizes=DEFAULT_BATCH_SIZES, k: int = 10) -> pd.DataFrame:
    """:func:`batch_redundancy` of a store's event stream, one Dask task per batch size (the events
    are scattered once and shared by the tasks)."""
    from dynagnn.data.store import open_store

    store = open_store(store_path)
    ev = client.scatter(store.events(), broadcast=True)
    futures = [client.submit(batch_redundancy, ev, store.num_nodes, [bs], k=k, pure=False) for bs in batch_sizes]
    return pd.concat([f.result() for f in futures], ignore_index=True)
