"""SNAP Reddit hyperlink network (TSV with post features)."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from dynagnn.data.types import RawGraph

from .parse import (
    RowCheck,
    FAST_PARSE_ERRORS, Malformed, arrow_read, check_first_row, dataset_name, event_graph, first_problem,
    number_problem, numpy, raise_bad_row, require_file, require_finite, sniff,
)


_REDDIT_HEADER = ["SOURCE_SUBREDDIT", "TARGET_SUBREDDIT", "POST_ID", "TIMESTAMP",
                  "LINK_SENTIMENT", "PROPERTIES"]
_REDDIT_TIME = "%Y-%m-%d %H:%M:%S"


def _reddit_check(width: int) -> RowCheck:
    def check(fields: list[str]) -> str | None:
        if len(fields) != 6:
            names = " ".join(_REDDIT_HEADER)
            return f"expected 6 tab-separated fields ({names}), got {len(fields)}"
        try:
            datetime.strptime(fields[3], _REDDIT_TIME)
        except ValueError:
            return f"expected a TIMESTAMP like '2013-12-31 16:39:58', got {fields[3]!r}"
        if fields[4] not in ("1", "-1"):
            return f"expected LINK_SENTIMENT 1 or -1, got {fields[4]!r}"
        props = fields[5].split(",")
        if len(props) != width:
            return (f"expected {width} comma-separated PROPERTIES (as in the first data row), "
                    f"got {len(props)}")
        return first_problem(*(number_problem(p, "a PROPERTIES value") for p in props))

    return check


def _split_features(column: pa.ChunkedArray, width: int) -> np.ndarray:
    """float32 [E, width] from a string column of comma-separated numbers, one row each."""
    lists = pc.split_pattern(column, ",")
    widths = numpy(pc.list_value_length(lists))
    if widths.size and (widths.min() != width or widths.max() != width):
        raise Malformed("rows have different numbers of features")
    values = pc.cast(pc.list_flatten(lists), pa.float32())
    return require_finite(numpy(values)).reshape(-1, width)


def read_reddit_tsv(path: str | Path) -> RawGraph:
    """Read the SNAP Reddit hyperlink network (soc-redditHyperlinks-body/title.tsv, plain or gzip).

    Tab-separated with the header SOURCE_SUBREDDIT, TARGET_SUBREDDIT, POST_ID, TIMESTAMP,
    LINK_SENTIMENT, PROPERTIES. TIMESTAMP (``2013-12-31 16:39:58``, read as UTC) becomes int64 Unix
    seconds; LINK_SENTIMENT (1 or -1) the event label; PROPERTIES (86 comma-separated numbers in
    the real files; any width, the same in every row) the event features.

    Returns events src, dst int64 [E], t int64 [E], label int64 [E], features float32 [E, F];
    node_ids str [N] (subreddit names, sorted); time_unit "s"; directed (source links to target).
    """
    path = require_file(path)
    layout = sniff(path, "\t", None, any_whitespace=False, header=_REDDIT_HEADER)
    width = len(layout.first_fields[5].split(",")) if len(layout.first_fields) == 6 else 0
    check = _reddit_check(width)
    check_first_row(path, layout, check)
    types = {"src": pa.string(), "dst": pa.string(), "post": pa.string(),
             "time": pa.timestamp("s"), "sentiment": pa.int64(), "props": pa.string()}

    def parse() -> tuple[np.ndarray, ...]:
        table = arrow_read(path, layout, list(types), types,
                            include=["src", "dst", "time", "sentiment", "props"])
        label = numpy(table["sentiment"])
        if not np.isin(label, (-1, 1)).all():
            raise Malformed("LINK_SENTIMENT other than 1 or -1")
        features = _split_features(table["props"], width)
        t = numpy(table["time"].cast(pa.int64()))
        return numpy(table["src"]), numpy(table["dst"]), t, label, features

    try:
        src, dst, t, label, features = parse()
    except FAST_PARSE_ERRORS as exc:
        raise_bad_row(path, layout, check, None, exc)
    return event_graph(path, src, dst, t, label=label, features=features,
                        name=dataset_name(path), time_unit="s")
