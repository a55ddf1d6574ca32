"""JODIE / TGL user-item interactions (CSV with edge features and state labels)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from dynagnn.data.ids import dense_ids
from dynagnn.data.types import RawGraph

from .parse import (
    RowCheck,
    FAST_PARSE_ERRORS, arrow_read, check_first_row, dataset_name, event_stream, first_problem,
    int_problem, number_problem, numpy, raise_bad_row, require_file, require_finite, sniff,
)


_JODIE_HEADER = ["user_id", "item_id", "timestamp", "state_label"]


def _jodie_check(n_fields: int) -> RowCheck:
    def check(fields: list[str]) -> str | None:
        if len(fields) < 4:
            return (f"expected at least 4 fields (user_id,item_id,timestamp,state_label,"
                    f"features...), got {len(fields)}")
        if len(fields) != n_fields:
            return (f"expected {n_fields} fields (4 + {n_fields - 4} features, as in the first "
                    f"data row), got {len(fields)}")
        return first_problem(
            None if fields[0] else "expected a user_id, got an empty field",
            None if fields[1] else "expected an item_id, got an empty field",
            number_problem(fields[2], "timestamp"), int_problem(fields[3], "state_label"),
            *(number_problem(v, "a feature") for v in fields[4:]))

    return check


def _ids_of(column: pa.ChunkedArray) -> np.ndarray:
    """Integer ids when every id is an integer (kept in numeric order), strings otherwise."""
    try:
        return numpy(pc.cast(column, pa.int64()))
    except pa.ArrowInvalid:
        return numpy(column).astype(object)


def read_jodie_csv(path: str | Path) -> RawGraph:
    """Read a JODIE / TGL interaction CSV (wikipedia.csv, reddit.csv, mooc.csv, lastfm.csv).

    Header ``user_id,item_id,timestamp,state_label,comma_separated_list_of_features``, then rows
    ``user,item,timestamp,state_label,f1,...,fF``. Users and items are separate id spaces: users
    get dense ids 0..U-1 and items U..U+I-1; node_ids are the strings ``"u:<user_id>"`` and
    ``"i:<item_id>"`` (ids in numeric order when they are integers).

    Returns events src (users) and dst (items) int64 [E], t float64 [E] (seconds), label int64 [E],
    features float32 [E, F] (None when F = 0); node_ids str [U + I]; time_unit "s"; directed
    (bipartite user -> item).
    """
    path = require_file(path)
    layout = sniff(path, ",", None, header=_JODIE_HEADER)
    n_fields = len(layout.first_fields)
    check = _jodie_check(n_fields)
    check_first_row(path, layout, check)
    feature_names = [f"f{i}" for i in range(n_fields - 4)]
    types = {"user": pa.string(), "item": pa.string(), "t": pa.float64(), "label": pa.int64()}
    types |= {f: pa.float32() for f in feature_names}
    try:
        table = arrow_read(path, layout, list(types), types)
        t = require_finite(numpy(table["t"]))
        features = np.empty((table.num_rows, len(feature_names)), dtype=np.float32)
        for j, name in enumerate(feature_names):
            features[:, j] = require_finite(numpy(table[name]))
    except FAST_PARSE_ERRORS as exc:
        raise_bad_row(path, layout, check, None, exc)
    (users,), user_ids = dense_ids(_ids_of(table["user"]))
    (items,), item_ids = dense_ids(_ids_of(table["item"]))
    node_ids = np.array([f"u:{u}" for u in user_ids] + [f"i:{i}" for i in item_ids], dtype=object)
    events = event_stream(users, items + user_ids.shape[0], t, label=numpy(table["label"]),
                     features=features if feature_names else None)
    return RawGraph(num_nodes=int(node_ids.shape[0]), node_ids=node_ids, events=events,
                    time_unit="s", directed=True, sources=[path], name=dataset_name(path))
