"""Temporal neighbour sampling over an event stream (TGN's and Sven's "most recent" sampler).

A TGNN mini-batch (Sven, J/C §2, Algorithm 1) is a chronological slice of events; for every vertex
occurrence v(t) of the batch the temporal sampler returns past interactions of v, i.e. neighbours
u with an event (v, u, t') at t' < t. Sven reuses TGL's sampler; following TGL/TGN we implement the
deterministic *most recent* policy: the k latest interactions strictly before t.

:class:`TemporalNeighbors` builds, once, a CSR of each vertex's interactions sorted by time, and
answers a batch of (node, time) queries with one ``searchsorted`` over a global composite key
``vertex * U + rank(time)`` (U distinct event times), so there is no Python loop over queries.
"""

from __future__ import annotations

import numpy as np

from dynagnn.sortedkeys import row_offsets, unique_sorted


class TemporalNeighbors:
    """Per-vertex, time-sorted interaction lists of an event stream (a temporal CSR).

    src, dst: int64 [E] event endpoints (dense ids < num_nodes); t: int64 or float64 [E] event
    times (need not be sorted; ties keep event order). ``undirected=True`` lists every event
    under both endpoints (u sees v and v sees u), as TGL does for sampling; otherwise only
    ``src`` sees ``dst``. ``event_ids`` int64 [E]: the id each event reports in ``eid`` (default
    its index; a sampler over a subset of a stream passes the events' stream indices).

    Attributes, all over the M = E (directed) or 2E (undirected) interaction entries, sorted by
    (vertex, time, event index):
      indptr int64 [N+1]: entries of vertex v are ``indptr[v]:indptr[v+1]``;
      nbr int64 [M]: the other endpoint; time [M]: the event time; eid int64 [M]: the event index.
    """

    def __init__(self, src: np.ndarray, dst: np.ndarray, t: np.ndarray, num_nodes: int,
                 undirected: bool = True, event_ids: np.ndarray | None = None) -> None:
        src = np.asarray(src, dtype=np.int64)
        dst = np.asarray(dst, dtype=np.int64)
        t = np.asarray(t)
        if not (src.shape == dst.shape == t.shape) or src.ndim != 1:
            raise ValueError("src, dst and t must be 1-D arrays of the same length")
        self.num_nodes = int(num_nodes)
        n_ev = src.size
        ids = np.arange(n_ev, dtype=np.int64) if event_ids is None else np.asarray(event_ids, dtype=np.int64)
        if ids.shape != src.shape:
            raise ValueError("event_ids must have one id per event")
        if undirected:
            # interleave (src->dst, dst->src) of each event so that event order is kept
            vertex = np.stack([src, dst], axis=1).ravel()
            nbr = np.stack([dst, src], axis=1).ravel()
            eid = np.repeat(ids, 2)
            time = np.repeat(t, 2)
        else:
            vertex, nbr, eid, time = src, dst, ids, t
        if vertex.size and (vertex.min() < 0 or vertex.max() >= self.num_nodes):
            raise ValueError("node ids must lie in [0, num_nodes)")
        # sort by (vertex, time, event index): stable sort by time, then stable sort by vertex
        if time.size > 1 and not np.all(time[1:] >= time[:-1]):
            o = np.argsort(time, kind="stable")
            vertex, nbr, eid, time = vertex[o], nbr[o], eid[o], time[o]
        o = np.argsort(vertex, kind="stable")
        self.vertex = vertex[o]
        self.nbr = nbr[o]
        self.eid = eid[o]
        self.time = time[o]
        self.indptr = row_offsets(self.vertex, self.num_nodes)
        # composite key vertex * U + rank(time): sorted, so one searchsorted answers all queries
        self._times = unique_sorted(self.time)
        u = max(int(self._times.size), 1)
        if self.num_nodes * (u + 1) >= np.iinfo(np.int64).max:
            raise OverflowError("num_nodes * distinct times does not fit in int64")
        self._u = u
        self._key = self.vertex * u + np.searchsorted(self._times, self.time)

    @classmethod
    def from_events(cls, events, num_nodes: int, undirected: bool = True) -> TemporalNeighbors:
        """Build from an :class:`~dynagnn.data.types.EventStream`."""
        return cls(events.src, events.dst, events.t, num_nodes, undirected=undirected)

    def history_end(self, nodes: np.ndarray, times: np.ndarray) -> np.ndarray:
        """int64 [B]: for each query, the end (exclusive) in the CSR of the node's entries with
        time strictly before the query time; the node's history is ``indptr[node]:end``."""
        nodes = np.asarray(nodes, dtype=np.int64)
        qr = np.searchsorted(self._times, np.asarray(times), side="left")  # ranks < qr are < t
        return np.searchsorted(self._key, nodes * self._u + qr, side="left")

    def most_recent(self, nodes: np.ndarray, times: np.ndarray, k: int
                    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The k most recent neighbours of each node strictly before each query time.

        nodes: int64 [B]; times: [B] (same kind as the event times); k >= 0.
        Returns (neighbors int64 [B, k], edge_times [B, k], counts int64 [B]). Row i holds the
        ``counts[i] = min(k, |history|)`` latest interactions, most recent first (ties in time:
        the later event first); the rest of the row is padded with -1 in both arrays (edge_times
        has the event times' dtype). Interactions at exactly the query time are excluded, so a
        batch never sees its own events (TGN's/Sven's temporal causality).
        """
        nodes = np.asarray(nodes, dtype=np.int64)
        b = nodes.size
        end = self.history_end(nodes, times)
        start = self.indptr[nodes]
        counts = np.minimum(end - start, k).astype(np.int64)
        idx = end[:, None] - 1 - np.arange(k, dtype=np.int64)[None, :]  # [B, k]
        valid = np.arange(k)[None, :] < counts[:, None]
        idx = np.where(valid, idx, 0)
        neighbors = np.full((b, k), -1, dtype=np.int64)
        edge_times = np.full((b, k), -1, dtype=self.time.dtype)
        if self.nbr.size:
            neighbors[valid] = self.nbr[idx[valid]]
            edge_times[valid] = self.time[idx[valid]]
        return neighbors, edge_times, counts

    def most_recent_events(self, nodes: np.ndarray, times: np.ndarray, k: int
                           ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """:meth:`most_recent` with the event of each entry: (neighbors int64 [B, k], edge_times
        float64 [B, k], event ids int64 [B, k]), -1 padded (for the edge features of a TGNN's
        attention)."""
        nodes = np.asarray(nodes, dtype=np.int64)
        neighbors, edge_times, counts = self.most_recent(nodes, times, k)
        end = self.history_end(nodes, times)
        idx = end[:, None] - 1 - np.arange(k, dtype=np.int64)[None, :]
        valid = np.arange(k)[None, :] < counts[:, None]
        eid = np.full(neighbors.shape, -1, dtype=np.int64)
        eid[valid] = self.eid[idx[valid]]
        return neighbors, edge_times.astype(np.float64), eid


# --------------------------------------------------------------------------------------------
# Static-graph neighbour sampling (GraphSAGE / DGL style, as BGL trains with)
# --------------------------------------------------------------------------------------------

from typing import NamedTuple  # noqa: E402



def batch_rng(seed: int, epoch: int, batch: int) -> np.random.Generator:
    """The generator of mini-batch ``batch`` of ``epoch``: sampled training and the cache simulation
    (:mod:`dynagnn.analysis.cache`) draw the same neighbours for it."""
    return np.random.default_rng([int(seed), int(epoch), int(batch)])


class SampledHop(NamedTuple):
    """One hop of a sampled mini-batch.

    nodes int64 [F]: the hop's (sorted, distinct) destination nodes; hop 0 holds the seeds.
    nbr_ptr int64 [F+1]: neighbours sampled for ``nodes[i]`` are ``nbrs[nbr_ptr[i]:nbr_ptr[i+1]]``.
    nbrs int64 [S]: sampled neighbour ids (distinct within one node's list, since sampling is
    without replacement and the CSR has no duplicate edges).
    """

    nodes: np.ndarray
    nbr_ptr: np.ndarray
    nbrs: np.ndarray


class NeighborSampler:
    """Uniform multi-hop neighbour sampler over a static CSR graph (GraphSAGE, DGL, BGL).

    indptr int64 [N+1], indices int64 [nnz]: the CSR (neighbours of v are
    ``indices[indptr[v]:indptr[v+1]]``). ``fanouts[h]`` neighbours are drawn for every node of
    hop h, hop 0 being the seeds (so (15, 10, 5) takes 15 neighbours of each seed, 10 of each
    node reached then, 5 of the next). Each node gets ``min(degree, fanout)`` neighbours drawn
    uniformly *without replacement*: a random 32-bit key per candidate edge and a segment-wise
    top-k through one argsort of the composite key ``segment * 2**32 + key``; nodes of degree
    <= fanout keep all their neighbours. As in DGL, the next hop's nodes are the union of this
    hop's nodes and their sampled neighbours (a GraphSAGE layer also reads the node's own
    feature), so the last hop's union is the set of input nodes.

    Deterministic: the generator is seeded once in the constructor and advanced by every call,
    so the same seed and the same sequence of calls give the same samples.
    """

    def __init__(self, indptr: np.ndarray, indices: np.ndarray, fanouts=(15, 10, 5),
                 seed: int = 0) -> None:
        self.indptr = np.asarray(indptr, dtype=np.int64)
        self.indices = np.asarray(indices, dtype=np.int64)
        if self.indptr.ndim != 1 or self.indptr.size < 1 or self.indptr[-1] != self.indices.size:
            raise ValueError("indptr must be 1-D with indptr[-1] == len(indices)")
        self.fanouts = tuple(int(f) for f in fanouts)
        if any(f < 0 for f in self.fanouts):
            raise ValueError("fanouts must be >= 0")
        self.num_nodes = self.indptr.size - 1
        self.rng = np.random.default_rng(seed)

    def _sample_hop(self, nodes: np.ndarray, k: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
        """(nbr_ptr [F+1], nbrs [S]) with min(deg, k) uniform neighbours per node."""
        start = self.indptr[nodes]
        deg = self.indptr[nodes + 1] - start
        take = np.minimum(deg, k)
        nbr_ptr = np.zeros(nodes.size + 1, dtype=np.int64)
        np.cumsum(take, out=nbr_ptr[1:])
        nbrs = np.empty(int(nbr_ptr[-1]), dtype=np.int64)
        # nodes with deg <= k: all neighbours, copied in CSR order
        full = deg <= k
        if full.any():
            fi = np.flatnonzero(full)
            cnt = deg[fi]
            tot = int(cnt.sum())
            seg_first = np.cumsum(cnt) - cnt
            within = np.arange(tot, dtype=np.int64) - np.repeat(seg_first, cnt)
            src = np.repeat(start[fi], cnt) + within
            dst = np.repeat(nbr_ptr[fi], cnt) + within
            nbrs[dst] = self.indices[src]
        # nodes with deg > k: random key per candidate edge, k smallest keys per segment
        part = ~full
        if part.any() and k > 0:
            pi = np.flatnonzero(part)
            cnt = deg[pi]
            tot = int(cnt.sum())
            seg = np.repeat(np.arange(pi.size, dtype=np.int64), cnt)
            seg_first = np.cumsum(cnt) - cnt
            within = np.arange(tot, dtype=np.int64) - seg_first[seg]
            key = (seg << 32) | rng.integers(0, 1 << 32, size=tot, dtype=np.int64)
            o = np.argsort(key, kind="stable")          # grouped by segment, random within
            rank = np.arange(tot, dtype=np.int64) - seg_first[seg]  # seg[o] == seg (sorted)
            keep = rank < k
            edges = o[keep]                              # candidate positions, k per segment
            s = seg[edges]
            dst = nbr_ptr[pi][s] + rank[keep]
            nbrs[dst] = self.indices[start[pi][s] + within[edges]]
        return nbr_ptr, nbrs

    def sample(self, seeds: np.ndarray, rng: np.random.Generator | None = None) -> list[SampledHop]:
        """Sample the multi-hop neighbourhood of ``seeds`` (int64 [B], duplicates allowed).

        ``rng``: the generator of this call (default the sampler's own): a mini-batch seeded by its
        own key (:func:`batch_rng`) samples the same whichever process samples it, and in any order.

        Returns ``len(fanouts)`` :class:`SampledHop` records, hop 0 first (the seeds, sorted
        and deduplicated), each next hop's ``nodes`` being ``unique(nodes ∪ nbrs)`` of the
        previous one.
        """
        seeds = np.asarray(seeds, dtype=np.int64).ravel()
        if seeds.size and (seeds.min() < 0 or seeds.max() >= self.num_nodes):
            raise ValueError("seed ids must lie in [0, num_nodes)")
        nodes = unique_sorted(seeds)
        rng = self.rng if rng is None else rng
        hops = []
        for k in self.fanouts:
            nbr_ptr, nbrs = self._sample_hop(nodes, k, rng)
            hops.append(SampledHop(nodes, nbr_ptr, nbrs))
            nodes = unique_sorted(np.concatenate([nodes, nbrs]), in_place=True)
        return hops

    @staticmethod
    def hops_input_nodes(hops: list[SampledHop]) -> np.ndarray:
        """int64 [M] sorted distinct ids of every node in ``hops`` (seeds and all neighbours)."""
        if not hops:
            return np.zeros(0, dtype=np.int64)
        return unique_sorted(np.concatenate([hops[-1].nodes, hops[-1].nbrs]), in_place=True)

    def input_nodes(self, seeds: np.ndarray, rng: np.random.Generator | None = None) -> np.ndarray:
        """int64 [M]: sorted distinct vertices whose features the mini-batch of ``seeds`` needs
        (the seeds and every sampled neighbour over all hops); draws one :meth:`sample`."""
        hops = self.sample(seeds, rng)
        if not hops:
            return unique_sorted(np.asarray(seeds, dtype=np.int64).ravel())
        return self.hops_input_nodes(hops)
