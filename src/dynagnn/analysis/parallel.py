"""What every analysis shares: the Dask client and snapshot ranges as tasks.

An analysis is a function ``fn(store_path, t0, t1, *args) -> DataFrame`` over a contiguous range of
snapshots; it opens the store itself, so it runs on any worker of any cluster. :func:`map_ranges`
runs it over ranges of about equal edge count and concatenates the rows.

A task that fails on bad input (a DynagnnError, e.g. a damaged chunk of the store) reaches the
client as that error, which the CLI prints as one line; :class:`QuietInputErrors` keeps the workers
from also logging it with their traceback.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import pandas as pd
from distributed.diagnostics.plugin import WorkerPlugin

from ..data.store import SnapshotStore
from ..errors import DynagnnError

log = logging.getLogger(__name__)


def _error_names(cls: type = DynagnnError) -> set[str]:
    """The class names of DynagnnError and all its subclasses (those imported so far)."""
    return {cls.__name__}.union(*(_error_names(c) for c in cls.__subclasses__()))


class _InputErrorFilter(logging.Filter):
    """Drops what a worker logs about a task stopped by a DynagnnError: its "Compute Failed" record
    (with the traceback), since the client re-raises the error and the user sees it once, on one line;
    and the warning about the tasks still running when the stage then closes the cluster, and a
    heartbeat that found the scheduler's connection already closed (the cluster closing after the
    error: a worker's heartbeat can race the scheduler's close)."""

    def filter(self, record: logging.LogRecord) -> bool:
        msg = str(record.msg)
        if msg.startswith("Async instruction") and msg.endswith("ended with CancelledError"):
            return False  # distributed: "this should exclusively happen in Worker.close()"
        if msg.startswith("Failed to communicate with scheduler during heartbeat") and record.exc_info \
                and type(record.exc_info[1]).__name__ == "CommClosedError":
            return False
        if not msg.startswith("Compute Failed") or not isinstance(record.args, tuple):
            return True
        # distributed logs (key, state, task, repr(exception), traceback); repr starts with the class name
        text = next((a for a in record.args[3:4] if isinstance(a, str)), "")
        return text.split("(", 1)[0] not in _error_names()


class QuietInputErrors(WorkerPlugin):
    """Worker plugin installing :class:`_InputErrorFilter` on the loggers of ``distributed.worker``, in
    the worker's process (a LocalCluster of processes, or a remote cluster)."""

    name = "dynagnn-quiet-input-errors"
    idempotent = True

    def setup(self, worker) -> None:
        for name in ("distributed.worker", "distributed.worker.state_machine"):
            logger = logging.getLogger(name)
            if not any(isinstance(f, _InputErrorFilter) for f in logger.filters):
                logger.addFilter(_InputErrorFilter())


@contextmanager
def dask_client(workers: int = 1, address: str | None = None, processes: bool = True):
    """A Dask client: the cluster at ``address`` (or $DASK_SCHEDULER_ADDRESS) if one is named, else a
    LocalCluster of ``workers`` single-threaded workers, closed on exit. Its workers log no traceback
    for a task that fails on bad input (:class:`QuietInputErrors`)."""
    from dask.distributed import Client, LocalCluster

    address = address or os.environ.get("DASK_SCHEDULER_ADDRESS")
    if address:
        log.info("connecting to the Dask scheduler at %s", address)
        with Client(address) as client:
            client.register_plugin(QuietInputErrors())
            yield client
        return
    stopped = _StoppedEarly()
    nanny = logging.getLogger("distributed.nanny")
    nanny.addFilter(stopped)
    try:
        with LocalCluster(n_workers=max(1, workers), threads_per_worker=1, processes=processes,
                          dashboard_address=":0", silence_logs=logging.WARNING) as cluster, Client(cluster) as client:
            client.register_plugin(QuietInputErrors())
            log.info("local Dask cluster: %d workers (%s)", max(1, workers), "processes" if processes else "threads")
            try:
                yield client
            except BaseException:
                stopped.early = True
                raise
    finally:
        nanny.removeFilter(stopped)


class _StoppedEarly(logging.Filter):
    """Once the stage has failed (its error is what the user reads), drops the nanny's warnings
    about the worker processes it then kills in the middle of their tasks."""

    early = False

    def filter(self, record: logging.LogRecord) -> bool:
        return not (self.early and record.levelno < logging.ERROR)


def snapshot_ranges(store: SnapshotStore, parts: int) -> list[tuple[int, int]]:
    """Contiguous snapshot ranges of about equal edge count, so tasks take about equal time."""
    T = store.num_snapshots
    parts = max(1, min(parts, T))
    cum = store.offsets[1:].astype(np.float64) + np.arange(1, T + 1)  # +1 per snapshot: empty ones cost too
    cuts = np.searchsorted(cum, cum[-1] * np.arange(1, parts) / parts, side="left") + 1
    bounds = np.unique(np.concatenate([[0], np.clip(cuts, 1, T), [T]]))
    return [(int(a), int(b)) for a, b in zip(bounds[:-1], bounds[1:])]


def map_ranges(fn: Callable[..., pd.DataFrame], store_path: str | Path, ranges: list[tuple[int, int]],
               client=None, *args, desc: str = "", progress: bool = True) -> pd.DataFrame:
    """``fn(store_path, a, b, *args)`` for every range, as Dask tasks when a client is given (else
    here, in order), with a progress bar over snapshots; the rows concatenated in range order."""
    from tqdm.auto import tqdm

    store_path = str(store_path)
    total = sum(b - a for a, b in ranges)
    bar = tqdm(total=total, desc=desc, unit="snap", disable=None if progress else True)
    results: dict[tuple[int, int], pd.DataFrame] = {}
    if client is None:
        for a, b in ranges:
            results[(a, b)] = fn(store_path, a, b, *args)
            bar.update(b - a)
    else:
        from dask.distributed import as_completed

        futures = {client.submit(fn, store_path, a, b, *args, pure=False): (a, b) for a, b in ranges}
        for fut in as_completed(futures):
            a, b = futures[fut]
            results[(a, b)] = fut.result()
            bar.update(b - a)
    bar.close()
    frames = [results[r] for r in sorted(results)]
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()


def workers_of(client) -> int:
    return len(client.scheduler_info().get("workers", {})) if client is not None else 1
