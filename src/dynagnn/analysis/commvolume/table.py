"""The ``volume`` table of the analyze stage: per scheme, partitioner, worker count, layer, direction
and component, the closed form (:mod:`.closed`) beside the count (:mod:`.counted`)."""

from __future__ import annotations

import logging

import numpy as np
import pandas as pd

from ...errors import InputError
from ...graph import partition as gp
from ...splits import minmax_ranges
from .base import Volume, gnn_params, layer_widths, rnn_params
from .closed import (blad_paper_vertex_volume, esdg_paper_volume, group_halo_volume, hash_part_sizes,
                     paper_sven_volumes, ring_allreduce_volume, snapshot_redistribution_volume, sven_volumes,
                     vertex_volume_hash)
from .counted import (count_group_halo, count_ring_allreduce, count_snapshot_redistribution, count_sven_volumes,
                      count_vertex_volume, sven_batches, sven_stats)

log = logging.getLogger(__name__)

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
    from ...data.store import open_store
    from ..partitions import _vertex_parts

    store = open_store(store_path)
    N, T = store.num_nodes, store.num_snapshots
    # the store's (source, target) edges as they are: v = source is sent to every other part owning
    # a target of v, the rows of Â (indexed [target, source], :mod:`dynagnn.graph.csr`) that read
    # it: the halo the vertex strategy receives
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
    from ..redundancy import _sample_all

    roots, nbrs = _sample_all(events, N, model["neighbors"], None)
    rows = []
    for M in workers:
        b = sven_batches(roots, nbrs, model["batch_size"], M)
        if b.batches == 0:
            log.warning("Sven volume: fewer than %d events, no full batch", model["batch_size"])
            continue
        owner = gp.hash_partition(N, M, seed=seed)
        stats = sven_stats(b)
        modelled = sven_volumes(stats, hash_part_sizes(N, M), N, model["memory_dim"], model["edge_dim"],
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
    from ...data.store import open_store
    from ..partitions import VERTEX_METHODS, check_workers, union_graph

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
