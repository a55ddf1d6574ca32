"""SNAP AS-733: a directory of daily autonomous-system snapshots."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np

from dynagnn.data.ids import dense_ids
from dynagnn.data.types import RawGraph, SnapshotList
from dynagnn.errors import InputError

from .parse import check_first_row, require_dir, sniff
from .snap import read_numeric_edges, snap_check


_AS733_FILE = re.compile(r"as(\d{8})\.txt(\.gz)?")


def _read_as733_file(path: Path) -> tuple[np.ndarray, np.ndarray]:
    """(from, to) int64 [nnz] of one AS-733 snapshot file (``#`` comments, tab-separated pairs)."""
    layout = sniff(path, None, "#")
    check = snap_check(2, (2,), "FromNodeId ToNodeId")
    check_first_row(path, layout, check)
    cols = read_numeric_edges(path, layout, ["src", "dst"], check, "#")
    return cols["src"], cols["dst"]


def read_as733_dir(path: str | Path) -> RawGraph:
    """Read SNAP AS-733: a directory of ``asYYYYMMDD.txt`` (or ``.gz``) files, one snapshot each.

    Files are ordered by the date in their name; other names are ignored. Node ids are mapped to
    dense ids across all snapshots together.

    Returns snapshots with rows[t], cols[t] int64 [nnz_t], weights None, times int64 [T] as
    YYYYMMDD; node_ids int64 [N]; time_unit "yyyymmdd"; undirected (AS links are peerings, and
    the files list both directions).
    """
    directory = require_dir(path)
    dated: dict[int, Path] = {}
    for file in directory.iterdir():
        match = _AS733_FILE.fullmatch(file.name)
        if match is None or not file.is_file():
            continue
        date = int(match.group(1))
        if date in dated:
            raise InputError(f"two snapshot files for the date {date}: {dated[date].name} and "
                             f"{file.name}", directory)
        dated[date] = file
    if not dated:
        raise InputError("no AS-733 snapshot files (asYYYYMMDD.txt) in the directory", directory)
    dates = sorted(dated)
    files = [dated[d] for d in dates]
    pairs = [_read_as733_file(f) for f in files]
    mapped, node_ids = dense_ids(*(s for s, _ in pairs), *(d for _, d in pairs))
    snapshots = SnapshotList(rows=mapped[: len(files)], cols=mapped[len(files):], weights=None,
                             times=np.asarray(dates, dtype=np.int64))
    return RawGraph(num_nodes=int(node_ids.shape[0]), node_ids=node_ids, snapshots=snapshots,
                    time_unit="yyyymmdd", directed=False, sources=files, name="as-733")
