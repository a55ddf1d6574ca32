"""A run over seeds: one training run per seed, each in its own folder, and the tables over them."""

from __future__ import annotations

import dataclasses
import logging
from pathlib import Path

from dynagnn.api.run import train
from dynagnn.errors import ConfigError

log = logging.getLogger("dynagnn")


def seed_row(metrics, seed: int) -> dict:
    """One seed's row of a run's ``metrics`` (a training run's metrics.parquet): ``seed``, its best
    epoch, that epoch's loss and validation and test metrics."""
    best = metrics[metrics["best"]].iloc[0]
    keep = ["loss"] + [c for c in metrics.columns if c.startswith(("val_", "test_"))]
    return {"seed": int(seed), "epoch": int(best["epoch"]), **{c: float(best[c]) for c in keep}}


def seed_summary(per_seed, negative_kind: str | None = None):
    """The mean and standard deviation over seeds of every metric of ``per_seed`` (one row per seed,
    :func:`seed_row`'s): a table of ``metric``, ``mean``, ``std`` (the population's, numpy's default,
    as DyGLib reports it), ``n``, and ``eval_negative_kind`` (the link metrics' negatives, the
    unprefixed ones; None for another task). A metric NaN in some seed is NaN in the summary: a mean
    over the seeds that had it would hide that the others did not."""
    import numpy as np
    import pandas as pd

    cols = [c for c in per_seed.columns if c not in ("seed", "epoch")]
    values = per_seed[cols].to_numpy(dtype=np.float64)
    return pd.DataFrame({"metric": cols, "mean": values.mean(0), "std": values.std(0), "n": len(per_seed),
                         "eval_negative_kind": negative_kind})


def write_seed_tables(out, per_seed, negative_kind: str | None = None):
    """``out/seeds.parquet`` (``per_seed``) and ``out/summary.parquet`` (:func:`seed_summary`), written
    together; returns the summary."""
    from dynagnn.atomic import write_all

    summary = seed_summary(per_seed, negative_kind)
    write_all({Path(out) / "seeds.parquet": lambda tmp: per_seed.to_parquet(tmp, index=False),
               Path(out) / "summary.parquet": lambda tmp: summary.to_parquet(tmp, index=False)})
    return summary


def gather_seeds(out, seeds=None):
    """``out/seeds.parquet`` and ``out/summary.parquet`` from the finished runs ``out/seed-<k>/`` (each
    one seed's training run, as :func:`train_seeds` or the workflow's per-seed jobs write them; ``seeds``:
    those, else every ``seed-<k>`` folder there). Returns (per-seed table, summary); InputError, in one
    line, where a seed's run is missing or is not a training run, or where the runs differ in their
    evaluation negatives."""
    import pandas as pd

    from dynagnn.errors import InputError

    out = Path(out)
    if seeds is None:
        seeds = sorted(int(d.name[5:]) for d in out.glob("seed-*") if d.name[5:].isdigit())
    if not seeds:
        raise InputError("no seed-<k> folder here: nothing to gather", out)
    tables = {}
    for k in seeds:
        path = out / f"seed-{int(k)}" / "metrics.parquet"
        try:
            tables[int(k)] = pd.read_parquet(path)
        except (OSError, ValueError) as exc:
            raise InputError(f"seed {k}: no readable training run ({' '.join(str(exc).split())[:120]})", path) from None
        if "best" not in tables[int(k)].columns:
            raise InputError(f"seed {k}: not a training run's metrics (no best column)", path)
    kinds = {negative_kind_of(t) for t in tables.values()}
    if len(kinds) > 1:
        raise InputError(f"the seeds' runs were evaluated on different negatives ({', '.join(map(str, sorted(kinds, key=str)))}): "
                         "their metrics are not one quantity", out)
    per_seed = pd.DataFrame([seed_row(t, k) for k, t in tables.items()])
    return per_seed, write_seed_tables(out, per_seed, kinds.pop())


def negative_kind_of(metrics) -> str | None:
    """The evaluation negatives a run's metrics table was taken on (None: not a link task)."""
    if "eval_negative_kind" not in metrics.columns or not len(metrics):
        return None
    return str(metrics["eval_negative_kind"].iloc[0])


def train_seeds(store_path, out, config, seeds, progress: bool = True, overwrite: bool = False):
    """:func:`train` once per seed of ``seeds`` into ``out/seed-<k>/`` (each run its own out-dir, with
    ``config.seed`` = k), then ``out/seeds.parquet`` (each seed's best epoch: ``seed``, ``epoch``, its
    loss and validation and test metrics) and ``out/summary.parquet`` (:func:`seed_summary`), written
    together once every seed has trained. ``out`` may hold only those (a folder of another seed set
    or another run is refused, unless ``overwrite``). Returns (per-seed table, summary); None on the
    other ranks of a torchrun job (every rank runs every seed: each seed is one job)."""
    import pandas as pd

    from dynagnn.atomic import folder_refusal

    seeds = [int(k) for k in seeds]
    if not seeds or len(set(seeds)) != len(seeds):
        raise ConfigError(f"seeds {seeds}: give one or more distinct seeds")
    reason = folder_refusal(out, {"seeds.parquet", "summary.parquet", *(f"seed-{k}" for k in seeds)},
                            "the out-dir of a run over seeds")
    if reason and not overwrite:
        raise ConfigError(f"{reason} (or --overwrite)")
    rows, rank0, kind = [], True, None
    for i, k in enumerate(seeds):
        log.info("seed %d (%d of %d) into %s", k, i + 1, len(seeds), Path(out) / f"seed-{k}")
        result = train(store_path, Path(out) / f"seed-{k}", dataclasses.replace(config, seed=k),
                       progress=progress, overwrite=overwrite)
        if result is None:   # another rank of a torchrun job: it joins every seed's job, rank 0 reports
            rank0 = False
            continue
        metrics, _ = result
        rows.append(seed_row(metrics, k))
        kind = negative_kind_of(metrics)
    if not rank0:
        return None
    per_seed = pd.DataFrame(rows)
    return per_seed, write_seed_tables(out, per_seed, kind)
