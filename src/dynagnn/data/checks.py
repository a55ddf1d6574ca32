"""What ingest refuses in a graph as read, before anything is built from it.

A reader checks the syntax of its format; these checks are about values that parse but that no
later stage can use, whatever the reader: a number that is not finite (a ``NaN`` in a JSON source
reached training, which then blamed the learning rate), and a negative weight that would become a
snapshot edge weight (the GCN normalisation takes square roots of weighted degrees). Each refusal
is an :class:`~dynagnn.errors.InputError` naming the array, the index and, for an event of a text
source, its line.
"""

from __future__ import annotations

import numpy as np

from ..errors import InputError
from .types import RawGraph


def check_graph(raw: RawGraph, *, weights_used: bool, weight_rule: str = "sum") -> None:
    """Refuse non-finite times, weights, features and labels, and (when ``weights_used``: the
    snapshot edge weights are sums of the source's) negative weights. ``weight_rule`` is the
    config's edge_weight as given, for the message."""
    ev = raw.events
    if ev is not None:
        _finite_events(raw, ev.t, "event time")
        if ev.w is not None:
            _finite_events(raw, ev.w, "event weight")
            if weights_used:
                bad = np.flatnonzero(ev.w < 0)
                if bad.size:
                    _refuse_event(raw, int(bad[0]), _negative(float(ev.w[bad[0]]), weight_rule))
        if ev.features is not None:
            _finite_events(raw, ev.features, "event feature")
    sl = raw.snapshots
    if sl is not None:
        _finite_array(raw, sl.times, "snapshot time", ("source snapshot",))
        for k, w in enumerate(sl.weights or []):
            what = f"edge weight of source snapshot {k} (time {sl.times[k]})"
            _finite_array(raw, w, what, ("edge",))
            bad = np.flatnonzero(w < 0) if weights_used else ()
            if len(bad):
                raise _error(raw, f"{what}, edge {int(bad[0])}: {_negative(float(w[bad[0]]), weight_rule)}")
    for arr, what in ((raw.node_labels, "node label"), (raw.node_features, "node feature")):
        if arr is None:
            continue
        arr = np.asarray(arr)
        dims = {1: ("node",), 2: ("snapshot", "node") if what == "node label" else ("node", "feature"),
                3: ("snapshot", "node", "feature" if what == "node feature" else "target")}[arr.ndim]
        _finite_array(raw, arr, what, dims)


def _negative(value: float, rule: str) -> str:
    return (f"negative weight {value:g}: snapshot edge weights feed the GCN normalisation, which needs "
            f"weights >= 0 (edge_weight: {rule} sums the source's weights); fix the source, or set "
            f"edge_weight: count or binary to leave its weights out")


def _first_nonfinite(arr: np.ndarray) -> int | None:
    """Flat index of the first NaN or infinity of a float array, None when there is none."""
    arr = np.asarray(arr)
    if arr.dtype.kind not in "fc" or arr.size == 0:
        return None
    bad = ~np.isfinite(arr.reshape(-1))
    return int(np.argmax(bad)) if bad.any() else None


def _finite_events(raw: RawGraph, arr: np.ndarray, what: str) -> None:
    flat = _first_nonfinite(arr)
    if flat is not None:
        i = flat // max(int(np.prod(arr.shape[1:])), 1)
        _refuse_event(raw, i, f"{what} is {arr.reshape(-1)[flat]}: expected a finite number")


def _finite_array(raw: RawGraph, arr: np.ndarray, what: str, dims: tuple[str, ...]) -> None:
    flat = _first_nonfinite(arr)
    if flat is None:
        return
    index = np.unravel_index(flat, np.shape(arr))
    where = ", ".join(f"{d} {int(i)}" + (_node_id(raw, int(i)) if d == "node" else "")
                      for d, i in zip(dims, index))
    raise _error(raw, f"{what} at {where} is {np.asarray(arr).reshape(-1)[flat]}: expected a finite number")


def _node_id(raw: RawGraph, v: int) -> str:
    """`` (source id X)`` when the source's id of dense node v differs from v."""
    ids = raw.node_ids
    if ids is None or v >= len(ids) or (ids.dtype.kind in "iu" and int(ids[v]) == v):
        return ""
    return f" (source id {ids[v]!r})"


def _refuse_event(raw: RawGraph, i: int, problem: str) -> None:
    """Raise an InputError about event i of the time-sorted stream, naming its line when the
    reader said where its rows came from."""
    rows = raw.row_source
    if rows is not None:
        order = raw.events.order
        line = rows.line_of(int(order[i]) if order is not None else i)
        if line is not None:
            raise InputError(problem, rows.path, line)
    raise _error(raw, f"event {i} (in time order): {problem}")


def _error(raw: RawGraph, message: str) -> InputError:
    if len(raw.sources) == 1:
        return InputError(message, raw.sources[0])
    return InputError(f"dataset {raw.name!r}: {message}")
