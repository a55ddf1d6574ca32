"""Orderings of training nodes into mini-batches: random shuffling and BGL's proximity-aware order.

BGL (NSDI'23, §3.2.2) feeds training nodes to the sampler in BFS order so that consecutive
mini-batches share neighbourhoods, which a FIFO feature cache turns into hits. A BFS order skews
each batch's labels (neighbours share classes), which breaks SGD's i.i.d. assumption and costs
accuracy; BGL keeps convergence by adding randomness:

1. several BFS sequences, each from a random root, and each batch takes training nodes from every
   sequence in turn (round-robin);
2. each sequence circularly shifted by a random offset (the small components a BFS appends at its
   end would otherwise always come last);
3. the number of sequences chosen before training by a *shuffling-error* check on the labels: the
   least count whose error is at most ``sqrt(b M) / n`` (Meng et al.'s bound: b the batch size, M
   the workers, n the training nodes); fewer sequences keep more locality.

Choices where the paper is vague (see the BGL notes, §3.2):

* **Sequences are disjoint** (the notes' "disjoint multi-source BFS"): one level-synchronous BFS
  from the s roots at once over the whole graph (non-training vertices too, so training nodes two
  hops apart through a non-training vertex stay close); sequence k is the training nodes that root
  k's search reached first, in visit order. So the round-robin never meets a node twice, and s
  sequences cost one BFS, not s (the check tries up to :data:`MAX_SEQUENCES`).
* Components that no root reaches are each searched from a random training node of their own and
  appended whole to the end of a random sequence, in random order; the shift then spreads them.
* **Round-robin in proportion**: sequences differ in length, so each advances at a rate
  proportional to its length (node i of a sequence of length L, shifted, at ``(i + u) / L`` with a
  random phase u per sequence): every batch holds about ``b L / T`` consecutive nodes of each
  sequence, to the end of the epoch, instead of the longest sequence alone at the end.
* **The shuffling error from labels** (BGL: "the probability of each label appearing in each
  mini-batch"): the mean over the epoch's full batches of the total-variation distance between a
  batch's label distribution and the training set's, *less* the same mean for batches drawn
  uniformly at random (its exact expectation, hypergeometric): a random shuffle's own sampling
  noise is not an error of the order. Taken literally (the distribution of the node at each position
  over the random roots and shifts) every shifted order is near uniform and the check would never
  bite. The error of a count is the mean over :data:`CHECK_DRAWS` orders (independent roots); its
  sampling noise (standard error over the batches) is about the size of the bound itself (the
  bound shrinks as 1/n, the noise as 1/sqrt(n)), so a count passes unless its error is above the
  bound by more than :data:`CHECK_Z` standard errors.
* Counts: 1, 2, 4, ... (doubling) up to :data:`MAX_SEQUENCES` ("hundreds", BGL) or the number of
  training nodes, searched by bisection for the least that passes (the error falls with the count;
  each try costs a BFS per draw, so ~4 tries, not BGL's one by one); when none passes, the largest.
* The sequences of a run are generated once and each epoch arranges them afresh
  (:class:`EpochOrders`); the count stays.
"""

from __future__ import annotations

import math

import numpy as np
import scipy.sparse as sp
from scipy.sparse.csgraph import connected_components
from scipy.special import gammaln

from dynagnn.sortedkeys import sort_groups

DEFAULT_SEQUENCES = 8     # the count when no labels choose one (the cache simulation)
MAX_SEQUENCES = 512       # the largest count the shuffling-error check tries
CHECK_DRAWS = 2           # orders (independent roots) averaged per count in the check
CHECK_Z = 2.0             # a count passes unless its error exceeds the bound by this many standard errors


def _as_train(train_nodes, num_nodes: int | None = None) -> np.ndarray:
    t = np.asarray(train_nodes, dtype=np.int64).ravel()
    if t.size and t.min() < 0:
        raise ValueError("training node ids must be >= 0")
    if num_nodes is not None and t.size and t.max() >= num_nodes:
        raise ValueError("training node ids must lie in [0, num_nodes)")
    _, first = sort_groups(t)
    if not first.all():
        raise ValueError("training nodes must be distinct")
    return t


def random_order(train_nodes, seed: int = 0) -> np.ndarray:
    """int64 [T]: a seeded uniform permutation of ``train_nodes`` (RO, the usual shuffle)."""
    t = _as_train(train_nodes)
    return t[np.random.default_rng(seed).permutation(t.size)]


def _first_occurrence(x: np.ndarray) -> np.ndarray:
    """Indices of the first occurrence of every distinct value of x, in increasing order."""
    order, first = sort_groups(x)
    return np.sort(order[first])


def bfs_visit_order(indptr: np.ndarray, indices: np.ndarray, roots: np.ndarray,
                    return_source: bool = False):
    """int64 [V]: the vertices reachable from ``roots`` in level-synchronous BFS order.

    Level 0 is ``roots`` (in the given order, repeats dropped); a level's vertices come in the order
    of their first discovery (by parent position, then adjacency order), as a FIFO-queue BFS visits
    them. ``return_source``: also int64 [V], the position in ``roots`` of the root whose search
    reached each vertex first (a multi-source BFS's regions).
    """
    n = indptr.size - 1
    visited = np.zeros(n, dtype=bool)
    roots = np.asarray(roots, dtype=np.int64)
    keep = _first_occurrence(roots)
    frontier, source = roots[keep], keep.astype(np.int64)
    visited[frontier] = True
    out, sources = [frontier], [source]
    while frontier.size:
        start = indptr[frontier]
        cnt = indptr[frontier + 1] - start
        tot = int(cnt.sum())
        if tot == 0:
            break
        seg_first = np.cumsum(cnt) - cnt
        pos = np.repeat(start - seg_first, cnt) + np.arange(tot, dtype=np.int64)
        cand = indices[pos]
        src = np.repeat(source, cnt)
        new = ~visited[cand]
        cand, src = cand[new], src[new]
        first = _first_occurrence(cand)
        cand, src = cand[first], src[first]
        visited[cand] = True
        out.append(cand)
        sources.append(src)
        frontier, source = cand, src
    visit = np.concatenate(out)
    return (visit, np.concatenate(sources)) if return_source else visit


def _components(indptr, indices) -> np.ndarray:
    n = indptr.size - 1
    a = sp.csr_matrix((np.ones(indices.size, dtype=np.int8), indices, indptr), shape=(n, n))
    return connected_components(a, directed=True, connection="weak")[1].astype(np.int64)


def bfs_sequences(indptr, indices, train_nodes, roots, rng: np.random.Generator,
                  components: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """BGL's BFS sequences from ``roots`` (s distinct training nodes), disjoint (module doc).

    Returns (nodes int64 [T], seq int64 [T]): every training node once, grouped by sequence
    (0..s-1), each sequence in its BFS visit order, followed by the components no root reaches
    (whole, each appended to a random sequence). ``components`` int [N]: connected-component labels
    (computed when None).
    """
    indptr = np.asarray(indptr, dtype=np.int64)
    indices = np.asarray(indices, dtype=np.int64)
    t = np.asarray(train_nodes, dtype=np.int64)
    roots = np.asarray(roots, dtype=np.int64)
    n, s = indptr.size - 1, roots.size
    visit, seq = bfs_visit_order(indptr, indices, roots, return_source=True)
    tail = np.zeros(visit.size, dtype=np.int64)     # 0: the roots' own search; then appended components
    reached = np.zeros(n, dtype=bool)
    reached[visit] = True
    rest = t[~reached[t]]
    if rest.size:
        if components is None:
            components = _components(indptr, indices)
        # one random training root per unreached component, components in random order
        rest = rest[rng.permutation(rest.size)]
        comp_roots = rest[_first_occurrence(components[rest])]
        v2, which = bfs_visit_order(indptr, indices, comp_roots, return_source=True)
        visit = np.concatenate([visit, v2])
        seq = np.concatenate([seq, rng.integers(0, s, comp_roots.size)[which]])
        tail = np.concatenate([tail, 1 + which])
    is_train = np.zeros(n, dtype=bool)
    is_train[t] = True
    keep = is_train[visit]
    visit, seq, tail = visit[keep], seq[keep], tail[keep]
    order = np.lexsort((tail, seq))        # by sequence, its own search first, then its components
    return visit[order], seq[order]


def proximity_order(indptr, indices, train_nodes, *, sequences: int | None = None,
                    seed: int = 0, components: np.ndarray | None = None) -> np.ndarray:
    """int64 [T]: BGL's proximity-aware ordering of ``train_nodes`` (every node exactly once).

    indptr int64 [N+1], indices int64 [nnz]: CSR of the (symmetric) graph. ``sequences`` disjoint
    BFS sequences from distinct random training roots (default :data:`DEFAULT_SEQUENCES`, at most
    T), each circularly shifted by a random offset, merged round-robin in proportion to their
    lengths (module doc). Slicing the result into consecutive batches gives BGL's PO mini-batches.
    """
    indptr = np.asarray(indptr, dtype=np.int64)
    indices = np.asarray(indices, dtype=np.int64)
    n = indptr.size - 1
    t = _as_train(train_nodes, n)
    if t.size == 0:
        return t.copy()
    s = DEFAULT_SEQUENCES if sequences is None else int(sequences)
    if s < 1:
        raise ValueError("sequences must be >= 1")
    s = min(s, t.size)
    rng = np.random.default_rng(seed)
    roots = t[rng.choice(t.size, size=s, replace=False)]
    nodes, _ = bfs_sequences(indptr, indices, t, roots, rng, components)
    return _take_turns(nodes, s, rng)


def _take_turns(nodes: np.ndarray, s: int, rng: np.random.Generator) -> np.ndarray:
    """``nodes`` (BFS sequences one after the other) circularly shifted at random, cut into ``s``
    equal sequences, merged round-robin (each advancing at the same relative pace)."""
    T = nodes.size
    nodes = np.roll(nodes, -int(rng.integers(T)))                       # circular shift
    piece = (np.arange(T, dtype=np.int64) * s) // T                     # s equal sequences
    length = np.bincount(piece, minlength=s)
    pos = np.arange(T, dtype=np.int64) - (np.cumsum(length) - length)[piece]
    key = (pos + rng.random(s)[piece]) / length[piece]                  # round-robin
    return nodes[np.lexsort((piece, key))]


def batch_label_skews(y: np.ndarray, batch_size: int, num_classes: int | None = None) -> np.ndarray:
    """float64 [k]: for each of the k full batches of ``y`` (int [T], labels in order), the
    total-variation distance between its label distribution and that of all of ``y``."""
    y = np.asarray(y, dtype=np.int64)
    b = int(batch_size)
    k = y.size // b
    if k == 0:
        return np.zeros(0)
    c = int(num_classes if num_classes is not None else y.max() + 1)
    q = np.bincount(y, minlength=c) / y.size
    counts = np.zeros((k, c))
    np.add.at(counts, (np.repeat(np.arange(k), b), y[:k * b]), 1.0)
    return 0.5 * np.abs(counts / b - q).sum(1)


def label_skew(y: np.ndarray, batch_size: int, num_classes: int | None = None) -> float:
    """The mean of :func:`batch_label_skews` (0 without a full batch)."""
    tv = batch_label_skews(y, batch_size, num_classes)
    return float(tv.mean()) if tv.size else 0.0


def random_label_skew(y: np.ndarray, batch_size: int) -> float:
    """The expectation of :func:`label_skew` for batches of ``batch_size`` drawn uniformly without
    replacement from ``y`` (each class count hypergeometric): a random shuffle's own sampling noise."""
    y = np.asarray(y, dtype=np.int64)
    b, T = int(batch_size), y.size
    if T < b or b == 0:
        return 0.0
    x = np.arange(b + 1, dtype=np.float64)

    def log_choose(n, k):
        return gammaln(n + 1) - gammaln(k + 1) - gammaln(n - k + 1)

    total = 0.0
    for n_c in np.bincount(y):
        if n_c:
            ok = (x <= n_c) & (b - x <= T - n_c)
            xs = x[ok]
            pmf = np.exp(log_choose(n_c, xs) + log_choose(T - n_c, b - xs) - log_choose(T, b))
            total += float((pmf * np.abs(xs / b - n_c / T)).sum())
    return 0.5 * total


def shuffling_error(y_ordered: np.ndarray, batch_size: int) -> float:
    """BGL's shuffling error of an order, from its labels (module doc): label skew beyond a shuffle's."""
    return label_skew(y_ordered, batch_size) - random_label_skew(y_ordered, batch_size)


def choose_sequences(indptr, indices, train_nodes, labels, batch_size: int, *, workers: int = 1,
                     num_train: int | None = None, seed: int = 0,
                     max_sequences: int = MAX_SEQUENCES) -> tuple[int, list[tuple[int, float]]]:
    """BGL's number of BFS sequences: the least count (1, 2, 4, ...) whose shuffling error is at most
    ``sqrt(batch_size * workers) / num_train`` (module doc).

    labels int [N] (the training nodes' must be >= 0); ``num_train``: the training nodes of all
    workers (default those given). Returns (count, [(count, error), ...] for every count tried).
    """
    indptr = np.asarray(indptr, dtype=np.int64)
    indices = np.asarray(indices, dtype=np.int64)
    t = _as_train(train_nodes, indptr.size - 1)
    if t.size == 0:
        return 1, []
    y = np.asarray(labels, dtype=np.int64)
    bound = math.sqrt(int(batch_size) * int(workers)) / int(num_train or t.size)
    components = _components(indptr, indices)
    top = max(1, min(int(max_sequences), t.size))
    counts = sorted({min(1 << i, top) for i in range(top.bit_length() + 1)})
    tried = []

    noise = random_label_skew(y[t], batch_size)

    def error(s: int) -> float:
        tv = np.concatenate([batch_label_skews(y[proximity_order(indptr, indices, t, sequences=s, components=components,
                                                                 seed=seed + 7919 * d)], batch_size)
                             for d in range(CHECK_DRAWS)])
        err = float(tv.mean()) - noise if tv.size else 0.0
        se = float(tv.std(ddof=1) / math.sqrt(tv.size)) if tv.size > 1 else 0.0
        tried.append((s, err))
        return err - CHECK_Z * se     # passes unless the error is significantly above the bound

    # binary search for the least passing count (the error falls as the count grows)
    lo, hi = 0, len(counts) - 1
    if error(counts[hi]) > bound:
        return counts[hi], tried
    while lo < hi:
        mid = (lo + hi) // 2
        if error(counts[mid]) <= bound:
            hi = mid
        else:
            lo = mid + 1
    return counts[lo], tried


ORDERS = ("random", "proximity")


class EpochOrders:
    """The order of ``train_nodes`` in every epoch, what sampled training and the cache simulation cut
    into mini-batches: ``orders(epoch)`` -> int64 [T].

    ``random``: a fresh shuffle per epoch (seeded by seed + epoch). ``proximity``: BGL's ``sequences``
    BFS sequences generated once (from ``seed``'s roots) and reused, each epoch arranged afresh (BGL:
    "constructs each training batch by introducing randomness and reusing generated sequences"):
    the sequences in a random order, a random circular shift and fresh turns, seeded by (seed, epoch).
    So the BFS, seconds on a graph of millions of vertices, runs once per run, not per epoch.
    """

    def __init__(self, order: str, indptr, indices, train_nodes, seed: int, sequences: int | None = None):
        if order not in ORDERS:
            raise ValueError(f"order must be one of {ORDERS}, not {order!r}")
        self.order, self.seed = order, int(seed)
        self.train = _as_train(train_nodes)
        if order == "proximity" and self.train.size:
            indptr = np.asarray(indptr, dtype=np.int64)
            t = _as_train(self.train, indptr.size - 1)
            s = DEFAULT_SEQUENCES if sequences is None else int(sequences)
            if s < 1:
                raise ValueError("sequences must be >= 1")
            self.sequences = min(s, t.size)
            rng = np.random.default_rng(self.seed)
            roots = t[rng.choice(t.size, size=self.sequences, replace=False)]
            self.nodes, self.seq = bfs_sequences(indptr, indices, t, roots, rng)

    def __call__(self, epoch: int) -> np.ndarray:
        if self.order == "random" or self.train.size == 0:
            return random_order(self.train, self.seed + epoch)
        rng = np.random.default_rng([self.seed, int(epoch)])
        regions = np.argsort(rng.permutation(self.sequences)[self.seq], kind="stable")
        return _take_turns(self.nodes[regions], self.sequences, rng)


def epoch_order(order: str, indptr, indices, train_nodes, seed: int, epoch: int,
                sequences: int | None = None) -> np.ndarray:
    """int64 [T]: the training nodes of ``epoch`` in ``order`` (one epoch of :class:`EpochOrders`)."""
    return EpochOrders(order, indptr, indices, train_nodes, seed, sequences)(epoch)
