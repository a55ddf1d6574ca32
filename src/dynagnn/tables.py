"""Parquet tables between stages: every table carries the store checksum it was derived from."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from .atomic import write_atomic


def write_parquet(df: pd.DataFrame, out: str | Path, checksum: str, meta: dict | None = None) -> Path:
    """Write ``df`` to ``out`` as Parquet with ``dynagnn.store_checksum`` (and ``dynagnn.<key>`` for
    each of ``meta``) in its schema metadata. ``out`` is written as given: callers that need an
    atomic write pass a temporary path and rename (see :func:`write_table`)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    table = pa.Table.from_pandas(df, preserve_index=False)
    extra = {b"dynagnn.store_checksum": checksum.encode()}
    extra.update({f"dynagnn.{k}".encode(): str(v).encode() for k, v in (meta or {}).items()})
    pq.write_table(table.replace_schema_metadata({**(table.schema.metadata or {}), **extra}), out)
    return Path(out)


def write_table(df: pd.DataFrame, out: str | Path, checksum: str, meta: dict | None = None) -> Path:
    """Write a table as Parquet atomically (temporary sibling, then rename), keyed by the checksum."""
    return write_atomic(out, lambda tmp: write_parquet(df, tmp, checksum, meta))
