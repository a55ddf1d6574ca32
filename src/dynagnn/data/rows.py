"""Rows of a row-chunked store array, read by chunk: what sampled training's feature fetch asks of
the store (a mini-batch's input vertices, a few thousand rows spread over millions).

:class:`RowReader` groups the ids asked for by chunk, decodes each chunk once and slices its rows
out. Where the array's layout allows (a local store, each chunk a whole run of rows stored as
``bytes`` + Blosc, the writer's layout for ``features/x``) it reads the chunk files itself: one file
read and one Blosc decode per chunk, about 15 us, where Zarr's selection machinery spends about
0.4 ms per chunk (a 7,300-row read of a 2M x 128 array: 0.10 s against 2.4 s), the same bytes
either way. Otherwise it asks Zarr. The checks of :mod:`.integrity` hold on both paths: a chunk file
that is gone, or a Blosc chunk whose length disagrees with its header, is a StoreError.

Counted per read: the chunks decoded and their decoded bytes, against the rows asked for. A chunk
holds ``chunk_rows`` rows (the writer's ``FEATURE_ROW_CHUNK_BYTES``; of a 3-D array, ``times``
snapshots of them, the writer's ``SNAPSHOT_CHUNK_BYTES``), so rows spread at random cost up to
``times × chunk_rows`` times their bytes: the read amplification a feature cache saves.
"""

from __future__ import annotations

import os

import numpy as np
from numcodecs import blosc
from zarr.codecs import BloscCodec, BytesCodec

from ..errors import StoreError
from . import integrity


class RowReader:
    """``array[ids]`` (2-D [N, F]) or ``array[snapshot, ids]`` (3-D [T, N, F]) of ``store``'s array
    ``name``, by chunk. ``read(ids)`` takes sorted distinct int64 ids and returns
    (rows [k, F] of the array's dtype, chunks decoded, bytes decoded)."""

    def __init__(self, store, name: str, snapshot: int | None = None):
        arr = store.root[name]
        if arr.ndim not in (2, 3):
            raise ValueError(f"{name}: rows are read from a 2-D or 3-D array, not {arr.ndim}-D")
        self.store, self.name, self.arr = store, name, arr
        self.snapshot = None if arr.ndim == 2 else int(snapshot)
        self.num_rows, self.width = int(arr.shape[-2]), int(arr.shape[-1])
        self.chunk_rows = int(arr.chunks[-2])
        self.times = int(arr.chunks[0]) if arr.ndim == 3 else 1   # snapshots per chunk of a 3-D array
        self.dtype = np.dtype(arr.dtype)
        self.chunk_bytes = self.times * self.chunk_rows * self.width * self.dtype.itemsize
        self.folder = store.path / name
        self.direct = self._direct_layout()

    def _direct_layout(self) -> bool:
        """Whether the chunk files can be decoded here: bytes (little-endian) then Blosc, nothing
        else; whole rows per chunk (and whole snapshots per chunk of a 3-D array); a local folder."""
        codecs = self.arr.metadata.codecs
        a = self.arr
        return (len(codecs) == 2 and isinstance(codecs[0], BytesCodec) and isinstance(codecs[1], BloscCodec)
                and (self.dtype.itemsize == 1 or str(getattr(codecs[0].endian, "value", "")) == "little")
                and a.chunks[-1] == a.shape[-1]
                and self.folder.is_dir())

    def _key(self, c: int) -> str:
        coords = (c, 0) if self.snapshot is None else (self.snapshot // self.times, c, 0)
        return self.arr.metadata.chunk_key_encoding.encode_chunk_key(coords)

    def read(self, ids: np.ndarray) -> tuple[np.ndarray, int, int]:
        ids = np.asarray(ids, dtype=np.int64)
        out = np.empty((ids.size, self.width), self.dtype)
        if not ids.size:
            return out, 0, 0
        chunk = ids // self.chunk_rows
        first = np.flatnonzero(np.r_[True, chunk[1:] != chunk[:-1]])   # ids sorted: a chunk's ids are a run
        if not self.direct:
            sel = (ids, slice(None)) if self.snapshot is None else (self.snapshot, ids, slice(None))
            out[:] = self.store.read(self.name, sel)
            return out, int(first.size), int(first.size) * self.chunk_bytes
        bounds = np.r_[first, ids.size]
        decoded = 0
        folder = os.open(self.folder, os.O_RDONLY)
        try:
            for j, c in enumerate(chunk[first].tolist()):
                block = self._decode(folder, c)
                decoded += len(block)
                lo, hi = bounds[j], bounds[j + 1]
                rows = np.frombuffer(block, self.dtype).reshape(self.times, self.chunk_rows, self.width)
                rows = rows[0 if self.snapshot is None else self.snapshot % self.times]
                out[lo:hi] = rows[ids[lo:hi] - c * self.chunk_rows]
        finally:
            os.close(folder)
        return out, int(first.size), decoded

    def _decode(self, folder: int, c: int) -> bytes:
        key = self._key(c)
        try:
            fd = os.open(key, os.O_RDONLY, dir_fd=folder)
        except FileNotFoundError:   # Zarr would read zeros
            integrity.check_chunk(self.store.path, self.name, key, None, 0, None)
            raise   # (check_chunk has raised)
        try:
            size, parts = os.fstat(fd).st_size, []
            while size > 0:  # os.read may return less than asked (e.g. on a network filesystem)
                part = os.read(fd, size)
                if not part:
                    break
                parts.append(part)
                size -= len(part)
            buf = b"".join(parts)
        except OSError as exc:
            raise StoreError(f"{self.store.path}: array {self.name}: chunk {key} cannot be read ({exc})") from exc
        finally:
            os.close(fd)
        integrity.check_chunk(self.store.path, self.name, key, buf[:integrity.BLOSC_HEADER], len(buf),
                              self.chunk_bytes)
        try:
            return blosc.decompress(buf)
        except Exception as exc:   # a damaged chunk of the right length
            raise StoreError(f"{self.store.path}: array {self.name} has a chunk that cannot be read ({key}: "
                             f"{exc}); {integrity.DAMAGED}") from exc
