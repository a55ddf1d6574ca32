"""SNAP temporal edge lists, ``src dst t [w]`` (also the edge lists of the AS-733 files)."""

from __future__ import annotations

import csv
import zlib
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa

from dynagnn.data.types import RawGraph

from .parse import (
    RowCheck,
    FAST_PARSE_ERRORS, INT, Layout, Malformed, arrow_read, check_comment, check_first_row, check_sep,
    dataset_name, event_graph, first_problem, header_mode, int_problem, is_gzip, number_problem, numpy,
    raise_bad_row, require_file, require_finite, row_source, sniff,
)


def snap_check(n_fields: int, allowed: tuple[int, ...], usage: str) -> RowCheck:
    """Row check of a numeric edge list: ``n_fields`` fields like the first row, integer ids."""
    names = ["src", "dst", "t", "w"]

    def check(fields: list[str]) -> str | None:
        if len(fields) not in allowed:
            counts = " or ".join(str(a) for a in allowed)
            return f"expected {counts} fields ({usage}), got {len(fields)}"
        if len(fields) != n_fields:
            return f"expected {n_fields} fields like the first data row, got {len(fields)}"
        return first_problem(
            int_problem(fields[0], "src node id"), int_problem(fields[1], "dst node id"),
            *(number_problem(v, f"{n} ({usage})") for n, v in zip(names[2:], fields[2:])))

    return check


def pandas_read(path: Path, layout: Layout, names: list[str],
                 comment: str | None) -> pd.DataFrame:
    """Tolerant second try for what pyarrow refuses in a valid file: runs of spaces, trailing
    whitespace, comment lines between data rows, a time column mixing ints and floats."""
    sep = r"\s+" if layout.split_sep is None else layout.split_sep
    dtypes = {n: "int64" for n in names[:2]} | ({"w": "float32"} if "w" in names else {})
    frame = pd.read_csv(path, sep=sep, header=None, names=names, skiprows=layout.skip,
                        comment=comment, index_col=False, dtype=dtypes, engine="c",
                        compression="gzip" if is_gzip(path) else None,
                        quoting=csv.QUOTE_NONE)
    for name in names[2:]:
        if frame[name].dtype.kind not in "if" or frame[name].isna().any():
            raise Malformed(f"column {name} is not numeric")
    return frame


def read_numeric_edges(path: Path, layout: Layout, names: list[str], check: RowCheck,
                        comment: str | None) -> dict[str, np.ndarray]:
    """Columns ``names`` (ids int64, ``t`` int64 or float64, ``w`` float32) of a numeric edge list.

    pyarrow first; pandas when pyarrow refuses the layout; the slow pass when both fail.
    """
    time_type = pa.int64() if len(names) < 3 or INT.fullmatch(layout.first_fields[2]) \
        else pa.float64()
    types = {"src": pa.int64(), "dst": pa.int64(), "t": time_type, "w": pa.float32()}
    try:
        table = arrow_read(path, layout, names, {n: types[n] for n in names})
        return {n: require_finite(numpy(table[n])) for n in names}
    except FAST_PARSE_ERRORS as arrow_error:
        try:
            frame = pandas_read(path, layout, names, comment)
            return {n: require_finite(frame[n].to_numpy()) for n in names}
        except (ValueError, OverflowError, OSError, EOFError, zlib.error, Malformed):
            # OverflowError: pandas on an id beyond 64 bits
            raise_bad_row(path, layout, check, comment, arrow_error)


def read_snap_edgelist(path: str | Path, sep: str | None = None,
                       comment: str | None = "#", header: bool | str = "auto") -> RawGraph:
    """Read a SNAP temporal edge list: one ``src dst t`` or ``src dst t w`` event per line.

    Fields are separated by one space, one tab or one comma (guessed from the first data row when
    ``sep`` is None); lines starting with ``comment`` are skipped. ``header``: true (the first
    non-comment row is a header), false (none), or auto (a first row that is not all numbers is
    one; the log says so). Node ids are integers within 64 bits; ``t`` is int64 when the first
    row's time is an integer, float64 otherwise; ``w`` is float32. Plain or gzip.

    Returns events src, dst int64 [E], t [E], w float32 [E] or None; node_ids int64 [N];
    time_unit "s" (SNAP's temporal networks count Unix seconds); directed.
    """
    check_sep(sep)
    check_comment(comment)
    has_header = header_mode(header)
    path = require_file(path)
    layout = sniff(path, sep, comment, has_header=has_header)
    n_fields = len(layout.first_fields)
    check = snap_check(n_fields, (3, 4), "src dst t [w]")
    check_first_row(path, layout, check)
    names = ["src", "dst", "t", "w"][:n_fields]
    cols = read_numeric_edges(path, layout, names, check, comment)
    w = cols["w"].astype(np.float32, copy=False) if "w" in cols else None
    return event_graph(path, cols["src"], cols["dst"], cols["t"], w=w, name=dataset_name(path),
                        time_unit="s", rows=row_source(path, layout, comment))
