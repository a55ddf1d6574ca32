"""The process's C allocator, set for training: PyTorch's CPU tensors are plain mallocs."""

from __future__ import annotations

import ctypes
import functools
import logging
import platform

log = logging.getLogger(__name__)

MiB = 2 ** 20
_M_TRIM_THRESHOLD, _M_TOP_PAD, _M_MMAP_THRESHOLD = -1, -2, -3   # glibc's mallopt parameters


@functools.lru_cache(maxsize=1)
def glibc():
    """The C library where it is glibc (its malloc's settings are glibc's), else None."""
    if platform.system() != "Linux" or platform.libc_ver()[0] != "glibc":
        return None
    try:
        return ctypes.CDLL("libc.so.6")
    except OSError:
        return None


@functools.lru_cache(maxsize=1)
def keep_freed_heap() -> bool:
    """Make glibc's malloc keep freed memory for reuse instead of returning it to the system
    (process-wide, once; False where the C library is not glibc). Every strategy's trainer sets it,
    so that no strategy runs under another allocator than its baseline.

    PyTorch's CPU allocator has no cache of its own: every tensor is a malloc. By default glibc
    serves blocks above a dynamic threshold (128 KiB at first) by mmap and trims the heap top above
    twice that, so the large temporaries of a step come back as fresh pages, each faulted and zeroed
    again. Measured on the churn store (MPNN-LSTM, 40,000 scored pairs per window): 6,000-14,000
    page faults per head call, a third to a half of its time, and more on the frames path, whose
    frame-wide tensors push the heap top further (PiPAD §4.4 avoids malloc/free churn for the same
    reason); with blocks up to 32 MiB kept in the heap and no trimming below 1 GiB, 700-1,100. The
    price: up to 1 GiB of freed memory stays with the process."""
    libc = glibc()
    if libc is None:
        return False
    ok = all([libc.mallopt(p, v) == 1 for p, v in ((_M_MMAP_THRESHOLD, 32 * MiB), (_M_TRIM_THRESHOLD, 1024 * MiB),
                                                   (_M_TOP_PAD, 64 * MiB))])  # a list: every setting is tried
    log.info("glibc malloc keeps freed memory (mmap threshold 32 MiB, trim threshold 1 GiB, top pad 64 MiB)%s",
             "" if ok else ": some setting refused")
    return ok


def release_freed_pages() -> bool:
    """Hand the heap's free pages back to the system (glibc's ``malloc_trim(0)``, which also releases
    the free pages inside the heap, not only its top), so that a page resident afterwards is one a
    live block or a later write touched; False where the C library is not glibc. The memory model
    calls it before it counts a step's saved buffers by their resident pages
    (:func:`dynagnn.choose.memory_model.saved_bytes`): without it a buffer served from pages an earlier
    step had touched counts in full, and the count depends on what the process ran before."""
    libc = glibc()
    if libc is None:
        return False
    libc.malloc_trim(0)   # 1 if it released memory, 0 if there was none to release
    return True
