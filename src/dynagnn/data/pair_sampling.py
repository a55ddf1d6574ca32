"""Random distinct node pairs: the edge-sampling machinery under the synthetic generators.

Holds the pair models (:class:`PairModel`: how one random pair is drawn and how likely it is;
:func:`uniform_model` for Erdős–Rényi, :func:`powerlaw_model` / :func:`powerlaw_weights` for
Chung-Lu, :func:`sbm_model` for a stochastic block model) and the sampling of ``count`` distinct
pairs from a model (:func:`sample_keys`, :func:`replace_edges`), with the pair-key arithmetic
they share (:func:`decode_keys`).

Used by :mod:`dynagnn.data.synthetic`, which turns sampled pairs into snapshots. It sits apart
from the generators because it knows nothing of snapshots, trends or parameter checks: it takes
already-checked sizes and a ``np.random.Generator`` and returns sorted int64 keys. Pairs are
unordered, without self-loops, as keys ``min * N + max`` (N below 2**31, so keys fit in int64
and sort in (row, col) order). All randomness comes from the ``rng`` passed in, in a fixed order,
so the same arguments give bit-identical keys.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable

import numpy as np

from dynagnn.sortedkeys import isin_sorted, unique_sorted

_WEIGHTED_ROUNDS = 50           # rounds of model draws before falling back to uniform draws
_DENSE_OCCUPANCY = 0.25         # above this share of all pairs, enumerate pairs instead of drawing
_EMPTY = np.empty(0, dtype=np.int64)


# --------------------------------------------------------------------------------------------
# Pair models: how one random pair is drawn
# --------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class PairModel:
    """A distribution over unordered pairs of N nodes.

    draw(k, rng) -> (u, v) int64 [<= k]: independent draws, possibly self-loops or repeats.
    weight(u, v) -> float64 [k] > 0: relative probability of each pair (used where the graph is so
    dense that pairs are enumerated and picked by weight instead of drawn).
    """

    draw: Callable[[int, np.random.Generator], tuple[np.ndarray, np.ndarray]]
    weight: Callable[[np.ndarray, np.ndarray], np.ndarray]


def uniform_model(n: int) -> PairModel:
    """Every pair equally likely (Erdős–Rényi)."""
    def draw(k, rng):
        u = rng.integers(0, n, k, dtype=np.int64)
        # u + s mod N with s in [1, N): uniform over ordered pairs u != v, no self-loop to reject.
        v = rng.integers(1, n, k, dtype=np.int64)
        v += u
        v[v >= n] -= n
        return u, v

    return PairModel(draw, lambda u, v: np.ones(u.shape[0]))


def powerlaw_model(n: int, m: int, exponent: float, rng: np.random.Generator) -> PairModel:
    """Chung-Lu model: P(pair u, v) ∝ w_u * w_v with power-law weights.

    Node at position i (0 = largest) has weight ∝ (i + i0)^(-a), a = 1 / (exponent - 1), which gives
    a degree distribution P(k) ~ k^(-exponent). Endpoints are drawn by inverting the continuous CDF
    of (x + i0)^(-a) on [0, N) in closed form (O(1) a draw, no search). i0 caps the hub's expected
    degree near ``4 * sqrt(2m)`` (about 12,600 for m = 5M, like OGB Products' or Reddit's hubs);
    without it the hub of a million-node graph would touch 40% of the nodes. Positions are mapped
    to node ids by a random permutation so that hubs are spread over the id range.
    """
    s, i0, perm, weight_of = powerlaw_weights(n, m, exponent, rng)
    lo, hi = i0 ** s, (n + i0) ** s

    def endpoints(k, rng):
        x = (lo + rng.random(k) * (hi - lo)) ** (1.0 / s) - i0
        return perm[np.minimum(x.astype(np.int64), n - 1)]

    def draw(k, rng):
        return endpoints(k, rng), endpoints(k, rng)

    return PairModel(draw, lambda u, v: weight_of[u] * weight_of[v])


def powerlaw_weights(n: int, m: int, exponent: float, rng: np.random.Generator):
    """The Chung-Lu weights of :func:`powerlaw_model`: (s = 1 - a, i0, perm int64 [N] position ->
    id, weight_of float64 [N] per id, summing to (N + i0)^s - i0^s)."""
    a = 1.0 / (exponent - 1.0)
    s = 1.0 - a
    mean_degree = 2.0 * m / n
    hub = min(n - 1.0, 4.0 * math.sqrt(2.0 * m))
    # Hub degree ≈ mean * s * (N / i0)^a for i0 << N; solved for i0.
    i0 = n * (mean_degree * s / hub) ** (1.0 / a)
    perm = rng.permutation(n).astype(np.int64)
    pos_weight = np.diff((np.arange(n + 1) + i0) ** s)
    weight_of = np.empty(n)
    weight_of[perm] = pos_weight
    return s, i0, perm, weight_of


def sbm_model(n: int, blocks: int, ratio: float,
              rng: np.random.Generator) -> tuple[PairModel, np.ndarray]:
    """Stochastic block model: a within-block pair is ``ratio`` times as likely as another pair.

    Blocks are equal (sizes differ by at most one) and occupy contiguous positions, mapped to ids
    by a random permutation. A draw is within-block with probability ratio*W / (ratio*W + X)
    (W, X: numbers of within- and between-block pairs); a within draw picks a block by its pair
    count and two uniform members, a between draw two uniform nodes of different blocks.
    Returns the model and the block of each node id (int64 [N]).
    """
    sizes = np.full(blocks, n // blocks, dtype=np.int64)
    sizes[: n % blocks] += 1
    starts = np.concatenate(([0], np.cumsum(sizes)[:-1]))
    block_pairs = sizes * (sizes - 1) / 2.0
    within = block_pairs.sum()
    between = n * (n - 1) / 2.0 - within
    p_within = ratio * within / (ratio * within + between)
    perm = rng.permutation(n).astype(np.int64)
    block_of_pos = np.repeat(np.arange(blocks, dtype=np.int64), sizes)
    block_of = np.empty(n, dtype=np.int64)
    block_of[perm] = block_of_pos

    def draw(k, rng):
        k_in = int(rng.binomial(k, p_within)) if within > 0 else 0
        b = rng.choice(blocks, k_in, p=block_pairs / within) if k_in else _EMPTY
        u_in = starts[b] + (rng.random(k_in) * sizes[b]).astype(np.int64)
        v_in = starts[b] + (rng.random(k_in) * sizes[b]).astype(np.int64)
        u_out = rng.integers(0, n, k - k_in, dtype=np.int64)
        v_out = rng.integers(0, n, k - k_in, dtype=np.int64)
        cross = block_of_pos[u_out] != block_of_pos[v_out]
        u = np.concatenate((u_in, u_out[cross]))
        v = np.concatenate((v_in, v_out[cross]))
        return perm[u], perm[v]

    def weight(u, v):
        return np.where(block_of[u] == block_of[v], ratio, 1.0)

    return PairModel(draw, weight), block_of


# --------------------------------------------------------------------------------------------
# Sampling distinct pairs
# --------------------------------------------------------------------------------------------

def sample_keys(model: PairModel, count: int, n: int, rng: np.random.Generator,
                 exclude: np.ndarray = _EMPTY) -> np.ndarray:
    """``count`` distinct pair keys drawn from ``model``, none in ``exclude``: sorted int64 [count].

    Sparse case: rounds of vectorised draws, each sized from the last round's yield of new pairs,
    until enough; the surplus is dropped at random (so the result is a uniform subset of the
    distinct pairs drawn). If a skewed model saturates (hub pairs all taken), uniform draws finish
    the job. Dense case (pairs taken would exceed a quarter of all pairs): all free pairs are
    enumerated and ``count`` of them picked by weight without replacement, since rejection would
    crawl. ``exclude``: sorted int64 keys.
    """
    if count == 0:
        return _EMPTY
    if count + exclude.size > _DENSE_OCCUPANCY * (n * (n - 1) // 2):
        return _sample_keys_dense(model, count, n, rng, exclude)
    have = _EMPTY
    yield_rate = 1.0
    rounds = 0
    while have.size < count:
        if rounds == _WEIGHTED_ROUNDS:
            model = uniform_model(n)
        k = int((count - have.size) / max(yield_rate, 0.05) * 1.05) + 64
        u, v = model.draw(k, rng)
        fresh = _new_keys(_pair_keys(u, v, n), have, exclude)
        yield_rate = fresh.size / k
        have = _merge_sorted(have, fresh)
        rounds += 1
    return _drop_random(have, have.size - count, rng)


def _sample_keys_dense(model: PairModel, count: int, n: int, rng: np.random.Generator,
                       exclude: np.ndarray) -> np.ndarray:
    """Weighted sampling without replacement among all free pairs (Efraimidis–Spirakis keys)."""
    row, col = np.triu_indices(n, 1)
    keys = row.astype(np.int64) * n + col
    free = ~isin_sorted(keys, exclude)
    keys, row, col = keys[free], row[free], col[free]
    # log(U) / w: the `count` largest are a weighted sample without replacement.
    score = np.log(rng.random(keys.size)) / model.weight(row, col)
    pick = np.argpartition(-score, count - 1)[:count]
    return np.sort(keys[pick])


def replace_edges(keys: np.ndarray, r: int, model: PairModel, n: int,
                  rng: np.random.Generator) -> np.ndarray:
    """Remove r random keys from sorted ``keys`` and add r model-drawn keys absent from ``keys``."""
    if r == 0:
        return keys
    added = sample_keys(model, r, n, rng, exclude=keys)
    kept = np.delete(keys, rng.choice(keys.size, r, replace=False))
    return _merge_sorted(kept, added)


def _pair_keys(u: np.ndarray, v: np.ndarray, n: int) -> np.ndarray:
    """Keys ``min * N + max`` of the pairs (u, v) that are not self-loops: int64 [<= k].

    Overwrites ``v``: on millions of pairs, fresh temporaries (page faults) cost more than the
    arithmetic.
    """
    ok = u != v
    keys = np.minimum(u, v)
    np.maximum(u, v, out=v)
    keys *= n
    keys += v
    return keys if ok.all() else keys[ok]


def decode_keys(keys: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    """(row, col) int64 [k] of keys."""
    row = keys // n
    return row, keys - row * n


def _new_keys(keys: np.ndarray, *taken: np.ndarray) -> np.ndarray:
    """Sorted distinct keys not in any of the sorted arrays ``taken``; ``keys`` is sorted in place."""
    fresh = unique_sorted(keys, in_place=True)
    for t in taken:
        fresh = fresh[~isin_sorted(fresh, t)]
    return fresh


def _merge_sorted(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Merge two sorted disjoint int64 arrays in O(len(a) + len(b)) (no re-sort)."""
    if a.size == 0:
        return b
    return np.insert(a, np.searchsorted(a, b), b)


def _drop_random(keys: np.ndarray, excess: int, rng: np.random.Generator) -> np.ndarray:
    """``keys`` without ``excess`` of them chosen uniformly; order is kept."""
    if excess <= 0:
        return keys
    return np.delete(keys, rng.choice(keys.size, excess, replace=False))
