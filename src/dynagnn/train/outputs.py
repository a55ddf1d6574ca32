"""A training run's out-dir: which files it holds, whether a run may write there (a finished run of
another model, strategy, store or config is replaced only when asked), and its outputs published all
or none, kept elsewhere when the out-dir cannot take them.
"""

from __future__ import annotations

import json
import logging
import os
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from dynagnn.atomic import folder_refusal, remove_stale_temporaries_in, replace_refusal, write_all
from dynagnn.errors import ConfigError, DynagnnError, one_line
from dynagnn.train.run_config import TrainConfig, shared_fields

log = logging.getLogger("dynagnn.train.engine")


class TrainingError(DynagnnError):
    """Training cannot go on (a NaN loss, a checkpoint of another run)."""


# The files of a training run's out-dir: what _train_here writes, and the CLI's figure beside them.
RUN_FILES = ("metrics.parquet", "timings.parquet", "comm.parquet", "model.pt", "training.png", "training.pdf")


@dataclass(frozen=True)
class Record:
    """What a layer above the engine records with a run it asked for (the chooser: dynagnn.choose).
    ``identity``: the run as the user asked for it (``model``, ``strategy``, ``as_dict()``,
    ``tuning_keys``), whose out-dir this is, where the engine trains ``config``; ``files``: {name:
    bytes} published with the outputs, all or none; ``columns``: {name: value} of every row of
    metrics.parquet, also in its metadata; ``replaces``: names of such files an earlier run in the
    out-dir may have left, removed once this run's outputs are published (they were not this run's)."""

    identity: object
    files: dict = field(default_factory=dict)
    columns: dict = field(default_factory=dict)
    replaces: tuple = ()

    def names(self) -> tuple[str, ...]:
        return tuple(self.files) + tuple(self.replaces)


# Where a run's outputs go when its out-dir cannot take them (a full disk): this variable, else
# <the system's temporary folder>/dynagnn-rescue.
RESCUE_ENV = "DYNAGNN_RESCUE_DIR"


def _run_found(metrics: Path) -> dict | str:
    """The identity of the finished run whose ``metrics.parquet`` this is ({model, strategy, config,
    store_checksum, epochs}), or why it is not one a training run wrote."""
    import pyarrow.parquet as pq

    try:
        schema = pq.read_schema(metrics)
        rows = pq.ParquetFile(metrics).metadata.num_rows
    except Exception as exc:  # noqa: BLE001 (pyarrow's errors are of many kinds)
        return f"unreadable as Parquet ({one_line(exc)})"
    meta = {k.decode(errors="replace"): v.decode(errors="replace") for k, v in (schema.metadata or {}).items()}
    if "dynagnn.model" not in meta or "dynagnn.config" not in meta:
        return "a table without the dynagnn.model and dynagnn.config metadata a training run writes"
    try:
        config = json.loads(meta["dynagnn.config"])
    except ValueError:
        config = None
    if not isinstance(config, dict):
        return "its dynagnn.config metadata is not a JSON object"
    return {"model": meta["dynagnn.model"], "strategy": meta.get("dynagnn.strategy", ""), "config": config,
            "store_checksum": meta.get("dynagnn.store_checksum", ""), "epochs": rows}


def _differences(found: dict, config: TrainConfig, checksum: str) -> tuple[list[str], list[str]]:
    """How the finished run ``found`` differs from this one, in words: (what makes it another run,
    the config's ``tuning_keys`` that differ)."""
    new = json.loads(json.dumps(config.as_dict(), default=str))
    diffs = [f"{key} {found[key]} (this run: {value})" for key, value in
             (("model", config.model), ("strategy", config.strategy)) if found[key] != value]
    if found["store_checksum"] != checksum:
        diffs.append(f"another store (checksum {found['store_checksum'][:12] or 'none'}, this run's {checksum[:12]})")
    old, tuning = found["config"], []
    keys = set(old) | set(new)
    if found["strategy"] != config.strategy:  # another strategy's options are not this one's to compare
        keys &= set(shared_fields())
    for key in sorted(keys):
        if key in ("model", "strategy") or old.get(key) == new.get(key):
            continue
        words = f"{key} {json.dumps(old.get(key))} (this run: {json.dumps(new.get(key))})"
        (tuning if key in config.tuning_keys else diffs).append(words)
    return diffs, tuning


def out_dir_refusal(out: str | Path, config: TrainConfig, checksum: str, overwrite: bool = False,
                    resume: str | Path | None = None, extra: tuple[str, ...] = ()) -> str | None:
    """Why this run may not write its outputs into ``out``, or None; asked before it trains.

    ``out`` must be absent, empty, or a training run's out-dir (only :data:`RUN_FILES`, none of them a
    folder: :func:`dynagnn.atomic.folder_refusal`); a finished run there (its ``metrics.parquet``) of
    another model, strategy, store or config (the config's ``tuning_keys`` aside: those are logged), or a
    metrics.parquet no run wrote, is replaced only with ``overwrite``. Resuming from the run's own
    model.pt continues it. ``extra``: the files of a :class:`Record` the run may find or write there.
    ``config``: the run's identity (a TrainConfig, or a request a layer above resolves to one)."""
    out = Path(out)
    files = RUN_FILES + tuple(extra)
    reason = folder_refusal(out, files, "a training run's out-dir")
    if reason:
        return reason
    for name in files:
        reason = replace_refusal(out / name, "file")
        if reason:
            return reason
    metrics = out / "metrics.parquet"
    if overwrite or not metrics.is_file():
        return None
    if resume is not None and Path(resume).resolve() == (out / "model.pt").resolve():
        return None
    found = _run_found(metrics)
    if isinstance(found, str):
        return (f"--out-dir {out} holds {metrics.name}, {found}; nothing was changed: give another --out-dir, "
                "or --overwrite to replace it")
    diffs, tuning = _differences(found, config, checksum)
    if not diffs:
        if tuning:
            log.warning("replacing the finished run in %s (same model, strategy, store and options) with "
                        "other tuning: %s", out, "; ".join(tuning))
        return None
    more = f" and {len(diffs) - 4} more" if len(diffs) > 4 else ""
    epochs = f"{found['epochs']} epoch{'' if found['epochs'] == 1 else 's'}"
    return (f"--out-dir {out} holds a finished run of {found['model']}/{found['strategy']} ({epochs} "
            f"in its metrics.parquet) that differs from this one: {'; '.join(diffs[:4])}{more}; nothing "
            f"was changed: give another --out-dir, or --overwrite to replace that run")


def prepare_out_dir(out: str | Path, config: TrainConfig, checksum: str, overwrite: bool = False,
                    resume: str | Path | None = None, extra: tuple[str, ...] = ()) -> None:
    """Refuse an out-dir this run may not write (:func:`out_dir_refusal`, ConfigError) and remove the
    temporaries a killed run left in it; before training starts."""
    reason = out_dir_refusal(out, config, checksum, overwrite, resume, extra)
    if reason:
        raise ConfigError(reason)
    _remove_stale(out)


def _remove_stale(out: Path) -> None:
    for stale in remove_stale_temporaries_in(out):
        log.info("removed %s, left by a training run that no longer runs", stale)


def rescue_dir(out: Path) -> Path:
    """A fresh folder for the outputs of a run whose out-dir could not take them: under
    ``$DYNAGNN_RESCUE_DIR``, else ``<temporary folder>/dynagnn-rescue``."""
    base = Path(os.environ.get(RESCUE_ENV) or Path(tempfile.gettempdir()) / "dynagnn-rescue")
    name = Path(os.path.abspath(out)).name or "run"
    return base / f"{name}-{time.strftime('%Y%m%d-%H%M%S')}-{os.getpid()}"


def _publish(out: Path, writers: dict) -> None:
    """Write the run's files into ``out``, all or none; when the out-dir cannot take them (a full
    disk, a folder in the way), keep them in :func:`rescue_dir` and say where, in one TrainingError."""
    try:
        write_all({out / name: w for name, w in writers.items()})
        return
    except OSError as exc:
        failure = one_line(exc)
        cause = exc
    kept = rescue_dir(out)
    try:
        write_all({kept / name: w for name, w in writers.items()})
    except OSError as again:
        raise TrainingError(f"{failure}; keeping the trained run in {kept} failed too ({one_line(again)}): set "
                            f"{RESCUE_ENV} to a folder on a disk with space and train again") from cause
    raise TrainingError(f"{failure}; the trained run ({', '.join(writers)}) was kept in {kept} ({RESCUE_ENV} "
                        f"chooses where): move the files into {out} once it can take them") from cause
