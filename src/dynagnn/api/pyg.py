"""The Python API's bridge from PyTorch Geometric: :func:`from_pyg` hands an in-memory ``TemporalData``
or a PyG Temporal signal to ingest's path after the read (:func:`dynagnn.data.ingest.ingest_graph`)."""

from __future__ import annotations

import logging
from pathlib import Path

from dynagnn.errors import ConfigError, one_line

log = logging.getLogger("dynagnn")

def from_pyg(data, out, *, name: str = "pyg", time_unit: str = "index", threads: int = 1, **discretize) -> Path:
    r"""Write a PyTorch Geometric temporal graph held in memory as a snapshot store, with no file in between.

    Two kinds of object are read, by their attributes (PyTorch Geometric need not be installed):

    - a :class:`torch_geometric.data.TemporalData` (``src``, ``dst``, ``t``; optional ``msg``, the
      events' features, and ``y``, one integer label per event): an event stream, stored as
      ``events/`` (the event models, ``tgn``, ``jodie``, ``apan``, train on it with
      ``strategy="events"``) and cut into snapshots for the snapshot models;
    - a PyTorch Geometric Temporal signal: ``StaticGraphTemporalSignal`` (``edge_index`` [2, E],
      ``edge_weight``, ``features`` and ``targets``: one array per step),
      ``DynamicGraphTemporalSignal`` (``edge_indices``, ``edge_weights``: one per step) or
      ``DynamicGraphStaticSignal`` (one ``feature`` matrix): its steps are the store's snapshots
      (a static graph repeated in each), ``features`` its node features [T, N, F] and ``targets``
      its labels [T, N] (integer targets: classification, float: regression).

    The store is built by ingest's own path after reading (the same checks, discretisation,
    features and atomic write as ``dynagnn ingest``); its checksum hashes the object's arrays.

    Args:
        data (TemporalData or a PyG-Temporal signal): the graph.
        out (str or pathlib.Path): the store to write (a ``.zarr`` folder).
        name (str): the dataset's name in the store. (default: ``"pyg"``)
        time_unit (str): what one unit of the times means (``"s"``, ``"day"``; a signal's steps
            are ``"index"``). (default: ``"index"``)
        threads (int): threads for discretising and writing. (default: :obj:`1`)
        **discretize: keys of a dataset's entry in config.yaml: ``snapshots`` (for TemporalData:
            ``{"by": "time", "width": W}`` or ``{"by": "count", "size": S}``; without it the
            store holds one snapshot of all the events, enough for the event models but not for a
            snapshot model), ``directed`` (False symmetrises the snapshots), ``features``
            (TemporalData has no node features: ``{"kind": "degree", "dim": 32}`` by default),
            ``edge_weight``, ``self_loops``, ``duplicates``, ``edge_life``, ``m_product``.

    Returns:
        pathlib.Path: the store's path.

    Example:
        >>> from torch_geometric.data import TemporalData
        >>> data = TemporalData(src=src, dst=dst, t=t, msg=msg)
        >>> store = dynagnn.from_pyg(data, "events.zarr", snapshots={"by": "count", "size": 500})
        >>> dynagnn.fit(store, model="tgn", strategy="events", epochs=3)
    """
    from dynagnn.data.ingest import ingest_graph

    spec = _pyg_spec(discretize)
    if _is_temporal_data(data):
        raw, arrays = _events_graph(data)
        spec = {"format": "pyg-temporaldata", **spec}
        if "snapshots" not in spec:
            spec["snapshots"] = {"by": "count", "size": len(raw.events)}
            log.info("from_pyg: no snapshots given: one snapshot of all %d events (give snapshots={'by': 'time', "
                     "'width': W} for the snapshot models)", len(raw.events))
    elif _is_signal(data):
        raw, arrays = _signal_graph(data)
        spec = {"format": "pyg-temporal-signal", **spec}
    else:
        raise ConfigError(f"from_pyg: a {type(data).__name__} is neither a PyTorch Geometric TemporalData (src, dst, t) "
                          "nor a PyTorch Geometric Temporal signal (edge_index or edge_indices, features, targets)")
    raw.name, raw.time_unit = name, time_unit
    return ingest_graph(raw, spec, out, name=name, threads=threads, source_checksum=_arrays_checksum(arrays))


def _pyg_spec(discretize: dict) -> dict:
    """``discretize`` checked against the schema of a dataset entry's keys (those that are not about
    a source file), in one line naming the key."""
    from dynagnn.config import check_schema, load_schema

    props = load_schema()["$defs"]["dataset"]["properties"]
    keep = {k: v for k, v in props.items() if k not in ("format", "path", "options", "generator", "params")}
    check_schema({"type": "object", "additionalProperties": False, "properties": keep}, discretize, "from_pyg")
    win = discretize.get("snapshots") or {}
    if win.get("by") == "time" and "width" not in win:
        raise ConfigError("from_pyg snapshots: by time needs a width (in the events' time unit)")
    if win.get("by") == "count" and "size" not in win:
        raise ConfigError("from_pyg snapshots: by count needs a size (events per snapshot)")
    return dict(discretize)


def _is_temporal_data(data) -> bool:
    """TemporalData's attributes (its ``edge_index`` is a property that stacks src and dst: not asked)."""
    return all(hasattr(data, a) for a in ("src", "dst", "t"))


def _is_signal(data) -> bool:
    """A PyG-Temporal signal's attributes: a graph (one, or one per step), features and targets."""
    graph = hasattr(data, "edge_indices") or hasattr(data, "edge_index")
    return graph and hasattr(data, "targets") and (hasattr(data, "features") or hasattr(data, "feature"))


def _numpy(value, what: str):
    """``value`` (a torch tensor, a numpy array or a list) as a numpy array; InputError naming ``what``."""
    import numpy as np

    from dynagnn.errors import InputError

    if hasattr(value, "detach"):
        value = value.detach().cpu().numpy()
    try:
        return np.asarray(value)
    except (TypeError, ValueError) as exc:
        raise InputError(f"from_pyg: {what}: not an array ({one_line(exc)})") from None


def _events_graph(data):
    """The RawGraph of a TemporalData's events (time-sorted, stably) and the arrays it was made of."""
    import numpy as np

    from dynagnn.data.types import EventStream, RawGraph
    from dynagnn.errors import InputError

    src, dst, t = (_numpy(getattr(data, a), f"TemporalData.{a}") for a in ("src", "dst", "t"))
    for what, arr in (("src", src), ("dst", dst), ("t", t)):
        if arr.ndim != 1 or arr.shape[0] != src.shape[0]:
            raise InputError(f"from_pyg: TemporalData.{what} has shape {list(arr.shape)}; src, dst and t must be "
                             f"[E] alike (src is {list(src.shape)})")
    if src.size == 0:
        raise InputError("from_pyg: the TemporalData has no events")
    for what, arr in (("src", src), ("dst", dst)):
        if arr.dtype.kind not in "iu":
            raise InputError(f"from_pyg: TemporalData.{what} is {arr.dtype}, not integer node ids")
        if arr.min() < 0:
            raise InputError(f"from_pyg: TemporalData.{what} has node id {int(arr.min())} < 0")
    if t.dtype.kind not in "iuf":
        raise InputError(f"from_pyg: TemporalData.t is {t.dtype}, not numbers")
    t = t.astype(np.int64 if t.dtype.kind in "iu" else np.float64)
    msg = _optional(data, "msg")
    if msg is not None:
        msg = _numpy(msg, "TemporalData.msg")
        if msg.shape[:1] != src.shape or msg.ndim > 2:
            raise InputError(f"from_pyg: TemporalData.msg has shape {list(msg.shape)}; expected [E] or [E, F] "
                             f"with E = {src.shape[0]} events")
        msg = msg.reshape(src.shape[0], -1).astype(np.float32)
    y = _optional(data, "y")
    if y is not None:
        y = _numpy(y, "TemporalData.y")
        if y.shape != src.shape:
            raise InputError(f"from_pyg: TemporalData.y has shape {list(y.shape)}; expected one label per event "
                             f"[{src.shape[0]}]")
        if y.dtype.kind not in "iub" and not (y.dtype.kind == "f" and np.array_equal(y, np.round(y))):
            raise InputError(f"from_pyg: TemporalData.y is {y.dtype} with fractional values; the store keeps one "
                             "integer label per event")
        y = y.astype(np.int64)
    order = None
    if (np.diff(t) < 0).any():
        order = np.argsort(t, kind="stable")
        log.info("from_pyg: the events were not in time order: sorted (a stable sort keeps equal times in order)")
        src, dst, t = src[order], dst[order], t[order]
        msg = None if msg is None else msg[order]
        y = None if y is None else y[order]
    n = int(max(src.max(), dst.max())) + 1
    events = EventStream(src.astype(np.int64), dst.astype(np.int64), t, None, y, msg, order=order)
    raw = RawGraph(num_nodes=n, node_ids=np.arange(n, dtype=np.int64), events=events, directed=True)
    return raw, [events.src, events.dst, events.t, msg, y]


def _optional(data, attr: str):
    """An optional attribute of a PyG object (absent, or None)."""
    try:
        return getattr(data, attr, None)
    except (KeyError, AttributeError):
        return None


def _signal_graph(data):
    """The RawGraph of a PyTorch Geometric Temporal signal (one snapshot per step) and its arrays."""
    import numpy as np

    from dynagnn.data.sources import pyg_layouts
    from dynagnn.data.sources.pyg_temporal import MAX_REPEATED_EDGES
    from dynagnn.data.types import RawGraph, SnapshotList
    from dynagnn.errors import InputError

    kind = type(data).__name__
    targets = list(data.targets)
    steps = len(targets)
    if steps == 0:
        raise InputError(f"from_pyg: the {kind} has no time steps (targets is empty)")
    static_x = hasattr(data, "feature") and not hasattr(data, "features")
    features = [data.feature] if static_x else list(data.features)
    if not static_x and len(features) != steps:
        raise InputError(f"from_pyg: the {kind} has {len(features)} feature matrices and {steps} targets; "
                         "give one of each per time step")
    x = _stack(features, f"{kind}.feature" if static_x else f"{kind}.features", np.float32)
    y = _stack(targets, f"{kind}.targets", None)
    if x is not None and x.ndim != 3:
        what = f"{kind}.feature: expected one [N, F] matrix" if static_x else \
            f"{kind}.features: expected one [N, F] matrix per step"
        raise InputError(f"from_pyg: {what}, got shape {list(x.shape[1:] if static_x else x.shape)}")
    if x is not None and static_x:
        x = x[0]   # the static signal's one matrix: the store's static features [N, F]
    if y is not None and y.ndim not in (2, 3):
        raise InputError(f"from_pyg: {kind}.targets: expected one [N] or [N, C] array per step, got shape "
                         f"{list(y.shape)}")
    if y is not None and y.dtype.kind not in "iuf":
        raise InputError(f"from_pyg: {kind}.targets are {y.dtype}, not numbers")
    if y is not None:
        y = y.astype(np.int64 if y.dtype.kind in "iu" else np.float32)
    if hasattr(data, "edge_indices"):
        indices = list(data.edge_indices)
        weights = [None] * len(indices) if data.edge_weights is None else list(data.edge_weights)
        if len(indices) != steps or len(weights) != steps:
            raise InputError(f"from_pyg: the {kind} has {len(indices)} edge_indices, {len(weights)} edge_weights "
                             f"and {steps} targets; give one of each per time step")
        names = [(f"{kind}.edge_indices[{k}]", f"{kind}.edge_weights[{k}]") for k in range(steps)]
    else:
        indices, weights, names = [data.edge_index], [data.edge_weight], [(f"{kind}.edge_index", f"{kind}.edge_weight")]
    graphs = []
    for index, weight, (what, what_w) in zip(indices, weights, names):
        index = _numpy(index, what)
        if index.ndim != 2 or index.shape[0] != 2:
            raise InputError(f"from_pyg: {what} has shape {list(index.shape)}; expected [2, E]")
        graphs.append((index, None if weight is None else _numpy(weight, what_w), what, what_w))
    if x is not None:
        n = int(x.shape[-2])
    elif y is not None:
        n = int(y.shape[1])
    else:
        n = 1 + max((int(g[0].max()) for g in graphs if g[0].size), default=-1)
    if x is not None and y is not None and y.shape[1] != n:
        raise InputError(f"from_pyg: {kind}: the features have {n} nodes, the targets {y.shape[1]}")
    edges = []
    for index, weight, what, what_w in graphs:
        row, col = pyg_layouts.edges(index.T, f"from_pyg: {what}", None, n)
        w = (np.ones(row.shape[0]) if weight is None
             else pyg_layouts.weights(weight, f"from_pyg: {what_w}", None, row.shape[0]))
        edges.append((row, col, w.astype(np.float32)))
    if len(edges) == 1 and steps > 1:
        if steps * edges[0][0].shape[0] > MAX_REPEATED_EDGES:
            raise InputError(f"from_pyg: the static graph's {edges[0][0].shape[0]} edges in each of {steps} steps "
                             f"make more than the store's {MAX_REPEATED_EDGES} edges (one edge list per snapshot)")
        edges = edges * steps
    rows, cols, ws = (list(part) for part in zip(*edges))
    snapshots = SnapshotList(rows=rows, cols=cols, weights=ws, times=np.arange(steps, dtype=np.int64))
    raw = RawGraph(num_nodes=n, node_ids=np.arange(n, dtype=np.int64), snapshots=snapshots, node_labels=y,
                   node_features=x, directed=True)
    return raw, [*rows, *cols, *ws, x, y]


def _stack(arrays: list, what: str, dtype):
    """Per-step arrays stacked ([T, ...]), None when every one is None; InputError for a mix or for
    shapes that differ."""
    import numpy as np

    from dynagnn.errors import InputError

    present = [a is not None for a in arrays]
    if not any(present):
        return None
    if not all(present):
        raise InputError(f"from_pyg: {what}[{present.index(False)}] is None and others are not: give every step one "
                         "or none")
    parts = [_numpy(a, f"{what}[{k}]") for k, a in enumerate(arrays)]
    for k, a in enumerate(parts):
        if a.shape != parts[0].shape:
            raise InputError(f"from_pyg: {what}[{k}] has shape {list(a.shape)}, {what}[0] {list(parts[0].shape)}: "
                             "every step needs the same shape")
        if a.dtype.kind in "f" and not np.isfinite(a).all():
            raise InputError(f"from_pyg: {what}[{k}] has a value that is not a finite number")
    out = np.stack(parts)
    return out if dtype is None else out.astype(dtype)


def _arrays_checksum(arrays) -> str:
    """sha256 of the arrays' shapes, types and bytes (None as a marker): an in-memory graph's
    ``source_checksum``, so that equal graphs make stores of one checksum and others do not."""
    import hashlib

    import numpy as np

    h = hashlib.sha256()
    for a in arrays:
        if a is None:
            h.update(b"none;")
            continue
        a = np.ascontiguousarray(a)
        h.update(f"{a.dtype.str}{list(a.shape)};".encode())
        h.update(a.tobytes())
    return h.hexdigest()
