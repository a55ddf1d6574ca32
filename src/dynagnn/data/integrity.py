"""Why a damaged snapshot store refuses to read instead of reading as zeros (issue 18).

Zarr fills a chunk it cannot find with the array's fill value, so a store whose folder or chunk file
was deleted would read as zeros and every stage would go on with wrong numbers. The writer therefore
writes every chunk (all-zero ones too) and records a sha256 of each array's data in the root
attribute ``array_sha256``; this module checks a store against them:

- :func:`check_layout`, on every open, cheaply: one directory listing and one small metadata file per
  array. Every array the attributes list is present, its own ``zarr.json`` agrees with the
  consolidated copy, and it holds every chunk file its shape and chunk grid call for.
- :class:`CheckedStore`, on every chunk read: a chunk file that is gone (deleted after the open), or a
  Blosc chunk whose length disagrees with its header (a truncated file, which c-blosc would decode
  into garbage by reading past its end). Other codecs (Zstd, for string ids) find such damage
  themselves; :meth:`dynagnn.data.store.SnapshotStore.read` turns their errors into StoreErrors.
- :func:`check_shapes`, on every open: the arrays' shapes against the attributes (T, N, nnz, events)
  and the offsets against the edge count.
- :func:`check_ids`, on every read of edges: the node ids lie in [0, N).
- :func:`split_problem`, on every read of the events (and by the writer): ``events/split`` holds
  only 0 (train), 1 (validation) and 2 (test). It must respect time order too (no training event
  after a validation one, no validation event after a test one); that is checked when the event task
  is made (:func:`dynagnn.tasks.events.check_split_order`), not here.
- :func:`verify`, on request (``dynagnn info --verify``): every array's data read whole and re-hashed
  against ``array_sha256``; a damaged chunk of the same size is found only this way.

Every error is a StoreError naming the store and the array.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import os
from collections.abc import Iterable
from pathlib import Path

import numpy as np
import zarr
from zarr.storage import LocalStore, WrapperStore

from ..errors import StoreError, one_line

DAMAGED = "the store is damaged; re-run the ingest stage to rebuild it"
DIGESTS = "array_sha256"  # the root attribute {array name: sha256 of its data}
VERIFY_BLOCK_BYTES = 64 << 20  # decoded bytes per read while verifying


class Digest:
    """sha256 of an array's data fed in blocks along its first axis; the same for any cut into blocks,
    and the same for numpy's fixed-width strings (the writer's) and variable-width ones (Zarr's):
    strings are hashed as two streams, their UTF-8 lengths and their bytes."""

    def __init__(self, dtype: np.dtype, shape: tuple[int, ...]):
        self.strings = np.dtype(dtype).kind in "OUST"
        self.h = hashlib.sha256(f"{'str' if self.strings else np.dtype(dtype).str} {tuple(shape)}\n".encode())
        self.lengths = hashlib.sha256()

    def update(self, block: np.ndarray) -> None:
        if self.strings:
            encoded = [str(s).encode() for s in np.asarray(block).reshape(-1).tolist()]
            self.lengths.update(np.fromiter(map(len, encoded), np.int64, len(encoded)))
            self.h.update(b"".join(encoded))
        elif block.size:
            self.h.update(memoryview(np.ascontiguousarray(block)).cast("B"))

    def hexdigest(self) -> str:
        h = self.h.copy()
        if self.strings:
            h.update(self.lengths.digest())
        return h.hexdigest()


def data_digest(data: np.ndarray) -> str:
    """The digest the writer records for an array it writes whole."""
    d = Digest(data.dtype, data.shape)
    d.update(data)
    return d.hexdigest()


BLOSC_HEADER = 16  # c-blosc1: version, versionlz, flags, typesize, then uint32 nbytes, blocksize, cbytes


class CheckedStore(WrapperStore):
    """A Zarr store (read-only, local) that refuses what Zarr would otherwise read as data: a chunk
    key of a known array with no file (Zarr: the fill value), and a Blosc chunk whose length or
    decoded size disagrees with its header (c-blosc1 trusts the header and reads past the end of a
    truncated chunk: garbage, not an error). ``blosc``: {array name: decoded bytes of one chunk, or
    None for an array without Blosc}."""

    def __init__(self, store, path: Path | None = None, blosc: dict[str, int | None] | None = None):
        super().__init__(store)
        self.path = path
        self.blosc = blosc or {}

    def _with_store(self, store):
        return type(self)(store, self.path, self.blosc)

    async def get(self, key, prototype, byte_range=None):
        buf = await self._store.get(key, prototype, byte_range)
        name, _, chunk = key.rpartition("/")
        if name not in self.blosc or chunk == "zarr.json":
            return buf
        want = self.blosc[name] if byte_range is None else None
        check_chunk(self.path, name, chunk, None if buf is None else buf[:BLOSC_HEADER].to_bytes(),
                    0 if buf is None else len(buf), want)
        return buf


def check_chunk(path, name: str, chunk: str, head: bytes | None, length: int, want: int | None) -> None:
    """StoreError for chunk ``chunk`` of array ``name`` when its file is gone (``head`` None), or,
    ``want`` given (decoded bytes of a chunk), when its Blosc header (``head``, the first bytes of
    its ``length``) disagrees with its length or with ``want``."""
    if head is None:
        raise StoreError(f"{path}: array {name} is missing chunk {chunk}, which would read as zeros; {DAMAGED}")
    if want is not None:
        size, stored = (int.from_bytes(head[a:a + 4], "little") for a in (4, 12))
        if len(head) < BLOSC_HEADER or stored != length or size != want:
            raise StoreError(f"{path}: array {name}: chunk {chunk} is truncated or damaged "
                             f"({length} bytes, its header says {stored} bytes holding {size}, "
                             f"a chunk holds {want}); {DAMAGED}")


def _blosc_sizes(nodes: dict) -> dict[str, int | None]:
    """{array name: decoded bytes of one of its chunks if Blosc compresses it, else None}."""
    out: dict[str, int | None] = {}
    for name, m in nodes.items():
        if not isinstance(m, dict) or m.get("node_type") != "array":
            continue
        codecs = [c.get("name") if isinstance(c, dict) else c for c in m.get("codecs", [])]
        try:
            chunk = m["chunk_grid"]["configuration"]["chunk_shape"]
            out[name] = int(np.prod(chunk)) * np.dtype(m["data_type"]).itemsize if "blosc" in codecs else None
        except (KeyError, TypeError):
            out[name] = None  # zarr itself rejects metadata it cannot read
    return out


def open_root(path: Path):
    """(root group read through a :class:`CheckedStore`, consolidated metadata {node: dict}) of the
    store at ``path``; StoreError for a folder that is not a Zarr group with consolidated metadata."""
    try:
        meta = json.loads((path / "zarr.json").read_text())
    except FileNotFoundError as exc:
        raise StoreError(f"{path}: not a Zarr group (no zarr.json); is this a snapshot store?") from exc
    except (OSError, ValueError) as exc:
        raise StoreError(f"{path}: not a readable Zarr group (zarr.json: {one_line(exc)})") from exc
    nodes = meta.get("consolidated_metadata") if isinstance(meta, dict) else None
    nodes = nodes.get("metadata") if isinstance(nodes, dict) else None
    if not isinstance(nodes, dict):
        raise StoreError(f"{path}: zarr.json lists no arrays (no consolidated metadata): not a snapshot store, "
                         f"or {DAMAGED}")
    store = CheckedStore(LocalStore(path, read_only=True), path, _blosc_sizes(nodes))
    try:
        root = zarr.open_group(store, mode="r")
    except Exception as exc:  # zarr raises several kinds for metadata it cannot read
        raise StoreError(f"{path}: not a readable Zarr group ({one_line(exc)})") from exc
    return root, nodes


def _chunk_files(folder: Path) -> set[str]:
    """Every file under an array's folder but its metadata, by relative path with '/' (one listing
    when chunk keys use '.', as the writer's do)."""
    found = set()
    for dirpath, _, files in os.walk(folder):
        rel = os.path.relpath(dirpath, folder)
        found.update(f if rel == "." else f"{rel}/{f}".replace(os.sep, "/") for f in files)
    found.discard("zarr.json")
    return found


def expected_chunks(arr) -> list[str]:
    """The chunk keys a fully written Zarr array holds, from its shape and chunk grid."""
    if arr.size == 0:
        return []
    encode = arr.metadata.chunk_key_encoding.encode_chunk_key
    return [encode(c) for c in itertools.product(*(range(n) for n in arr.cdata_shape))]


def check_layout(path: Path, root, meta: dict, names: Iterable[str]) -> None:
    """StoreError unless each named array has its folder, a metadata file that agrees with the
    consolidated one (``meta``), and every chunk file; also when ``meta`` lists other arrays."""
    names = sorted(names)
    listed = sorted(k for k, v in meta.items() if isinstance(v, dict) and v.get("node_type") == "array")
    extra = sorted(set(listed) - set(names))
    if extra:
        raise StoreError(f"{path}: array {extra[0]} is not among the arrays the store's attributes record; {DAMAGED}")
    for name in names:
        folder = path / name
        if name not in meta:
            raise StoreError(f"{path}: array {name} is not in the store's consolidated metadata; {DAMAGED}")
        if not folder.is_dir():
            raise StoreError(f"{path}: array {name} is missing (no folder {name}/); {DAMAGED}")
        try:
            own = json.loads((folder / "zarr.json").read_text())
        except (OSError, ValueError) as exc:
            raise StoreError(f"{path}: array {name}: its metadata {name}/zarr.json is unreadable "
                             f"({one_line(exc)}); {DAMAGED}") from exc
        if own != meta[name]:
            raise StoreError(f"{path}: array {name}: its metadata {name}/zarr.json disagrees with the store's "
                             f"consolidated metadata; {DAMAGED}")
        want = expected_chunks(root[name])
        missing = set(want) - _chunk_files(folder)
        if missing:
            first = next(k for k in want if k in missing)
            raise StoreError(f"{path}: array {name} is missing chunk {first} ({len(missing)} of {len(want)} "
                             f"chunks missing, which would read as zeros); {DAMAGED}")


def check_shapes(store) -> None:
    """StoreError unless the arrays' shapes agree with the attributes (T, N, nnz, events) and the
    offsets rise from 0 to the edge count."""
    T, N, root, path = store.num_snapshots, store.num_nodes, store.root, store.path
    nnz = int(store.attrs["num_edges"])
    want = {"snapshots/offsets": (T + 1,), "snapshots/time": (T,), "nodes/id": (N,),
            **{f"snapshots/{k}": (nnz,) for k in ("row", "col", "weight")}}
    events = int(store.attrs.get("num_events", 0))
    for name in store.array_names:
        arr = root[name]
        shape = tuple(arr.shape)
        if name in want:
            expect = want[name]
        elif name.startswith("events/"):
            expect = (events,) + shape[1:]
        elif name == "features/x":  # [N, F] static or [T, N, F]
            expect = ((N,) if arr.ndim == 2 else (T, N)) + shape[-1:]
        elif name == "labels/y":  # [N], [T, N] or [T, N, C]
            expect = ((N,) if arr.ndim == 1 else (T, N)) + shape[2:]
        elif name == "negatives/dst":  # a row of K destinations per listed event (TGB's negatives)
            expect = (int(root["negatives/event"].shape[0]),) + shape[1:] if "negatives/event" in root else ()
        else:
            continue
        if shape != expect:
            raise StoreError(f"{path}: array {name} has shape {shape}, the attributes call for {expect} "
                             f"(N={N}, T={T}, {nnz} edges, {events} events); {DAMAGED}")
    off = store.offsets
    falls = np.flatnonzero(np.diff(off) < 0)
    if off[0] != 0:
        why = f"offsets[0] = {int(off[0])}, not 0"
    elif falls.size:
        k = int(falls[0])
        why = f"offsets[{k}] = {int(off[k])} > offsets[{k + 1}] = {int(off[k + 1])}"
    elif off[-1] != nnz:
        why = f"offsets[{T}] = {int(off[-1])}, but the edge arrays hold {nnz} edges"
    else:
        return
    raise StoreError(f"{path}: array snapshots/offsets is inconsistent ({why}); {DAMAGED}")


def check_ids(path: Path, name: str, ids: np.ndarray, n: int) -> None:
    """StoreError unless every node id in ``ids`` lies in [0, n)."""
    if ids.size and (int(ids.min()) < 0 or int(ids.max()) >= n):
        bad = int(ids.min()) if int(ids.min()) < 0 else int(ids.max())
        raise StoreError(f"{path}: array {name} holds node id {bad}, outside [0, {n}); {DAMAGED}")


NODE_ID_ARRAYS = ("snapshots/row", "snapshots/col", "events/src", "events/dst")


def split_problem(split: np.ndarray, num_events: int, first: int = 0) -> str | None:
    """What is wrong with a stored per-event split (``events/split``, or a block of it starting at
    event ``first``): not integers [num_events], or a value other than 0 (train), 1 (validation) or
    2 (test); None when nothing is."""
    split = np.asarray(split)
    if split.shape != (num_events,):
        return f"has shape {list(split.shape)}, the {num_events} events call for [{num_events}]"
    if split.dtype.kind not in "iu":
        return f"holds {split.dtype} values, not integers"
    bad = np.flatnonzero((split < 0) | (split > 2))
    if bad.size:
        return (f"holds {int(split[bad[0]])} at event {first + int(bad[0])}: expected 0 (train), 1 (validation) "
                "or 2 (test)")
    return None


def verify(store) -> int:
    """Read every array whole and compare its sha256 with the one recorded at ingest; StoreError
    naming the first array that differs. Returns the bytes of data checked."""
    digests = store.attrs[DIGESTS]
    total = 0
    for name in sorted(digests):
        arr = store.root[name]
        d = Digest(arr.dtype, arr.shape)
        row_bytes = max(1, int(np.prod(arr.shape[1:], dtype=np.int64)) * arr.dtype.itemsize)
        step = arr.chunks[0] * max(1, VERIFY_BLOCK_BYTES // (row_bytes * arr.chunks[0]))
        for a in range(0, arr.shape[0], step):
            block = store.read(name, slice(a, a + step))
            if name in NODE_ID_ARRAYS:
                check_ids(store.path, name, block, store.num_nodes)
            problem = split_problem(block, block.shape[0], a) if name == "events/split" else None
            if problem:
                raise StoreError(f"{store.path}: array {name} {problem}; {DAMAGED}")
            d.update(block)
            total += block.nbytes
        if d.hexdigest() != digests[name]:
            raise StoreError(f"{store.path}: array {name} does not match its checksum (its data changed "
                             f"after ingest); {DAMAGED}")
    return total
