"""The snapshot store: one Zarr v3 group per dataset (layout in DESIGN.md, "Data model").

Writing: every array is cut into chunks along its first axis and Dask tasks each write whole chunks
(never two writers in one chunk), into a temporary sibling directory that is renamed over the target
only when complete, so a failed or interrupted ingest leaves the previous store (or nothing) behind.
Metadata is consolidated, so opening a store reads one document.

Every chunk is written, all-zero ones too, and the sha256 of each array's data is recorded
(``attrs.array_sha256``), so that a reader can tell a damaged store from zeros (:mod:`.integrity`).

Reading: :class:`SnapshotStore` loads only the small arrays (offsets, times) on open, after checking
that every array and chunk file is there and the shapes agree with the attributes; ``edges(t)``
and ``window_edges(t0, t1)`` read only the chunks that hold those snapshots, as numpy arrays sorted
by (row, col). CSR is built from them by the graph layer (:func:`dynagnn.graph.csr.normalize`) with
one bincount; it is never stored. The data layer does not import torch.
"""

from __future__ import annotations

import hashlib
import json
import logging
import warnings
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import dask
import numpy as np
import zarr
from zarr.codecs import BloscCodec

from .. import __version__
from ..atomic import write_atomic
from ..errors import ConfigError, DynagnnError, InputError, StoreError, one_line
from . import integrity
from .types import EventStream, RawGraph, Snapshots

log = logging.getLogger(__name__)

SCHEMA_VERSION = 2  # 2: every chunk written, chunk keys "c.i.j", attrs.array_sha256
EDGE_CHUNK = 1 << 20  # elements per chunk of the 1-D edge and event arrays
FEATURE_CHUNK_BYTES = 64 << 20
# Static features [N, F] are read by rows (sampled training: a mini-batch's vertices, spread over
# the graph), so their chunks are small: a row read decodes its whole chunk. At 1 MiB a batch's
# 5,000 random rows of a 2M x 128 array decoded 969 of its 977 chunks (400x the bytes asked for);
# at 16 KiB (32 rows) 30x; at 4 KiB (8 rows) 7x, the time the same (a chunk costs its file read
# and decode, ~15 us with data.rows, whatever its size here). Smaller still costs more at ingest
# (2 KiB: 3x the write time and 2x the disk of 4 KiB for 2M x 128; one-row chunks 15x).
FEATURE_ROW_CHUNK_BYTES = 4 << 10
# Time-varying features [T, N, F] of a small graph: one snapshot per chunk made PyTorch Geometric
# Temporal's chickenpox (518 x 20 x 4, 320 bytes a snapshot) 518 chunk files, 0.21-0.30 s to read
# whole against ~1 ms in one chunk; a reader of one snapshot decodes at most this much.
SNAPSHOT_CHUNK_BYTES = 256 << 10
# Blosc-LZ4 with byte shuffle: on 10M-element int64 arrays here it wrote 3x and read 3.7x faster
# than zarr's default Zstd, at the same size (sorted ids and times shuffle well).
NUMERIC_CODEC = BloscCodec(cname="lz4", clevel=5, shuffle="shuffle")
# Every chunk written (Zarr skips all-fill ones by default), so a missing chunk file is damage, never
# zeros; '.' in chunk keys keeps an array's chunk files in one folder, one listing to check them.
ARRAY_OPTIONS = {"config": {"write_empty_chunks": True},
                 "chunk_key_encoding": {"name": "default", "separator": "."}}

def file_checksum(paths: Iterable[str | Path]) -> str:
    """sha256 over the contents of the given files (directories: every file inside, by relative path)."""
    h = hashlib.sha256()
    for p in sorted(Path(p) for p in paths):
        files = sorted(f for f in p.rglob("*") if f.is_file()) if p.is_dir() else [p]
        for f in files:
            h.update(str(f.relative_to(p) if p.is_dir() else f.name).encode())
            with open(f, "rb") as fh:
                for block in iter(lambda: fh.read(1 << 20), b""):
                    h.update(block)
    return h.hexdigest()


def _index_dtype(num_nodes: int):
    return np.int32 if num_nodes < 2**31 else np.int64


def _chunks_for(shape: tuple[int, ...], itemsize: int, row_chunks: bool = False) -> tuple[int, ...]:
    if len(shape) == 1:
        return (min(max(shape[0], 1), EDGE_CHUNK),)
    row_bytes = int(np.prod(shape[1:])) * itemsize
    if len(shape) == 3:
        # Whole snapshots per chunk along time, as many as SNAPSHOT_CHUNK_BYTES holds (at least one),
        # so a reader of snapshot t decodes little beside it; nodes are cut only when one snapshot
        # alone would pass the chunk budget.
        nodes = max(1, min(shape[1], FEATURE_CHUNK_BYTES // max(shape[2] * itemsize, 1)))
        times = max(1, min(shape[0], SNAPSHOT_CHUNK_BYTES // max(row_bytes, 1)))
        return (times, max(nodes, 1), shape[2])
    budget = FEATURE_ROW_CHUNK_BYTES if row_chunks else FEATURE_CHUNK_BYTES
    rows = max(1, min(shape[0], budget // max(row_bytes, 1)))
    return (rows,) + tuple(shape[1:])


class _ChunkWriter:
    """Collects (array, data) pairs and writes them as Dask tasks that each own whole chunks, with
    one task per array hashing its data (:func:`.integrity.data_digest`)."""

    def __init__(self, group: zarr.Group):
        self.group = group
        self.tasks: list = []
        self.digests: dict[str, Any] = {}

    def add(self, name: str, data: np.ndarray, dims: tuple[str, ...]) -> None:
        data = np.asarray(data)
        is_str = data.dtype.kind in "OUS"
        dtype = str if is_str else data.dtype
        chunks = _chunks_for(data.shape, 8 if is_str else data.dtype.itemsize, name == "features/x")
        with warnings.catch_warnings():
            # Variable-length strings (node ids) have no final Zarr v3 spec yet; zarr-python reads them.
            warnings.simplefilter("ignore")
            arr = self.group.create_array(name, shape=data.shape, dtype=dtype, chunks=chunks,
                                          dimension_names=dims, fill_value="" if is_str else 0, **ARRAY_OPTIONS,
                                          **({} if is_str else {"compressors": [NUMERIC_CODEC]}))
        self.digests[name] = dask.delayed(integrity.data_digest)(data)
        if data.size == 0:
            return
        per_task = chunks[0] * max(1, (4 * EDGE_CHUNK) // max(int(np.prod(chunks)), 1))
        for a in range(0, data.shape[0], per_task):
            self.tasks.append(dask.delayed(_write_slice)(arr, a, data[a:a + per_task]))

    def run(self, threads: int) -> dict[str, str]:
        """Write every chunk; returns {array name: sha256 of its data}."""
        names = list(self.digests)
        done = dask.compute(*self.digests.values(), *self.tasks, scheduler="threads", num_workers=max(1, threads))
        return dict(zip(names, done[:len(names)]))


def _write_slice(arr, start: int, block: np.ndarray) -> None:
    arr[start:start + block.shape[0]] = block


def write_store(path: str | Path, raw: RawGraph, snaps: Snapshots, features: np.ndarray | None, *,
                spec: dict[str, Any], threads: int = 1) -> Path:
    """Write a dataset to ``path`` (a ``.zarr`` directory), atomically; return the path.

    spec: the ingest settings (format, windows, options), recorded in the attributes and hashed with
    the source checksum into the store's ``checksum``, the key of everything derived from it.
    """
    return write_atomic(path, lambda tmp: _write_group(tmp, raw, snaps, features, spec, threads))


def _write_group(tmp: Path, raw: RawGraph, snaps: Snapshots, features, spec, threads) -> None:
    n = snaps.num_nodes
    root = zarr.open_group(tmp, mode="w")
    w = _ChunkWriter(root)
    idx = _index_dtype(n)
    w.add("snapshots/offsets", snaps.offsets.astype(np.int64), ("snapshot_edge",))
    w.add("snapshots/row", snaps.row.astype(idx), ("edge",))
    w.add("snapshots/col", snaps.col.astype(idx), ("edge",))
    w.add("snapshots/weight", snaps.weight.astype(np.float32), ("edge",))
    w.add("snapshots/time", snaps.time.astype(np.float64 if snaps.time.dtype.kind == "f" else np.int64), ("snapshot",))
    ev = raw.events
    if ev is not None:
        w.add("events/src", ev.src.astype(np.int64), ("event",))
        w.add("events/dst", ev.dst.astype(np.int64), ("event",))
        w.add("events/t", ev.t, ("event",))
        if ev.w is not None:
            w.add("events/w", ev.w.astype(np.float32), ("event",))
        if ev.label is not None:
            w.add("events/label", ev.label.astype(np.int64), ("event",))
        if ev.features is not None:
            w.add("events/features", ev.features.astype(np.float32), ("event", "feature"))
        if ev.split is not None:
            problem = integrity.split_problem(ev.split, len(ev))
            if problem:   # a reader's bad split: one line, nothing written (atomic)
                raise InputError(f"the events' split {problem}", raw.sources[0] if raw.sources else None)
            w.add("events/split", np.asarray(ev.split).astype(np.int8), ("event",))
        if ev.negatives is not None:
            try:
                event, neg = check_stored_negatives(ev.negatives, len(ev), n)
            except ValueError as exc:   # a reader's bad negatives: one line, nothing written (atomic)
                raise InputError(f"evaluation negatives: {exc}", raw.sources[0] if raw.sources else None) from None
            w.add("negatives/event", event, ("negative_event",))
            w.add("negatives/dst", neg, ("negative_event", "negative"))
    if features is not None:
        dims = ("snapshot", "node", "feature") if features.ndim == 3 else ("node", "feature")
        w.add("features/x", features.astype(np.float32), dims)
    if raw.node_labels is not None:
        y = np.asarray(raw.node_labels)
        dims = ("node",) if y.ndim == 1 else ("snapshot", "node") if y.ndim == 2 else ("snapshot", "node", "target")
        w.add("labels/y", y, dims)
    w.add("nodes/id", raw.node_ids if raw.node_ids.dtype.kind in "iu" else raw.node_ids.astype(str), ("node",))
    # Hash the source files while the chunks are written (hashlib releases the GIL on large blocks).
    with ThreadPoolExecutor(1) as pool:
        pending = None if spec.get("source_checksum") else pool.submit(file_checksum, raw.sources)
        digests = w.run(threads)
        source_sum = spec.get("source_checksum") or pending.result()
    canon = json.dumps({k: v for k, v in spec.items() if k != "source_checksum"}, sort_keys=True, default=str)
    checksum = hashlib.sha256(f"{SCHEMA_VERSION}\n{source_sum}\n{canon}".encode()).hexdigest()
    root.attrs.update({
        "schema_version": SCHEMA_VERSION,
        "name": raw.name,
        "source": [str(s) for s in raw.sources] or spec.get("source", ""),
        "source_checksum": source_sum,
        "checksum": checksum,
        "num_nodes": int(n),
        "num_snapshots": int(snaps.num_snapshots),
        "num_edges": int(snaps.offsets[-1]),
        "num_events": 0 if ev is None else len(ev),
        "empty_snapshots": int(np.count_nonzero(np.diff(snaps.offsets) == 0)),
        "directed": bool(snaps.directed),
        "time_unit": raw.time_unit,
        "spec": json.loads(canon),
        "dynagnn_version": __version__,
        integrity.DIGESTS: digests,
    })
    with warnings.catch_warnings():
        # Consolidated metadata is not in the Zarr v3 spec yet; zarr-python reads it, and we rely on it.
        warnings.simplefilter("ignore")
        zarr.consolidate_metadata(tmp)


class SnapshotStore:
    """Lazy reader of a snapshot store.

    Attributes: ``attrs`` (dict), ``num_nodes`` N, ``num_snapshots`` T, ``offsets`` int64 [T+1],
    ``times`` int64 or float64 [T], ``directed``, ``checksum``, ``array_names`` (every array of the store).

    Opening checks what is cheap (:mod:`.integrity`): every array and chunk file is present, the
    shapes agree with the attributes, the offsets with the edge count; a StoreError names the array.
    """

    REQUIRED = ("snapshots/offsets", "snapshots/row", "snapshots/col", "snapshots/weight", "snapshots/time",
                "nodes/id")
    COUNTS = ("num_nodes", "num_snapshots", "num_edges")  # attributes every reader relies on

    def __init__(self, path: str | Path):
        self.path = Path(path)
        if not self.path.exists():
            raise StoreError(f"{self.path}: no snapshot store here (run the ingest stage first)")
        self.root, meta = integrity.open_root(self.path)
        self.attrs = dict(self.root.attrs)
        version = self.attrs.get("schema_version")
        if version != SCHEMA_VERSION:
            raise StoreError(f"{self.path}: schema_version {version!r}, this dynagnn reads version "
                             f"{SCHEMA_VERSION}; re-run the ingest stage to rebuild it")
        for key in self.COUNTS:
            if not isinstance(self.attrs.get(key), int) or self.attrs[key] < 0:
                raise StoreError(f"{self.path}: attribute {key} is {self.attrs.get(key)!r}, not a count; "
                                 f"{integrity.DAMAGED}")
        digests = self.attrs.get(integrity.DIGESTS)
        if not isinstance(digests, dict) or not set(self.REQUIRED) <= set(digests):
            missing = sorted(set(self.REQUIRED) - set(digests)) if isinstance(digests, dict) else [integrity.DIGESTS]
            raise StoreError(f"{self.path}: incomplete store, {missing[0]} is not recorded in its attributes; "
                             f"{integrity.DAMAGED}")
        self.array_names = tuple(sorted(digests))
        integrity.check_layout(self.path, self.root, meta, self.array_names)
        self.num_nodes = int(self.attrs["num_nodes"])
        self.num_snapshots = int(self.attrs["num_snapshots"])
        self.directed = bool(self.attrs.get("directed"))
        self.checksum = str(self.attrs.get("checksum"))
        self.offsets = self.read("snapshots/offsets").astype(np.int64)
        self.times = self.read("snapshots/time")  # int64, or float64 for fractional window starts
        integrity.check_shapes(self)

    def read(self, name: str, sel: Any = slice(None)) -> np.ndarray:
        """``array[sel]`` of one of the store's arrays, as numpy; a chunk that does not decode (a
        truncated or overwritten file) is a StoreError naming the array, wherever it is read."""
        try:
            return np.asarray(self.root[name][sel])
        except (DynagnnError, MemoryError):
            raise
        except Exception as exc:
            raise StoreError(f"{self.path}: array {name} has a chunk that cannot be read "
                             f"({one_line(exc)}); {integrity.DAMAGED}") from exc

    def verify(self) -> int:
        """Re-hash every array's data against the checksums recorded at ingest (reads the whole
        store); StoreError naming the first array that differs. Returns the bytes checked."""
        return integrity.verify(self)

    def __len__(self) -> int:
        return self.num_snapshots

    def __repr__(self) -> str:
        return (f"SnapshotStore({str(self.path)!r}, name={self.attrs.get('name')!r}, N={self.num_nodes}, "
                f"T={self.num_snapshots}, nnz={int(self.offsets[-1])})")

    def _check(self, t: int) -> int:
        if not -self.num_snapshots <= t < self.num_snapshots:
            raise IndexError(f"snapshot {t} out of range for {self.num_snapshots} snapshots")
        return t % self.num_snapshots

    def edges(self, t: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(row int64 [nnz_t], col int64 [nnz_t], weight float32 [nnz_t]) of snapshot t, sorted by (row, col)."""
        t = self._check(t)
        return self._edge_range(int(self.offsets[t]), int(self.offsets[t + 1]))

    def _edge_range(self, a: int, b: int):
        row, col = (self.read(name, slice(a, b)) for name in ("snapshots/row", "snapshots/col"))
        for name, ids in (("snapshots/row", row), ("snapshots/col", col)):
            integrity.check_ids(self.path, name, ids, self.num_nodes)
        return (row.astype(np.int64), col.astype(np.int64),
                self.read("snapshots/weight", slice(a, b)).astype(np.float32, copy=False))

    def window_edges(self, t0: int, t1: int) -> list[tuple[np.ndarray, np.ndarray, np.ndarray]]:
        """Edges of snapshots t0..t1-1, read in one slice of each array."""
        if not 0 <= t0 <= t1 <= self.num_snapshots:
            raise IndexError(f"window [{t0}, {t1}) out of range for {self.num_snapshots} snapshots")
        base = int(self.offsets[t0])
        row, col, w = self._edge_range(base, int(self.offsets[t1]))
        cuts = self.offsets[t0:t1 + 1] - base
        return [(row[a:b], col[a:b], w[a:b]) for a, b in zip(cuts[:-1], cuts[1:])]

    def has(self, name: str) -> bool:
        return name in self.root

    def features(self, t: int | None = None) -> np.ndarray | None:
        """Node features of snapshot t, float32 [N, F] (static features ignore t); None if absent."""
        if not self.has("features/x"):
            return None
        if self.root["features/x"].ndim == 2 or t is None:
            return self.read("features/x")
        return self.read("features/x", self._check(t))

    def require_features(self, t0: int = 0, t1: int | None = None) -> np.ndarray:
        """Node features, float32 [N, F] (static ones), or [t1 - t0, N, F] of snapshots t0..t1-1 of
        time-varying ones (all by default; a slice reads only the chunks that hold it); ConfigError
        naming the fix when the store has none (every model needs them)."""
        self._check_features()
        if self.root["features/x"].ndim == 2:
            return np.asarray(self.read("features/x"), dtype=np.float32)
        t1 = self.num_snapshots if t1 is None else t1
        if not 0 <= t0 <= t1 <= self.num_snapshots:
            raise IndexError(f"features [{t0}, {t1}) out of range for {self.num_snapshots} snapshots")
        return np.asarray(self.read("features/x", slice(t0, t1)), dtype=np.float32)

    def feature_dim(self) -> int:
        """The node-feature width F (the models' input width); ConfigError as :meth:`require_features`."""
        self._check_features()
        return int(self.root["features/x"].shape[-1])

    def _check_features(self) -> None:
        if not self.has("features/x"):
            raise ConfigError(f"{self.path}: the store has no node features; give the dataset a 'features' entry "
                              "(degree, identity or random) and ingest again")

    def labels(self, t: int | None = None) -> np.ndarray | None:
        """Node labels/targets [N] or [N, C] of snapshot t (static labels ignore t); None if absent."""
        if not self.has("labels/y"):
            return None
        if self.root["labels/y"].ndim == 1 or t is None:
            return self.read("labels/y")
        return self.read("labels/y", self._check(t))

    def node_ids(self) -> np.ndarray:
        """The source's id of every dense node id, [N]."""
        return self.read("nodes/id")

    def event_ids(self) -> tuple[np.ndarray, np.ndarray]:
        """(events/src, events/dst), int64 [E] each; StoreError for a node id outside [0, N), which
        is refused whenever the event stream is read."""
        src, dst = self.read("events/src"), self.read("events/dst")
        for name, ids in (("events/src", src), ("events/dst", dst)):
            integrity.check_ids(self.path, name, ids, self.num_nodes)
        return src, dst

    def events(self) -> EventStream | None:
        """The time-sorted event stream, if the source had one (with its stored negatives and
        per-event split where the store has them; StoreError for a split value other than 0, 1, 2)."""
        if not self.has("events/src"):
            return None
        def opt(name):
            return self.read(name) if self.has(name) else None
        src, dst = self.event_ids()
        negatives = None
        if self.has("negatives/event"):
            try:
                negatives = check_stored_negatives((self.read("negatives/event"),
                                                    self.read("negatives/dst")), src.size, self.num_nodes)
            except ValueError as exc:
                raise StoreError(f"{self.path}: negatives/: {exc}") from None
        split = opt("events/split")
        problem = None if split is None else integrity.split_problem(split, src.size)
        if problem:
            raise StoreError(f"{self.path}: array events/split {problem}; {integrity.DAMAGED}")
        return EventStream(src, dst, self.read("events/t"), opt("events/w"), opt("events/label"),
                           opt("events/features"), negatives=negatives, split=split)


def check_stored_negatives(negatives, num_events: int, num_nodes: int) -> tuple[np.ndarray, np.ndarray]:
    """(event int64 [M], dst int64 [M, K]) of pre-generated evaluation negatives (TGB's), checked:
    events strictly increasing within [0, E), K >= 1, destinations within [0, N); ValueError in one
    line otherwise."""
    event, dst = (np.asarray(a) for a in negatives)
    if event.ndim != 1 or dst.ndim != 2 or dst.shape[0] != event.shape[0] or dst.shape[1] < 1:
        raise ValueError(f"expected event [M] and dst [M, K >= 1], got shapes {list(event.shape)} and {list(dst.shape)}")
    if event.dtype.kind not in "iu" or dst.dtype.kind not in "iu":
        raise ValueError(f"event and dst must be integer ids, got {event.dtype} and {dst.dtype}")
    event, dst = event.astype(np.int64), dst.astype(np.int64)
    if event.size and (event[0] < 0 or event[-1] >= num_events or (np.diff(event) <= 0).any()):
        raise ValueError(f"event indices must increase strictly within [0, {num_events})")
    if dst.size and (dst.min() < 0 or dst.max() >= num_nodes):
        raise ValueError(f"negative destinations must be node ids within [0, {num_nodes})")
    return event, dst


def open_store(path: str | Path) -> SnapshotStore:
    """Open a snapshot store for reading; raises StoreError for a missing, incomplete or foreign one."""
    return SnapshotStore(path)
