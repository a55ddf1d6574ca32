"""PiPAD's sliced CSR (PiPAD §4.1; notes/pipad.md §2.2).

CSR's row offsets are replaced by one entry per *slice*: every row's non-zeros are cut into
pieces of at most ``slice_size`` consecutive non-zeros (32 in PiPAD's system, 2 in its Fig. 6).
A slice is the unit of GPU work (one thread group of a warp), which balances load across long
and short rows and gives overlap extraction a finer granule than whole rows. Empty rows own no
slice, so the format is smaller than CSR on graphs with many empty rows.

Arrays (S = number of slices, nnz = number of non-zeros):

* ``row_index`` int64 [S]   -- "Row Indices (RI)": the row of each slice, non-decreasing.
* ``slice_ptr`` int64 [S+1] -- "Slice Offsets (SO)": slice s covers ``col[slice_ptr[s]:slice_ptr[s+1]]``;
  the last entry is nnz.
* ``col`` int64 [nnz], ``val`` float32 [nnz] -- column indices and values, as in CSR.

Space (PiPAD §4.1, counted in array entries): sliced CSR ``2·nnz + 2·S + 1``,
CSR ``2·nnz + N + 1``, COO ``3·nnz``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


def csr_size_words(nnz: int, num_nodes: int) -> int:
    """CSR size in array entries, PiPAD §4.1: col + val (2·nnz) and row offsets (N+1)."""
    return 2 * int(nnz) + int(num_nodes) + 1


def coo_size_words(nnz: int) -> int:
    """COO size in array entries (PyG's layout), PiPAD §4.1: row, col, val = 3·nnz."""
    return 3 * int(nnz)


def segment_sum_sorted(row: np.ndarray, contrib: np.ndarray, num_nodes: int) -> np.ndarray:
    """Sum ``contrib`` [E, ...] into ``out`` [num_nodes, ...] by ``row`` [E] (non-decreasing).

    Uses np.add.reduceat over the runs of equal rows (much faster than np.add.at); rows with
    no entry stay zero. The result has contrib's dtype.
    """
    out = np.zeros((num_nodes,) + contrib.shape[1:], dtype=contrib.dtype)
    if row.size == 0:
        return out
    starts = np.flatnonzero(np.r_[True, row[1:] != row[:-1]])
    out[row[starts]] = np.add.reduceat(contrib, starts, axis=0)
    return out


@dataclass
class SlicedCSR:
    """A [num_nodes, num_nodes] sparse matrix in PiPAD's sliced CSR (see the module docstring).

    num_nodes: N. row_index: int64 [S]. slice_ptr: int64 [S+1]. col: int64 [nnz].
    val: float32 [nnz]. slice_size: the cap on non-zeros per slice.
    """

    num_nodes: int
    row_index: np.ndarray
    slice_ptr: np.ndarray
    col: np.ndarray
    val: np.ndarray
    slice_size: int = 32

    @property
    def nnz(self) -> int:
        return int(self.col.shape[0])

    @property
    def num_slices(self) -> int:
        return int(self.row_index.shape[0])

    @classmethod
    def from_edges(cls, row: np.ndarray, col: np.ndarray, val: np.ndarray | None, num_nodes: int,
                   slice_size: int = 32) -> "SlicedCSR":
        """Build from COO edges sorted by (row, col): row, col int64 [nnz], val float32 [nnz] or
        None (all ones). Each row of degree d gets ceil(d / slice_size) slices, empty rows none
        (the construction inferred in notes/pipad.md §2.2). Vectorised: the position of each
        non-zero inside its row decides where a slice starts.
        """
        if slice_size < 1:
            raise ValueError("slice_size must be >= 1")
        row = np.asarray(row, dtype=np.int64)
        col = np.asarray(col, dtype=np.int64)
        nnz = row.shape[0]
        val = np.ones(nnz, np.float32) if val is None else np.asarray(val, dtype=np.float32)
        if col.shape[0] != nnz or val.shape[0] != nnz:
            raise ValueError("row, col and val must have the same length")
        if nnz and np.any(row[1:] < row[:-1]):
            raise ValueError("edges must be sorted by row")
        if nnz == 0:
            return cls(int(num_nodes), np.zeros(0, np.int64), np.zeros(1, np.int64),
                       col.copy(), val.copy(), int(slice_size))
        idx = np.arange(nnz, dtype=np.int64)
        row_start = np.flatnonzero(np.r_[True, row[1:] != row[:-1]])      # first nnz of each row
        run_len = np.diff(np.r_[row_start, nnz])
        pos_in_row = idx - np.repeat(row_start, run_len)
        starts = np.flatnonzero(pos_in_row % slice_size == 0)
        slice_ptr = np.r_[starts, nnz].astype(np.int64)
        return cls(int(num_nodes), row[starts].copy(), slice_ptr, col.copy(), val.copy(),
                   int(slice_size))

    def slice_lengths(self) -> np.ndarray:
        """int64 [S]: the number of non-zeros of each slice (1..slice_size)."""
        return np.diff(self.slice_ptr)

    def to_edges(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Back to COO (row int64 [nnz], col int64 [nnz], val float32 [nnz]), sorted by (row, col)
        when the input was."""
        row = np.repeat(self.row_index, self.slice_lengths())
        return row, self.col.copy(), self.val.copy()

    def to_dense(self) -> np.ndarray:
        """float32 [N, N] dense matrix (tests and small graphs only)."""
        a = np.zeros((self.num_nodes, self.num_nodes), np.float32)
        r, c, v = self.to_edges()
        a[r, c] = v
        return a

    def spmm(self, x: np.ndarray) -> np.ndarray:
        """A·X for dense X [N, F] -> float32 [N, F].

        The CPU analogue of PiPAD's kernel (Algorithm 1): a partial sum per slice (one thread
        group's work), then the slices of a row are added (the kernel's atomicAdd). Both steps
        are np.add.reduceat over contiguous runs.
        """
        x = np.asarray(x, dtype=np.float32)
        if x.ndim != 2 or x.shape[0] != self.num_nodes:
            raise ValueError(f"x must be [{self.num_nodes}, F], got {x.shape}")
        out = np.zeros((self.num_nodes, x.shape[1]), np.float32)
        if self.nnz == 0:
            return out
        contrib = self.val[:, None] * x[self.col]                           # [nnz, F]
        partial = np.add.reduceat(contrib, self.slice_ptr[:-1], axis=0)     # [S, F]
        return segment_sum_sorted(self.row_index, partial, self.num_nodes)

    def size_words(self) -> int:
        """Size in array entries, PiPAD §4.1: 2·nnz + 2·#Slice + 1."""
        return 2 * self.nnz + 2 * self.num_slices + 1

    def to_torch(self):
        """The four arrays as torch tensors (row_index, slice_ptr, col, val); torch imported lazily."""
        import torch

        return (torch.from_numpy(self.row_index), torch.from_numpy(self.slice_ptr),
                torch.from_numpy(self.col), torch.from_numpy(self.val))
