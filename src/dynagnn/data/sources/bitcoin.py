"""SNAP Bitcoin OTC / Alpha signed ratings (CSV)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa

from dynagnn.data.types import RawGraph

from .parse import (
    FAST_PARSE_ERRORS, arrow_read, check_first_row, dataset_name, event_graph, first_problem,
    header_mode, int_problem, number_problem, numpy, raise_bad_row, require_file, require_finite,
    row_source, sniff,
)


def _bitcoin_check(fields: list[str]) -> str | None:
    if len(fields) != 4:
        return f"expected 4 fields (source,target,rating,time), got {len(fields)}"
    return first_problem(int_problem(fields[0], "source node id"),
                          int_problem(fields[1], "target node id"),
                          number_problem(fields[2], "rating"), number_problem(fields[3], "time"))


def read_bitcoin_csv(path: str | Path, header: bool | str = "auto") -> RawGraph:
    """Read SNAP soc-sign-bitcoinotc/alpha: ``source,target,rating,time`` per line, no header.

    Times are Unix seconds, in OTC with a fraction (``1289241911.72836``): kept as int64 seconds by
    floor. ``header``: true, false, or auto (a first row that is not all numbers is skipped as a
    header, and the log says so).

    Returns events src, dst int64 [E], t int64 [E], w float32 [E] (the rating, -10..10);
    node_ids int64 [N]; time_unit "s"; directed (who rates whom).
    """
    has_header = header_mode(header)
    path = require_file(path)
    layout = sniff(path, ",", None, has_header=has_header)
    check_first_row(path, layout, _bitcoin_check)
    types = {"src": pa.int64(), "dst": pa.int64(), "rating": pa.float32(), "time": pa.float64()}
    try:
        table = arrow_read(path, layout, list(types), types)
        cols = {n: require_finite(numpy(table[n])) for n in types}
    except FAST_PARSE_ERRORS as exc:
        raise_bad_row(path, layout, _bitcoin_check, None, exc)
    t = np.floor(cols["time"]).astype(np.int64)
    return event_graph(path, cols["src"], cols["dst"], t, w=cols["rating"],
                        name=dataset_name(path), time_unit="s", rows=row_source(path, layout, None))
