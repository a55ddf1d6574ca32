"""The schedule stage's output: one versioned JSON plan per (dataset, model, workers).

A plan holds BLAD's two levels (groups per worker; per worker the split of each group between the
two co-located processes), the baseline they are compared against (BLAD-Even: ESDG-style even group
split and each group halved between the processes), optionally the operator orders of co-located
snapshot pairs and PiPAD's per-frame S_per, and the predicted loads of all of them. Loading checks
the version, and, when asked, that the plan belongs to the expected dataset, model and store.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Sequence

import numpy as np

from ..atomic import write_text
from ..errors import ConfigError, InputError
from ..versioned import read_versioned
from .balance import PIPELINE_DEPTH, BalancePlan, balance
from .groups import GroupPlan, group_members, imbalance, plan_groups, sync_fraction, sync_ratio
from .topology import BatchOrders, plan_operators_batch
from .tuner import TunerPlan

PLAN_VERSION = 1
PLAN_KIND = "dynagnn.schedule.plan"


@dataclass
class SchedulePlan:
    dataset: str
    model: str
    group_len: int
    groups: GroupPlan
    processes: list[BalancePlan]
    baseline_groups: GroupPlan
    baseline_processes: list[BalancePlan]
    operators: BatchOrders | None = None
    tuner: TunerPlan | None = None
    store_checksum: str | None = None
    meta: dict = field(default_factory=dict)

    @property
    def num_workers(self) -> int:
        return self.groups.num_workers

    @property
    def depth(self) -> int:
        """The most groups p1's queue holds in this plan's pipeline (``meta["pipeline_depth"]``)."""
        return int(self.meta.get("pipeline_depth", PIPELINE_DEPTH))

    @property
    def allreduce_s(self) -> float:
        """Predicted seconds of the all-reduces that end the plan's step (the gradients and the
        loss; ``meta["allreduce_s"]``, from the measured channel; 0 when the plan has none)."""
        return float(self.meta.get("allreduce_s", 0.0) or 0.0)

    def summary(self) -> dict:
        """Predicted figures: per-worker loads and pipeline makespans, imbalance (max/mean) and the
        synchronisation share, for the plan and its baseline. ``epoch_time``: the slowest worker's
        pipeline makespan plus the step's all-reduces (:attr:`allreduce_s`); the plan's epoch is
        one step (BLAD's batch: every group)."""
        mk = np.array([p.makespan for p in self.processes])
        mk0 = np.array([p.makespan for p in self.baseline_processes])
        out = {"worker_loads": self.groups.loads.tolist(), "imbalance": imbalance(self.groups.loads),
               "baseline_worker_loads": self.baseline_groups.loads.tolist(),
               "baseline_imbalance": imbalance(self.baseline_groups.loads),
               "worker_makespans": mk.tolist(), "baseline_worker_makespans": mk0.tolist(),
               "epoch_time": float(mk.max()) + self.allreduce_s, "baseline_epoch_time": float(mk0.max()) + self.allreduce_s,
               "allreduce_time": self.allreduce_s,
               "sync_fraction": sync_fraction(mk), "baseline_sync_fraction": sync_fraction(mk0),
               "sync_ratio": sync_ratio(mk), "baseline_sync_ratio": sync_ratio(mk0),
               "process_idle_fraction": [p.idle_fraction for p in self.processes],
               "baseline_process_idle_fraction": [p.idle_fraction for p in self.baseline_processes]}
        if self.operators is not None:
            out["overlap_fraction"] = self.operators.overlap_fraction
            out["default_overlap_fraction"] = self.operators.default_overlap_fraction
        return out

    def to_dict(self) -> dict:
        return {"version": PLAN_VERSION, "kind": PLAN_KIND, "dataset": self.dataset, "model": self.model,
                "workers": self.num_workers, "group_len": self.group_len, "store_checksum": self.store_checksum,
                "predicted": self.summary(), "groups": self.groups.to_dict(),
                "processes": [p.to_dict() for p in self.processes],
                "baseline": {"groups": self.baseline_groups.to_dict(),
                             "processes": [p.to_dict() for p in self.baseline_processes]},
                "operators": None if self.operators is None else self.operators.to_dict(),
                "tuner": None if self.tuner is None else self.tuner.to_dict(), "meta": self.meta}

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=1)

    @classmethod
    def from_json(cls, text: str, *, dataset: str | None = None, model: str | None = None,
                  store_checksum: str | None = None, source: str | Path | None = None) -> "SchedulePlan":
        """Parse a plan; InputError (naming ``source``) on bad JSON, another version or kind, or a plan
        for another dataset, model or store than the ones given."""
        where = source if source is not None else "<plan json>"
        return cls._from_dict(_read_plan(where, text), where, dataset=dataset, model=model,
                              store_checksum=store_checksum)

    @classmethod
    def _from_dict(cls, d: dict, where: str | Path, *, dataset: str | None, model: str | None,
                   store_checksum: str | None) -> "SchedulePlan":
        """A plan of the object :func:`_read_plan` returned, checked against the dataset, model and
        store given."""
        for key, want in (("dataset", dataset), ("model", model), ("store_checksum", store_checksum)):
            if want is not None and d.get(key) != want:
                raise InputError(f"plan is for {key} {d.get(key)!r}, expected {want!r}; re-run the schedule "
                                 f"stage for this {key.replace('_', ' ')}", where)
        meta = d.get("meta") or {}
        depth = meta.get("pipeline_depth", PIPELINE_DEPTH) if isinstance(meta, dict) else PIPELINE_DEPTH
        if isinstance(depth, bool) or not isinstance(depth, int) or depth < 1:
            raise InputError(f"meta.pipeline_depth {depth!r}: p1's queue bound must be an integer >= 1", where)
        _check_depths(d, where)
        try:
            plan = cls(dataset=str(d["dataset"]), model=str(d["model"]), group_len=int(d["group_len"]),
                       groups=GroupPlan.from_dict(d["groups"]),
                       processes=[BalancePlan.from_dict(p) for p in d["processes"]],
                       baseline_groups=GroupPlan.from_dict(d["baseline"]["groups"]),
                       baseline_processes=[BalancePlan.from_dict(p) for p in d["baseline"]["processes"]],
                       operators=None if d.get("operators") is None else BatchOrders.from_dict(d["operators"]),
                       tuner=None if d.get("tuner") is None else TunerPlan.from_dict(d["tuner"]),
                       store_checksum=d.get("store_checksum"), meta=dict(d.get("meta") or {}))
        except (KeyError, TypeError, ValueError) as e:
            raise InputError(f"malformed schedule plan ({type(e).__name__}: {e})", where) from None
        if plan.operators is not None:
            _check_orders(plan.operators.update_first, plan.num_workers, where)
        return plan

    def save(self, path: str | Path) -> Path:
        """Write atomically."""
        return write_text(path, self.to_json())

    @classmethod
    def load(cls, path: str | Path, *, dataset: str | None = None, model: str | None = None,
             store_checksum: str | None = None) -> "SchedulePlan":
        """Read a plan file; InputError as :meth:`from_json`, and for a missing or unreadable file."""
        return cls._from_dict(_read_plan(path), path, dataset=dataset, model=model, store_checksum=store_checksum)


def _check_depths(d: dict, where) -> None:
    """InputError unless every process plan's ``depth`` (p1's queue bound) is an integer >= 1."""
    base = d.get("baseline") if isinstance(d.get("baseline"), dict) else {}
    for key, procs in (("processes", d.get("processes")), ("baseline.processes", base.get("processes"))):
        for i, p in enumerate(procs if isinstance(procs, list) else []):
            depth = p.get("depth", PIPELINE_DEPTH) if isinstance(p, dict) else PIPELINE_DEPTH
            if isinstance(depth, bool) or not isinstance(depth, int) or depth < 1:
                raise InputError(f"{key}[{i}].depth {depth!r}: p1's queue bound must be an integer >= 1 (a queue of "
                                 "0 groups would never run p1 ahead); re-run the schedule stage", where)


def _check_orders(flags, workers: int, where) -> None:
    """InputError unless ``operators.update_first`` is one 0/1 order per worker, process and layer
    (shape [workers, 2, L])."""
    shape = list(np.shape(flags))
    if len(shape) != 3 or shape[0] != workers or shape[1] != 2:   # 0 layers: a model with no GCNLayer
        raise InputError(f"operators.update_first has shape {shape}, expected [{workers}, 2, layers] (one order "
                         f"per worker, co-located process and GCN layer); re-run the schedule stage", where)


def _read_plan(source: str | Path, text: str | None = None) -> dict:
    """The plan object at ``source`` (or in ``text``): InputError unless it is a plan of this version."""
    return read_versioned(source, text=text, kind=PLAN_KIND, version=PLAN_VERSION, what="schedule plan",
                          producer="the schedule stage")


def process_snapshots(proc: BalancePlan, group_len: int) -> tuple[np.ndarray, np.ndarray]:
    """The snapshots each of a worker's two processes runs, int64 arrays (a snapshot once per group it
    is in): p1 the first ``splits[i]`` snapshots of each group, p2 the rest."""
    heads, tails = [np.zeros(0, dtype=np.int64)], [np.zeros(0, dtype=np.int64)]
    for g, p in zip(proc.groups, proc.splits):
        members = group_members(g, group_len)
        heads.append(members[: int(p)])
        tails.append(members[int(p):])
    return np.concatenate(heads), np.concatenate(tails)


def process_layer_times(processes, group_len: int, layer_times) -> tuple[np.ndarray, ...]:
    """(agg, upd, rnn) float [workers, 2, L]: each process's mean per-layer times over the snapshots it
    runs (:func:`process_snapshots`), from per-snapshot (agg, upd, rnn) [T, L] (rnn may be None);
    a process that runs nothing gets zeros."""
    agg, upd, *rest = (np.asarray(x, dtype=np.float64) for x in layer_times if x is not None)
    rnn = rest[0] if rest else np.zeros_like(agg)
    out = np.zeros((3, len(processes), 2, agg.shape[1]))
    for w, proc in enumerate(processes):
        for k, snaps in enumerate(process_snapshots(proc, group_len)):
            if snaps.size:
                for j, x in enumerate((agg, upd, rnn)):
                    out[j, w, k] = x[snaps].mean(axis=0)
    return out[0], out[1], out[2]


def build_plan(fwd, bwd, *, group_len: int, num_workers: int, dataset: str, model: str,
               strategy: str = "contiguous", balance_method: str = "dp", layer_times=None,
               operator_method: str = "exhaustive", tuner: TunerPlan | None = None,
               store_checksum: str | None = None, meta: dict | None = None, groups=None,
               tail: dict | None = None, handover: dict | None = None, allreduce_s: float = 0.0,
               depth: int = PIPELINE_DEPTH) -> SchedulePlan:
    """Plan BLAD's two levels from per-snapshot predicted times.

    fwd, bwd: float [T] forward/backward seconds per snapshot (the predictor's l and b);
    strategy: "contiguous" (BLAD), "lpt" or "even"; balance_method: "dp", "eq2" or "even";
    layer_times: optional (agg, upd, rnn) each float [T, L] (rnn may be None), every snapshot's
    forward time of each GCN layer's aggregation and update and of the non-commuting operator after
    it: the operator-order manager then chooses, for each worker of the balanced plan, one order per
    process and layer from the process's mean operator times (:func:`process_layer_times`). One
    order per process, as BLAD's Algorithm 1 sets each process's model: a snapshot's backward runs
    its forward's operators in reverse, so orders chosen per snapshot pair could not be realised for
    the backward passes, which in this pipeline overlap the other process's forward passes.
    tuner: an already computed ``tune_frames`` result to record. groups: the group ids (target
    snapshots) to plan, default all; the train stage plans only its training windows. tail: {group
    id: seconds of the task's loss and head after the group's last snapshot}, which p2 runs.
    handover: the seconds each process spends receiving its partner's hand-overs
    (:func:`dynagnn.schedule.balance.balance`); allreduce_s: seconds of the step's all-reduces, added
    to the predicted epoch. depth: the most groups p1's queue holds, for the plan and its baseline
    alike (:mod:`dynagnn.schedule.balance`; BLAD's is 2). All three are kept in ``meta`` (a re-plan
    reuses them; the group strategy bounds its queue by ``pipeline_depth``).
    """
    ids = groups
    meta = {**(meta or {}), "handover": handover, "allreduce_s": float(allreduce_s), "pipeline_depth": int(depth)}
    groups = plan_groups(fwd, bwd, group_len, num_workers, strategy, ids, tail)
    processes = [balance(fwd, bwd, group_len, w, balance_method, tail=tail, handover=handover, depth=depth)
                 for w in groups.workers]
    base = plan_groups(fwd, bwd, group_len, num_workers, "even", ids, tail)
    base_proc = [balance(fwd, bwd, group_len, w, "even", tail=tail, handover=handover, depth=depth)
                 for w in base.workers]
    ops = None
    if layer_times is not None:
        ops = plan_operators_batch(*process_layer_times(processes, group_len, layer_times), operator_method)
    return SchedulePlan(dataset, model, group_len, groups, processes, base, base_proc, ops, tuner,
                        store_checksum, meta)


def check_run_plan(plan: "SchedulePlan", *, workers: int, window: int, train_ends: Sequence[int], where) -> None:
    """ConfigError unless ``plan`` is for this worker count and window and covers exactly these
    training windows (a plan of another window, task or split is stale)."""
    if plan.num_workers != workers:
        raise ConfigError(f"{where}: plan is for {plan.num_workers} workers, this run has {workers}; "
                          f"use plan-{workers}.json or re-run the schedule stage")
    if plan.group_len != window:
        raise ConfigError(f"{where}: plan has groups of {plan.group_len} snapshots, this run's window is {window}; "
                          "re-run the schedule stage with this window")
    planned = sorted(g for w in plan.groups.workers for g in w)
    if planned != sorted(int(t) for t in train_ends):
        span = f"{planned[0]}..{planned[-1]} ({len(planned)})" if planned else "none"
        raise ConfigError(f"{where}: plan covers the groups ending at snapshots {span}, this run trains the "
                          f"windows ending at {train_ends[0]}..{train_ends[-1]} ({len(train_ends)}): a plan of "
                          "another task, window or split; re-run the schedule stage")
