"""The schedule stage: a plan per (store, model, workers) from the cost model's predictions.

``python -m dynagnn schedule`` is a thin front over :func:`schedule_stage`:

1. per-snapshot shapes: the store's N for every snapshot (dynagnn's engine runs ``[N, F]`` tensors)
   and each snapshot's edge count (from the stats stage's table when given, checked against the
   store's checksum; else from the store's offsets, the same numbers);
2. the model's operator calls (:func:`dynagnn.cost.models.model_calls`: which operators at which
   widths, from the model name, the store's feature width and the hidden width) and the predicted
   per-snapshot forward and backward times ``l[i]``, ``b[i]`` (:meth:`Predictor.predict`);
3. BLAD's two levels with ``group_len`` = the training window (:func:`build_plan`: contiguous min-max
   groups per worker, the exact programme per worker) and, inside the plan, the even baseline
   (ESDG's even split, BLAD-Even halves);
4. optionally PiPAD's tuner per frame from the analysis stage's ``overlap.parquet``
   (:func:`overlap_options`): frames of the largest frame size in the table, options 1 and the
   smaller frame sizes of the table, each option's overlap rate the mean over its frames inside the
   big frame; memory bound ``snapshot_bytes`` = edge indices and weights (12 bytes an edge) plus the
   ``[N, F + H]`` float32 features and state of one snapshot, against ``memory_bytes``.

The predicted per-snapshot times are kept in the plan's ``meta`` (``snapshot_forward_s``,
``snapshot_backward_s``), with the model's operator calls and the predictor it came from.
"""

from __future__ import annotations

import logging
from pathlib import Path

import numpy as np
import pandas as pd

from ..atomic import remove_stale_temporaries
from ..cost.models import ELEMENTWISE
from ..errors import ConfigError, CostError, InputError
from .plan import SchedulePlan, build_plan
from .tuner import TunerPlan, tune_frames

log = logging.getLogger(__name__)

DEFAULT_MEMORY_BYTES = 8 * 2**30
# p1's queue bound in the plans this stage writes: 4 groups, not BLAD's 2 (schedule/balance.py: on
# blad_group the simulated idle share fell from 10.2% to 4.0%), for 4 groups' activations on p1
DEFAULT_PIPELINE_DEPTH = 4


def _table_for_store(path: Path, checksum: str, what: str) -> pd.DataFrame:
    """Read a stage's Parquet table, checking that it was derived from the store with ``checksum``."""
    import pyarrow.parquet as pq

    path = Path(path)
    if not path.is_file():
        raise InputError(f"{what} table not found", path)
    meta = pq.read_schema(path).metadata or {}
    got = meta.get(b"dynagnn.store_checksum", b"").decode()
    if got and got != checksum:
        raise InputError(f"{what} table of another store (checksum {got[:12]}, the store's is {checksum[:12]}); "
                         f"re-run the analysis for this store", path)
    return pd.read_parquet(path)


def snapshot_edges(store, stats: str | Path | None = None) -> np.ndarray:
    """Edges per snapshot, int64 [T]: the stats table's ``edges`` column (checked) or the store's offsets."""
    if stats is None:
        return np.diff(np.asarray(store.offsets)).astype(np.int64)
    df = _table_for_store(stats, store.checksum, "statistics")
    if "edges" not in df.columns or len(df) != store.num_snapshots:
        raise InputError(f"not the statistics of this store: expected an 'edges' column and {store.num_snapshots} "
                         f"rows, got {len(df)} rows with columns {list(df.columns)[:6]}", stats)
    return df.sort_values("snapshot")["edges"].to_numpy(dtype=np.int64) if "snapshot" in df else df["edges"].to_numpy()


def overlap_options(overlap: pd.DataFrame, num_snapshots: int) -> tuple[int, tuple[int, ...], np.ndarray, np.ndarray] | None:
    """(frame_size, options, overlap [F, n_opt], frame bounds [F, 2]) for the tuner from the analysis
    stage's overlap table; None if the table has no frame of at least 2 snapshots."""
    if overlap.empty:
        return None
    sizes = sorted(int(s) for s in overlap["frame_size"].unique() if 2 <= int(s) <= num_snapshots)
    if not sizes:
        return None
    fs = sizes[-1]
    frames = overlap[overlap["frame_size"] == fs].sort_values("t0")
    options = (1, *sizes)
    rates = np.ones((len(frames), len(options)))
    for j, s in enumerate(options[1:], start=1):
        sub = overlap[overlap["frame_size"] == s]
        fallback = float(sub["overlap_rate"].mean())
        for i, (t0, t1) in enumerate(zip(frames["t0"], frames["t1"])):
            inside = sub[(sub["t0"] >= t0) & (sub["t1"] <= t1)]
            rates[i, j] = float(inside["overlap_rate"].mean()) if len(inside) else fallback
    return fs, options, rates, frames[["t0", "t1"]].to_numpy(dtype=np.int64)


def tuner_from_overlap(overlap_path: str | Path, store, edges: np.ndarray, width: int,
                       memory_bytes: float = DEFAULT_MEMORY_BYTES) -> TunerPlan | None:
    """PiPAD's per-frame S_per from ``overlap.parquet`` (module docstring, step 4)."""
    got = overlap_options(_table_for_store(overlap_path, store.checksum, "overlap"), store.num_snapshots)
    if got is None:
        log.info("%s: no frames to tune; the plan has no tuner", overlap_path)
        return None
    fs, options, rates, bounds = got
    per_snapshot = edges.astype(np.float64) * 12 + float(store.num_nodes) * width * 4
    snap_bytes = np.array([per_snapshot[a:b].max() for a, b in bounds])
    return tune_frames(rates, memory_bytes, frame_size=fs, options=options, snapshot_bytes=snap_bytes)


def layer_times(breakdown: pd.DataFrame, calls) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per-snapshot forward seconds of each GCN layer's aggregation and update and of the
    non-commuting compute operators after it (RNN cells, EvolveGCN's weight step), each float [T, L],
    from :meth:`Predictor.breakdown` and the model's calls.

    A layer is a role with an ``aggregate`` and an ``update`` call (T-GCN's gates and candidate, GCRN's
    three filters: run one after the other in the step, so sequential layers here). A compute
    operator that comes before the first layer (EvolveGCN's first weight step) is put after the last
    one: snapshots run back to back in a process, so in steady state it follows the previous
    snapshot's last layer. Element-wise ops (bias adds, activations, gate arithmetic) are left out.
    Each layer's two durations are those of the order ``"auto"`` resolves to; BLAD's manager treats a
    commuting pair's durations as fixed whatever the order."""
    layers: list[str] = []
    extra: dict[int, list[str]] = {}
    for op, role, *_ in calls.calls():
        if op in ELEMENTWISE:
            continue  # element-wise glue between the operators the manager orders; not planned
        if op in ("graph_op", "nn_op"):
            name = role.rsplit(".", 1)[0]
            if name not in layers:
                layers.append(name)
        else:
            extra.setdefault(len(layers) - 1, []).append(role)
    if not layers:
        raise CostError(f"model {calls.name}: no GCN layer to order")
    T = len(breakdown)
    agg = np.stack([breakdown[f"{name}.aggregate.forward"].to_numpy() for name in layers], axis=1)
    upd = np.stack([breakdown[f"{name}.update.forward"].to_numpy() for name in layers], axis=1)
    rnn = np.zeros((T, len(layers)))
    for j, roles in extra.items():
        for role in roles:
            rnn[:, j % len(layers)] += breakdown[f"{role}.forward"].to_numpy()  # -1: before the first
    return agg, upd, rnn


def transfer_costs(link, transfers: dict | None) -> tuple[dict | None, float]:
    """(handover, allreduce_s) for :func:`~dynagnn.schedule.plan.build_plan` from the bytes a step
    moves and the measured channel (:class:`~dynagnn.cost.link.LinkCost`; None: free, 0).

    transfers: {"state", "embedding": bytes of one hand-over of the recurrent state or of the last
    embedding (its gradient goes back, the same bytes), "gradients": bytes all-reduced per step,
    "inputs": {group id: bytes of its loss's inputs}} (one more 8-byte message gives their size;
    the loss, one float64, is all-reduced too)."""
    if link is None or not transfers:
        return None, 0.0
    hand = lambda n: float(link.seconds("handover", n))  # noqa: E731
    inputs = {str(g): hand(8) + hand(n) for g, n in (transfers.get("inputs") or {}).items() if n}
    handover = {"state_s": hand(transfers.get("state", 0)), "embedding_s": hand(transfers.get("embedding", 0)),
                "inputs_s": inputs}
    return handover, float(link.seconds("allreduce", transfers.get("gradients", 0)) + link.seconds("allreduce", 8))


def _check_window(store, window: int) -> None:
    if int(window) > store.num_snapshots:
        raise ConfigError(f"window: {window} snapshots per group but {store.path} has only {store.num_snapshots} snapshots")


def _plan_meta(store, source, window, hidden, fwd, bwd, groups, tail, **extra) -> dict:
    """What a plan records of how it was made: the source of its costs, the per-snapshot seconds, the
    groups and their heads (``extra``: what the predictor adds)."""
    return {"predictor": str(source), **({"device": extra.pop("device")} if "device" in extra else {}),
            "num_nodes": int(store.num_nodes), "window": int(window), "hidden": int(hidden), **extra,
            "snapshot_forward_s": np.asarray(fwd).tolist(), "snapshot_backward_s": np.asarray(bwd).tolist(),
            "groups": "all" if groups is None else [int(g) for g in groups],
            "group_tail_s": {str(g): [float(x) for x in v] if isinstance(v, (tuple, list)) else float(v)
                             for g, v in (tail or {}).items()}}


def plan_store(store, predictor, *, model: str, workers: int, window: int = 4, hidden: int = 32,
               stats: str | Path | None = None, overlap: str | Path | None = None, strategy: str = "contiguous",
               balance_method: str = "dp", memory_bytes: float = DEFAULT_MEMORY_BYTES, groups=None,
               predictor_source: str = "", tail: dict | None = None, transfers: dict | None = None,
               depth: int = DEFAULT_PIPELINE_DEPTH) -> SchedulePlan:
    """The plan of an open store from a loaded :class:`~dynagnn.cost.predictor.Predictor` (module
    docstring); ``groups``: the group ids (training windows' end snapshots) to plan, default all;
    ``tail``: {group id: seconds of the task's loss and head, or (lead, tail) seconds when p1
    prepares the loss's inputs} (the cost model has no operator for
    them; the caller measures them, :func:`dynagnn.cost.run_costs.head_costs`);
    ``transfers``: the bytes a step moves (:func:`transfer_costs`;
    :func:`dynagnn.cost.run_costs.transfer_bytes`), charged at the predictor's measured
    channel costs when it has them (``meta["link"]``); ``depth``: p1's queue bound
    (:data:`DEFAULT_PIPELINE_DEPTH`).
    What :func:`schedule_stage` and the CLI's plan at start (:func:`dynagnn.api.plan_at_start`) share."""
    from ..cost.link import LinkCost
    from ..cost.models import model_calls

    calls = model_calls(model, store.feature_dim(), hidden)
    try:
        predictor.check(calls)
    except CostError as exc:
        raise CostError(f"{predictor_source or 'predictor'}: {exc} (model {model} needs "
                        f"{', '.join(sorted(calls.required_operators()))})") from None
    edges = snapshot_edges(store, stats)
    _check_window(store, window)
    fwd, bwd = predictor.predict({"edges": edges}, calls, num_nodes=store.num_nodes)
    times = layer_times(predictor.breakdown({"edges": edges}, calls, num_nodes=store.num_nodes), calls)
    tuner = None
    if overlap is not None:
        tuner = tuner_from_overlap(overlap, store, edges, calls.in_dim + calls.hidden, memory_bytes)
    meta = _plan_meta(store, predictor_source, window, hidden, fwd, bwd, groups, tail,
                      device=predictor.device, model_calls=calls.to_dict(),
                      stats=None if stats is None else str(stats), overlap=None if overlap is None else str(overlap),
                      transfers_bytes=None if transfers is None else
                      {k: ({str(g): int(n) for g, n in v.items()} if isinstance(v, dict) else int(v))
                       for k, v in transfers.items()})
    handover, allreduce_s = transfer_costs(LinkCost.of(predictor), transfers)
    return build_plan(fwd, bwd, group_len=int(window), num_workers=int(workers),
                      dataset=str(store.attrs.get("name", "")), model=model, strategy=strategy,
                      balance_method=balance_method, layer_times=times, tuner=tuner, store_checksum=store.checksum,
                      meta=meta, groups=groups, tail=tail, handover=handover, allreduce_s=allreduce_s, depth=depth)


def plan_from_step_times(store, fwd, bwd, *, model: str, layers: int, workers: int, window: int, hidden: int,
                         groups=None, tail: dict | None = None, depth: int = DEFAULT_PIPELINE_DEPTH,
                         source: str = "") -> SchedulePlan:
    """The plan of a model with no operator list (a user's), from its measured per-snapshot forward
    and backward seconds ``fwd``, ``bwd`` [T] (:func:`dynagnn.cost.step_times.model_step_times`):
    BLAD's groups, split and queue as :func:`plan_store` plans them, and the default operator order
    of its ``layers`` GCNLayers (no operator times to reorder them by)."""
    _check_window(store, window)
    fwd, bwd = np.asarray(fwd, dtype=np.float64), np.asarray(bwd, dtype=np.float64)
    zeros = np.zeros((store.num_snapshots, int(layers)))
    meta = _plan_meta(store, source, window, hidden, fwd, bwd, groups, tail)
    return build_plan(fwd, bwd, group_len=int(window), num_workers=int(workers), dataset=str(store.attrs.get("name", "")),
                      model=model, layer_times=(zeros, zeros, zeros), store_checksum=store.checksum, meta=meta,
                      groups=groups, tail=tail, depth=depth)


def schedule_stage(store_path: str | Path, predictor_path: str | Path, *, model: str, workers: int, window: int = 4,
                   hidden: int = 32, stats: str | Path | None = None, overlap: str | Path | None = None,
                   strategy: str = "contiguous", balance_method: str = "dp",
                   memory_bytes: float = DEFAULT_MEMORY_BYTES, groups=None, tail: dict | None = None,
                   transfers: dict | None = None, depth: int = DEFAULT_PIPELINE_DEPTH,
                   out: str | Path | None = None) -> SchedulePlan:
    """Predict every snapshot's l[i], b[i] for ``model`` on the store and plan ``workers`` workers with
    groups of ``window`` snapshots and p1's queue bound ``depth`` (module docstring); write the plan
    to ``out`` when given. Raises
    CostError (the predictor lacks an operator the model needs), ConfigError (more workers than
    groups, a window longer than the store) or InputError (a table of another store)."""
    from ..cost.predictor import Predictor
    from ..data.store import open_store

    if out is not None:
        remove_stale_temporaries(out)  # what a killed run left (dynagnn.atomic)
    plan = plan_store(open_store(store_path), Predictor.load(predictor_path), model=model, workers=workers,
                      window=window, hidden=hidden, stats=stats, overlap=overlap, strategy=strategy,
                      balance_method=balance_method, memory_bytes=memory_bytes, groups=groups,
                      predictor_source=str(predictor_path), tail=tail, transfers=transfers, depth=depth)
    if out is not None:
        plan.save(out)
    return plan


def check_plan(store_path: str | Path, plan_path: str | Path, *, model: str, workers: int) -> SchedulePlan:
    """Load the plan at ``plan_path`` and check that it is for this store, model and worker count."""
    from ..data.store import open_store

    store = open_store(store_path)
    plan = SchedulePlan.load(plan_path, dataset=str(store.attrs.get("name", "")), model=model,
                             store_checksum=store.checksum)
    if plan.num_workers != workers:
        raise ConfigError(f"{plan_path}: plan is for {plan.num_workers} workers, expected {workers}")
    return plan
