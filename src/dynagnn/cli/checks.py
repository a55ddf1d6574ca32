"""The checks every sub-command's flags pass before its stage starts: a flag that stands for a
config key (:data:`FLAG_KEYS`) against that key's schema, and each output path (:data:`OUTPUTS`)
against what could not be written whole."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from ..analysis.stage import AnalysisOptions
from ..atomic import unwritable_reason
from ..errors import ConfigError
from .train import TRAIN_FLAGS
from .values import _flag


def _analysis_key(field: str) -> str:
    """The config key of an AnalysisOptions field: ``cache_fractions`` is ``analysis.cache.fractions``."""
    for sub in ("cache", "volume"):
        if field.startswith(f"{sub}_"):
            return f"analysis.{sub}.{field[len(sub) + 1:]}"
    return f"analysis.{field}"


_DASK_KEYS = {"workers": "dask.workers", "scheduler": "dask.scheduler_address"}

# Per stage, each flag (argparse dest) that stands for a config key: the key's schema checks the flag.
# A flag giving a list for a key of one value (profile --hidden) has each item checked.
FLAG_KEYS: dict[str, dict[str, str]] = {
    "ingest": {"threads": "ingest_threads"},
    "stats": _DASK_KEYS,
    "analyze": {**_DASK_KEYS, **{f.name: _analysis_key(f.name) for f in dataclasses.fields(AnalysisOptions)}},
    "profile": {"device": "train.device", "grid": "cost.grid", "threads": "cost.threads", "repeats": "cost.repeats",
                "models": "train.runs.items.models", "hidden": "train.hidden", "seed": "seed"},
    "schedule": {"model": "schedule.runs.items.models.items", "workers": "schedule.workers.items",
                 "window": "schedule.runs.items.window", "hidden": "schedule.runs.items.hidden",
                 "task": "train.task"},
    "train": {k: f"train.{k}" for k in TRAIN_FLAGS},
}

# Per stage, each output flag: the suffixes its file must have, or None for a directory.
OUTPUTS: dict[str, dict[str, tuple[str, ...] | None]] = {
    "stats": {"out": (".parquet",), "figure": (".png",)},
    "analyze": {"out_dir": None},
    "profile": {"out_dir": None},
    "schedule": {"out": (".json",), "figure": (".png",)},
    "train": {"out_dir": None},
    "compare": {"out": (".parquet",), "figure": (".png",)},
    "compare-sampled": {"out": (".parquet",), "figure": (".png",)},
    "compare-sven": {"out": (".parquet",), "figure": (".png",)},
    "runtimes": {"out": (".parquet",), "figure": (".png",)},
    "study": {"out": (".parquet",), "figure": (".png",)},
    "claims": {"out": (".parquet",), "html": (".html",)},
}


def check_flags(args) -> None:
    """Every given flag of the stage that stands for a config key, against that key's schema (a name of
    a registry, a model's or a strategy's, against the registry: loaded where a flag gives one)."""
    from ..config import check_value, schema_node

    for dest, key in FLAG_KEYS.get(args.stage, {}).items():
        value = getattr(args, dest, None)
        if value is not None:
            if "x-registry" in str(schema_node(key)):
                import dynagnn.choose.request  # noqa: F401  (provides the models' and strategies' names)
            check_value(key, value, _flag(dest))


def check_output(path: Path, flag: str, suffixes: tuple[str, ...] | None) -> None:
    """Refuse, before anything is written, an output path that could not be written whole: a file
    output of another suffix or that is a directory, a directory output that is a file, or a place
    whose nearest existing folder is not a writable directory."""
    if suffixes is None:
        if path.exists() and not path.is_dir():
            raise ConfigError(f"{flag} {path}: exists and is not a directory")
    else:
        if path.is_dir():
            raise ConfigError(f"{flag} {path}: is a directory; expected a {' or '.join(suffixes)} file")
        if path.suffix.lower() not in suffixes:
            raise ConfigError(f"{flag} {path}: expected a file name ending in {' or '.join(suffixes)}")
    reason = unwritable_reason(path)
    if reason:
        raise ConfigError(f"{flag} {path}: {reason}")


def check_outputs(args) -> None:
    for dest, suffixes in OUTPUTS.get(args.stage, {}).items():
        if getattr(args, dest, None) is not None:
            check_output(getattr(args, dest), _flag(dest), suffixes)
