"""The profile stage: time the operators over a grid spanning the run's stores, fit the predictor.

``python -m dynagnn profile`` is a thin front over :func:`profile_stage`. The grid:

- ``quick``: :func:`~dynagnn.cost.profile.quick_grid` (tests; a few seconds);
- ``medium``: :func:`~dynagnn.cost.profile.medium_grid` (the benchmark's, about a minute);
- ``auto``: :func:`~dynagnn.cost.profile.build_grid` over the stores' snapshot shapes and the
  models' widths, with few levels per dimension (:data:`AUTO_LEVELS`) so that the default run
  profiles in well under a minute on CPU. The shapes are those the training engine runs: every
  dense operator acts on all N rows of the store (the engine's tensors are ``[N, F]`` for every
  snapshot), and the graph operator on ``nnz = edges + N`` (with the self-loops).

Only the operators the models need are profiled (all of them when no model is named). With ``link``
(the default) the channel between a worker's two processes is timed too (:mod:`.link`: the
hand-over and the all-reduce, two gloo processes, a few seconds) and its fitted costs kept in the
predictor's ``meta["link"]``, which the schedule stage charges for BLAD's hand-overs and all-reduce.
"""

from __future__ import annotations

import logging
import time
from pathlib import Path
from typing import Sequence

import numpy as np
import pandas as pd

from ..atomic import remove_stale_temporaries_in
from ..data.store import open_store
from ..errors import ConfigError
from .models import model_calls, model_widths
from .fit import fit, held_out_table
from .predictor import Predictor
from .profile import OPERATORS, Grid, build_grid, medium_grid, profile_operators, quick_grid, write_profile

log = logging.getLogger(__name__)

GRIDS = ("auto", "quick", "medium")
# vertex, degree and width levels of the auto grid, and the span margin around the data
AUTO_LEVELS = {"vertex_levels": 5, "degree_levels": 4, "width_levels": 4, "margin": 1.0}


def store_shapes(stores: Sequence) -> list[tuple[int, int]]:
    """(N, nnz of Â = edges + N) of every snapshot of every store (deduplicated)."""
    shapes: set[tuple[int, int]] = set()
    for s in stores:
        st = open_store(s)
        n = int(st.num_nodes)
        shapes |= {(n, int(e) + n) for e in np.diff(np.asarray(st.offsets))}
    return sorted(shapes)


def operators_of(models: Sequence[str] | None) -> tuple[str, ...]:
    """The profiled operators the named models need (in OPERATORS order); all without models."""
    if not models:
        return OPERATORS
    need = set().union(*(model_calls(m, 8, 8).required_operators() for m in models))
    return tuple(op for op in OPERATORS if op in need)


def stage_grid(kind: str, *, stores: Sequence = (), widths: Sequence[int] | None = None,
               models: Sequence[str] | None = None, hidden: Sequence[int] = (32,)) -> Grid:
    """The grid of ``kind`` (``auto``, ``quick`` or ``medium``) restricted to the models' operators.

    auto: vertex and degree levels span the stores' snapshots, width levels span ``widths`` (default:
    every width the models run at, :func:`~dynagnn.cost.models.model_widths`, for the stores'
    feature widths and the ``hidden`` widths)."""
    ops = operators_of(models)
    if kind == "quick":
        g = quick_grid()
    elif kind == "medium":
        g = medium_grid()
    elif kind == "auto":
        if not stores:
            raise ConfigError("profile grid 'auto' spans the stores' shapes: give --stores (or use --grid quick/medium)")
        if not widths:
            in_dims = sorted({open_store(s).feature_dim() for s in stores})
            widths = model_widths(models or ("tgcn", "evolvegcn_o", "wdgcn", "mpnn_lstm", "gcrn"), in_dims, hidden)
        return build_grid(store_shapes(stores), widths, operators=ops, **AUTO_LEVELS)
    else:
        raise ConfigError(f"profile grid must be one of {', '.join(GRIDS)}, got {kind!r}")
    if widths:
        g.widths = sorted({int(w) for w in widths})
    g.operators = ops
    return g


def fit_link_into(pred: Predictor, repeats: int = 5) -> Predictor:
    """Time the co-located channel (:func:`~dynagnn.cost.link.profile_link`) and keep its fitted
    costs in ``pred.meta["link"]``; returns ``pred``."""
    from .link import fit_link, profile_link

    cost = fit_link(profile_link(repeats=repeats))
    pred.meta["link"] = cost.to_dict()
    log.info("co-located channel: hand-over %.3f ms + %.3f ms/MiB, all-reduce %.3f ms + %.3f ms/MiB",
             1e3 * cost.handover[0], 2**20 * 1e3 * cost.handover[1], 1e3 * cost.allreduce[0],
             2**20 * 1e3 * cost.allreduce[1])
    return pred


def profile_stage(out_dir: str | Path, *, device: str = "cpu", grid: str = "auto", stores: Sequence = (),
                  widths: Sequence[int] | None = None, models: Sequence[str] | None = None,
                  hidden: Sequence[int] = (32,), threads: int | None = None, repeats: int = 5, warmup: int = 2,
                  seed: int = 0, progress: bool = True, link: bool = True) -> tuple[pd.DataFrame, Predictor, pd.DataFrame]:
    """Profile, fit and write ``profile.parquet`` and ``predictor.json`` in ``out_dir``; returns (profile
    table, predictor, held-out table: what ``report.figures.predicted_vs_measured`` draws)."""
    out_dir = Path(out_dir)
    remove_stale_temporaries_in(out_dir)  # what a killed run left (dynagnn.atomic)
    g = stage_grid(grid, stores=stores, widths=widths, models=models, hidden=hidden)
    log.info("grid %s: N %s, degree %s, widths %s, operators %s (%d shapes)", grid, g.vertices, g.degrees,
             g.widths, ", ".join(g.operators), len(g.points()))
    t0 = time.perf_counter()
    df = profile_operators(g, device, repeats=repeats, warmup=warmup, seed=seed, progress=progress,
                           threads=threads)
    seconds = time.perf_counter() - t0
    pred = fit(df, seed=seed, source=str(out_dir / "profile.parquet"))
    if link and str(device).split(":")[0] == "cpu":
        fit_link_into(pred, repeats=repeats)
    elif link:  # the timing moves host tensors: a GPU's pair also copies each message device <-> host
        log.info("channel between co-located processes not timed on %s: plans charge hand-overs nothing", device)
    pred.meta.update({"grid": grid, "vertices": list(map(int, g.vertices)), "degrees": list(map(float, g.degrees)),
                      "widths": list(map(int, g.widths)), "operators": list(g.operators),
                      "stores": [str(s) for s in stores], "profile_seconds": round(seconds, 3)})
    write_profile(df, out_dir / "profile.parquet")
    pred.save(out_dir / "predictor.json")
    held = held_out_table(pred, df)
    for (op, d), m in sorted(pred.models.items()):
        log.info("%-8s %-8s held-out mape %.3f, r2 %.3f (%d fit / %d held-out shapes)", op, d, m.mape, m.r2,
                 m.n_train, m.n_test)
    log.info("profiled %d rows in %.1f s", len(df), seconds)
    return df, pred, held
