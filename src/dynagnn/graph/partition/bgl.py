"""BGL (NSDI'23 §3.3): BFS-block coarsening, the small-block merge and the greedy block assignment."""

from __future__ import annotations

import math

import numpy as np

from dynagnn.errors import InputError
from dynagnn.sortedkeys import row_offsets, unique_inverse

from .base import check_edges, check_parts, gather


def bfs_blocks(row, col, N: int, block_size: int, seed: int = 0) -> np.ndarray:
    """BGL step 1: BFS blocks, then the small-block merge. Returns block ids int64 [N] (0..B-1).

    - BFS: repeatedly a random unvisited vertex starts a BFS over unvisited vertices (one source at a
      time; the paper's sources run concurrently, which only changes which vertex wins a tie). The
      block is finished when it holds ``block_size`` vertices (the last BFS level is cut in BFS
      order) or the BFS runs out. Isolated vertices are singleton blocks (vectorised).
    - Merge: large blocks are the top 10% by size, where every block at least as big as the block of
      rank ceil(0.1 B) counts as large (so equal-sized full blocks are all large and never merged
      into one another). Each small block joins the large block it shares most edges with (ties: the
      larger block, then the lower id). Small blocks with no large neighbour are "merged randomly":
      shuffled and packed in runs of up to ``block_size`` vertices (packing keeps the blocks the
      assigner sees about ``block_size`` big, which merging them all into one block would not).
    """
    rng = np.random.default_rng(seed)
    ptr = row_offsets(row, N)
    deg = ptr[1:] - ptr[:-1]
    block = np.full(N, -1, dtype=np.int64)
    nb = 0
    visited = deg == 0  # isolated vertices: handled after the BFS loop
    order = rng.permutation(np.flatnonzero(~visited))
    pos = 0
    while pos < order.size:
        src = order[pos]
        pos += 1
        if visited[src]:
            continue
        visited[src] = True
        members = [np.array([src])]
        size = 1
        frontier = np.array([src])
        while size < block_size and frontier.size:
            nbr = gather(ptr, col, frontier)
            nbr = nbr[~visited[nbr]]
            if nbr.size == 0:
                break
            # distinct, kept in BFS (first-seen) order
            u, first_idx = unique_inverse(nbr)
            firsts = np.full(u.size, nbr.size, dtype=np.int64)
            np.minimum.at(firsts, first_idx, np.arange(nbr.size))
            nxt = nbr[np.sort(firsts)]
            nxt = nxt[: block_size - size]
            visited[nxt] = True
            members.append(nxt)
            size += nxt.size
            frontier = nxt
        block[np.concatenate(members)] = nb
        nb += 1
    iso = np.flatnonzero(deg == 0)
    block[iso] = nb + np.arange(iso.size)
    nb += iso.size
    if nb == 0:
        return block

    # ---- merge small blocks into their most-touching large neighbour
    sizes = np.bincount(block, minlength=nb)
    n_large = max(1, math.ceil(0.1 * nb))
    thresh = np.sort(sizes)[::-1][n_large - 1]
    large = (sizes >= thresh) & (sizes > 1)  # singletons (isolated vertices) are never large
    target = np.arange(nb, dtype=np.int64)
    br, bc = block[row], block[col]
    sel = ~large[br] & large[bc]
    if sel.any():
        keys, inv = unique_inverse(br[sel] * nb + bc[sel])
        cnt = np.bincount(inv)
        s_blk, l_blk = keys // nb, keys % nb
        # best large neighbour per small block: most edges, then biggest, then lowest id
        o = np.lexsort((l_blk, -sizes[l_blk], -cnt, s_blk))
        s_sorted = s_blk[o]
        first = np.ones(o.size, dtype=bool)
        first[1:] = s_sorted[1:] != s_sorted[:-1]
        target[s_sorted[first]] = l_blk[o][first]
    orphans = np.flatnonzero(~large & (target == np.arange(nb)))
    new_id = np.full(nb, -1, dtype=np.int64)
    large_ids = np.flatnonzero(large)
    new_id[large_ids] = np.arange(large_ids.size)
    nxt_id = large_ids.size
    if orphans.size:
        orphans = rng.permutation(orphans)
        cum = np.cumsum(sizes[orphans]) - sizes[orphans]  # start offset of each orphan block
        new_id[orphans] = nxt_id + cum // max(1, block_size)
        # compact the packed ids
        u, inv = unique_inverse(new_id[orphans])
        new_id[orphans] = nxt_id + inv
    merged = ~large & (target != np.arange(nb))
    new_id[merged] = new_id[target[merged]]
    return new_id[block]


def _block_hop_csr(bblock_r, bblock_c, nb, hops):
    """Per hop j = 1..hops, CSR (ptr, idx) of the blocks at exactly j hops from each block."""
    from scipy import sparse

    keep = bblock_r != bblock_c
    A = sparse.csr_matrix((np.ones(int(keep.sum()), dtype=np.int32), (bblock_r[keep], bblock_c[keep])),
                          shape=(nb, nb))
    A.data[:] = 1
    A.sum_duplicates()
    A.data[:] = 1
    reach = (A + sparse.identity(nb, dtype=np.int32, format="csr")).tocsr()
    reach.data[:] = 1
    out = [(A.indptr.astype(np.int64), A.indices.astype(np.int64))]
    cur = A
    for _ in range(2, hops + 1):
        nxt = (cur @ A).tocsr()
        nxt.data[:] = 1
        nxt = nxt - nxt.multiply(reach)  # exactly j hops: drop self and nearer blocks
        nxt.eliminate_zeros()
        nxt = nxt.tocsr()
        reach = reach + nxt
        reach.data[:] = 1
        out.append((nxt.indptr.astype(np.int64), nxt.indices.astype(np.int64)))
        cur = nxt
    return out


def bgl_partition(row, col, N: int, P: int, train_mask=None, *, block_size: int | None = None,
                  hops: int = 2, alpha: float = 1.0, seed: int = 0) -> np.ndarray:
    """BGL partition: BFS-block coarsening (:func:`bfs_blocks`) + greedy block assignment.

    Blocks are assigned one by one in decreasing size order (the paper gives no order; big blocks
    first is the usual greedy bin-packing order; ties by block id). Block B goes to the part i with
    the largest score (BGL §3.3.2)::

        (sum_{j=1..hops} alpha**(j-1) * |P(i) ∩ Γ^j(B)|) * max(0, 1 - |T(i)|/C_T) * max(0, 1 - |P(i)|/C)

    - Γ^j(B): blocks at exactly j hops from B in the block graph; |P(i) ∩ Γ^j(B)| counts blocks.
      ``alpha`` = 1 is the paper's plain sum; other values decay farther hops (an ablation knob).
    - |P(i)| and |T(i)| count original vertices / training vertices already in part i; C = N/P,
      C_T = |train|/P (train_mask None: every vertex is a training vertex; no training vertex: the
      training factor is 1). The penalties are clamped at 0 (two negatives would multiply to +).
    - Ties (cold start: no neighbour assigned yet, or every score 0): the largest penalty product,
      then the smallest part, then the lowest part id.

    Default ``block_size`` is max(1, N // (8 P)). Returns parts int64 [N].
    """
    N, P = check_parts(N, P)
    row, col = check_edges(row, col, N)
    if hops < 1:
        raise InputError(f"hops must be >= 1, got {hops}")
    if block_size is None:
        block_size = max(1, N // (8 * P))
    block_size = int(block_size)
    if block_size < 1:
        raise InputError(f"block_size must be >= 1, got {block_size}")
    if train_mask is None:
        train = np.ones(N, dtype=bool)
    else:
        train = np.asarray(train_mask, dtype=bool).ravel()
        if train.size != N:
            raise InputError(f"train_mask has {train.size} entries for {N} vertices")
    if P == 1:
        return np.zeros(N, dtype=np.int64)

    block = bfs_blocks(row, col, N, block_size, seed)
    nb = int(block.max()) + 1
    bsize = np.bincount(block, minlength=nb).astype(np.float64)
    btrain = np.bincount(block, weights=train.astype(np.float64), minlength=nb)
    hop_csr = _block_hop_csr(block[row], block[col], nb, hops)
    C = N / P
    n_train = float(train.sum())
    C_T = n_train / P
    # H[j][b, i] = number of blocks at j hops from b assigned to part i so far
    H = np.zeros((nb, P), dtype=np.float64)
    weights = [alpha ** j for j in range(hops)]
    psize = np.zeros(P)
    ptrain = np.zeros(P)
    assign = np.full(nb, -1, dtype=np.int64)
    for b in np.lexsort((np.arange(nb), -bsize)):
        pen = np.maximum(0.0, 1.0 - psize / C)
        if C_T > 0:
            pen = pen * np.maximum(0.0, 1.0 - ptrain / C_T)
        score = H[b] * pen
        i = int(np.lexsort((np.arange(P), psize, -pen, -score))[0])
        assign[b] = i
        psize[i] += bsize[b]
        ptrain[i] += btrain[b]
        for w, (ptr, idx) in zip(weights, hop_csr):
            H[idx[ptr[b]:ptr[b + 1]], i] += w
    return assign[block]
