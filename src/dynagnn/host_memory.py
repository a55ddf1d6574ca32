"""The host's memory as the OS reports it: the machine's physical bytes, a /proc file's field, this
process's resident bytes. A leaf without torch: the ingest stage checks a source's size with it."""

from __future__ import annotations

import os


def physical_memory() -> int | None:
    """Bytes of this machine's physical memory, or None where the OS does not say: the ingest stage's
    check of a source's size and the train stage's bound on host-memory budgets."""
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (AttributeError, ValueError, OSError):
        return None


def proc_bytes(path: str, field: str) -> int | None:
    """The ``field: <n> kB`` line of a /proc file in bytes (``VmRSS`` of /proc/self/status,
    ``MemAvailable`` of /proc/meminfo), or None where the system has none."""
    try:
        with open(path) as f:
            for line in f:
                if line.startswith(field + ":"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return None


def current_rss_bytes() -> int:
    """This process's resident memory now (Linux's ``VmRSS``; 0 where /proc has none): the start a
    peak is measured above."""
    return proc_bytes("/proc/self/status", "VmRSS") or 0
