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

from dynagnn.graph.sortedkeys import unique_sorted


class TemporalNeighbors:
    """Per-vertex, time-sorted interaction lists of an event stream (a temporal CSR).

    src, dst: int64 [E] event endpoints (dense ids < num_nodes); t: int64 or float64 [E] event
    times (need not be sorted; ties keep event order). ``undirected=True`` lists every event
    under both endpoints (u sees v and v sees u), as TGL does for sampling; otherwise only
    ``src`` sees ``dst``.

    Attributes, all over the M = E (directed) or 2E (undirected) interaction entries, sorted by
    (vertex, time, event index):
      indptr int64 [N+1]: entries of vertex v are ``indptr[v]:indptr[v+1]``;
      nbr int64 [M]: the other endpoint; time [M]: the event time; eid int64 [M]: the event index.
    """

    def __init__(self, src: np.ndarray, dst: np.ndarray, t: np.ndarray, num_nodes: int,
                 undirected: bool = True) -> None:
        src = np.asarray(src, dtype=np.int64)
        dst = np.asarray(dst, dtype=np.int64)
        t = np.asarray(t)
        if not (src.shape == dst.shape == t.shape) or src.ndim != 1:
            raise ValueError("src, dst and t must be 1-D arrays of the same length")
        self.num_nodes = int(num_nodes)
        n_ev = src.size
        if undirected:
            # interleave (src->dst, dst->src) of each event so that event order is kept
            vertex = np.stack([src, dst], axis=1).ravel()
            nbr = np.stack([dst, src], axis=1).ravel()
            eid = np.repeat(np.arange(n_ev, dtype=np.int64), 2)
            time = np.repeat(t, 2)
        else:
            vertex, nbr, eid, time = src, dst, np.arange(n_ev, dtype=np.int64), t
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
        self.indptr = np.zeros(self.num_nodes + 1, dtype=np.int64)
        np.cumsum(np.bincount(self.vertex, minlength=self.num_nodes), out=self.indptr[1:])
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
