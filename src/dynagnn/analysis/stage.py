"""The analyze stage: per-snapshot statistics and the analysis tables of one store, on Dask.

``python -m dynagnn stats`` and ``python -m dynagnn analyze`` are thin fronts over
:func:`stats_stage` and :func:`analyze_stage`. Each writes its Parquet tables (keyed by the store's
checksum) and returns them, so that the caller may draw the figures (the report layer sits above
the stages).

:data:`ANALYSES` is the one list of the analyses: the CLI's ``--parts`` choices come from it, and the
workflow's targets (``rules/common.smk``) are its tables; ``tests/workflow`` checks that the rules of
``rules/analyze.smk`` run every one of them.
"""

from __future__ import annotations

import dataclasses
import logging
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Sequence

from ..atomic import remove_stale_temporaries, remove_stale_temporaries_in
from ..errors import InputError

if TYPE_CHECKING:
    import pandas as pd

log = logging.getLogger(__name__)

# Every analysis, in the order it runs; each writes <name>.parquet. "redundancy" needs an event stream.
ANALYSES = ("overlap", "formats", "redundancy", "partitions", "cache", "volume")
NEEDS_EVENTS = ("redundancy",)


@dataclass
class AnalysisOptions:
    """The settings of the analyses (the CLI's flags; config.yaml's ``analysis`` section)."""

    frame_sizes: Sequence[int] = (2, 4, 8)
    edge_lives: Sequence[int] = (1, 5)
    batch_sizes: Sequence[int] = (200, 500, 1000, 2000, 4000)
    neighbors: int = 10
    partition_workers: Sequence[int] = (2, 4, 8)
    cache_batch_size: int = 256
    cache_fanouts: Sequence[int] = (15, 10, 5)
    cache_fractions: Sequence[float] = (0.01, 0.05, 0.1, 0.2, 0.5)
    cache_epochs: int = 3
    volume_layers: int = 2
    volume_hidden: int = 32
    volume_window: int = 3
    volume_partitioners: Sequence[str] = field(default_factory=lambda: ["hash", "metis"])
    volume_batch_size: int = 1000
    volume_memory_dim: int = 100


def stats_stage(store_path: str | Path, out: str | Path, client=None, progress: bool = True) -> pd.DataFrame:
    """Per-snapshot statistics of the store, written to ``out``; returns the table."""
    from ..data.store import open_store
    from ..tables import write_table
    from .stats import compute_stats

    remove_stale_temporaries(out)  # what a killed run left (dynagnn.atomic)
    store = open_store(store_path)
    t0 = time.perf_counter()
    df = compute_stats(store_path, client, progress=progress)
    log.info("statistics of %d snapshots in %.2fs", len(df), time.perf_counter() - t0)
    write_table(df, out, store.checksum)
    return df


def fit_to_store(store, parts: Sequence[str] | None, options: AnalysisOptions) -> tuple[list[str], AnalysisOptions]:
    """The analyses to run and the options they run with, fitted to this store before any work.

    A frame size or worker count the store is too small for is left out with a log line (frames
    longer than the store, more workers than vertices or snapshots), as the config schema promises.
    ``parts`` None means every analysis the store allows: one it cannot run (redundancy without an
    event stream, overlap when no frame size fits) is left out with a log line. A part asked for by
    name that cannot run is an InputError.
    """
    asked = parts is not None
    parts = list(ANALYSES) if parts is None else list(parts)
    unknown = [p for p in parts if p not in ANALYSES]
    if unknown:
        raise InputError(f"unknown analyses {unknown}; known: {', '.join(ANALYSES)}")
    N, T = store.num_nodes, store.num_snapshots
    frames = [s for s in options.frame_sizes if s <= T]
    workers = [P for P in options.partition_workers if P <= min(N, T)]
    if "overlap" in parts and len(frames) < len(options.frame_sizes):
        log.info("frame sizes %s skipped: longer than the store's %d snapshots",
                 [s for s in options.frame_sizes if s > T], T)
    if {"partitions", "volume"} & set(parts) and len(workers) < len(options.partition_workers):
        log.info("partition worker counts %s skipped: a worker needs a vertex and a snapshot (N=%d, T=%d)",
                 [P for P in options.partition_workers if P > min(N, T)], N, T)
    why_not = {}
    if not store.has("events/src"):
        why_not.update({p: f"{store.path}: no event stream, so no {p} table" for p in NEEDS_EVENTS})
    if not frames:
        why_not["overlap"] = f"frame sizes {list(options.frame_sizes)}: none fits the store's {T} snapshots"
    if not workers:
        why_not.update({p: f"partition workers {list(options.partition_workers)}: none fits the store "
                           f"(a worker needs a vertex and a snapshot; N={N}, T={T})" for p in ("partitions", "volume")})
    for p in [p for p in parts if p in why_not]:
        if asked:
            raise InputError(f"{why_not[p]}; leave out --parts {p}")
        log.info("%s skipped: %s", p, why_not[p])
        parts.remove(p)
    return parts, dataclasses.replace(options, frame_sizes=frames, partition_workers=workers)


def _table(part: str, store_path: str, store, client, o: AnalysisOptions, progress: bool) -> pd.DataFrame:
    """The table of one analysis."""
    if part == "overlap":
        from .reuse import overlap_table

        return overlap_table(store_path, client, o.frame_sizes, progress=progress)
    if part == "formats":
        from .reuse import formats_table

        return formats_table(store_path, client, o.edge_lives, progress=progress)
    if part == "partitions":
        from .partitions import partition_table

        return partition_table(store_path, client, o.partition_workers)
    if part == "cache":
        from .cache import store_cache_table

        return store_cache_table(store_path, client, batch_size=o.cache_batch_size, fanouts=o.cache_fanouts,
                                 fractions=o.cache_fractions, epochs=o.cache_epochs)
    if part == "volume":
        from .commvolume import volume_table

        return volume_table(store_path, client, o.partition_workers, layers=o.volume_layers, hidden=o.volume_hidden,
                            window=o.volume_window, partitioners=o.volume_partitioners,
                            batch_size=o.volume_batch_size, neighbors=o.neighbors, memory_dim=o.volume_memory_dim)
    assert part == "redundancy"
    from .redundancy import redundancy_table

    return redundancy_table(store_path, client, o.batch_sizes, k=o.neighbors)


def analyze_stage(store_path: str | Path, out_dir: str | Path, client, parts: Sequence[str] | None = None,
                  options: AnalysisOptions | None = None, progress: bool = True,
                  on_table=None) -> dict[str, pd.DataFrame]:
    """Run the analyses ``parts`` (in :data:`ANALYSES` order; None: every one the store allows, see
    :func:`fit_to_store`) on the store with a Dask ``client`` and write each table to
    ``out_dir/<part>.parquet``; returns ``{part: table}``. ``on_table(part, df)``, when given, is
    called after each table is written (the CLI draws its figure there)."""
    from ..data.store import open_store
    from ..tables import write_table

    out = Path(out_dir)
    remove_stale_temporaries_in(out)  # what a killed run left (dynagnn.atomic)
    store = open_store(store_path)
    parts, options = fit_to_store(store, parts, options or AnalysisOptions())
    if store.has("events/src") and {"redundancy", "volume"} & set(parts):
        store.event_ids()  # a damaged event stream is refused before any table is written
    tables = {}
    todo = [p for p in ANALYSES if p in parts]
    for i, part in enumerate(todo, 1):
        # a line per table before and after: the rule's log shows how far a long analysis is
        log.info("%s (%d/%d) of %s", part, i, len(todo), store_path)
        t0 = time.perf_counter()
        df = _table(part, str(store_path), store, client, options, progress)
        write_table(df, out / f"{part}.parquet", store.checksum)
        log.info("%s (%d/%d): %d rows in %.2fs", part, i, len(todo), len(df), time.perf_counter() - t0)
        tables[part] = df
        if on_table is not None:
            on_table(part, df)
    return tables
