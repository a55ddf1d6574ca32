"""The plan a group strategy trains by (BLAD's two levels and operator order): the schedule stage's
plan loaded and checked against the run, followed (the groups of every worker, this worker's splits,
this process's operator order), and re-made from the times the processes measured in one early epoch
(option ``replan``).

Apart from :mod:`dynagnn.train.strategies.group` because it decides what the pair runs rather than
running it: :class:`PlanFollower` is a mixin of :class:`~dynagnn.train.strategies.group.GroupPipeline`
that sets the attributes its steps read (``owner``, ``order``, ``depth``, ``split``), and
:class:`Measured` times the sections the re-plan needs while it is on.
"""

from __future__ import annotations

import contextlib
import logging
import time

import numpy as np
import torch

from dynagnn.errors import ConfigError
from dynagnn.models.layers import find_gcn_layers
from dynagnn.schedule.plan import SchedulePlan, check_run_plan
from dynagnn.train.strategies.base import Run

log = logging.getLogger(__name__)


class PlanFollower:
    """Loading, checking and following a group strategy's plan, and its re-plan (module docstring)."""

    def load_plan(self, store, workers: int, train_ends) -> SchedulePlan:
        """The plan of option ``plan``, checked against ``store``, the model, ``workers`` and the run's
        training windows ``train_ends`` (ConfigError or InputError, one line, naming the file)."""
        path = self.options.plan
        if not path:  # dynagnn.api.train makes one at start; the train stage alone must be given it
            raise ConfigError(f"the {self.name} strategy trains by a schedule plan: give plan (the schedule stage's "
                              f"plan-{workers}.json), or train through dynagnn.api.train or the CLI, which plan at start")
        plan = SchedulePlan.load(path, dataset=str(store.attrs.get("name", "")), model=self.config.model,
                                 store_checksum=store.checksum)
        check_run_plan(plan, workers=workers, window=int(self.config.window), train_ends=train_ends, where=path)
        return plan

    def check_plan(self, plan: SchedulePlan, model, workers: int) -> None:
        """What the processes would find wrong in ``plan`` for ``model``: a split outside 1..k, an
        operator order for another number of GCN layers."""
        k = int(self.config.window)
        for w in range(workers):
            procs = plan.baseline_processes if self.baseline else plan.processes
            bad = {int(g): int(p) for g, p in zip(procs[w].groups, procs[w].splits) if not 1 <= int(p) <= k}
            if bad:
                g, p = next(iter(bad.items()))
                raise ConfigError(f"plan splits group {g} at {p}: a group of {k} snapshots needs a split in 1..{k} "
                                  "(p1 runs at least one snapshot; at k, p2 runs the head alone)")
        if self.reorder and plan.operators is not None:
            layers = len(find_gcn_layers(model))
            flags = np.asarray(plan.operators.update_first)
            if flags.shape[-1] != layers:
                raise ConfigError(f"the plan orders {flags.shape[-1]} GCN layers per process, the model has {layers} "
                                  "reorderable ones: use --strategy blad_nm (no reordering) for this model")

    def _plan(self, run: Run) -> SchedulePlan:
        return self.load_plan(run.store, run.ctx.workers, run.train_ends)

    def _follow(self, plan: SchedulePlan, baseline: bool) -> None:
        """Train by ``plan`` (its even baseline when ``baseline``): the groups per worker and this
        worker's splits."""
        ctx, k = self.run.ctx, self.run.window
        groups = plan.baseline_groups if baseline else plan.groups
        procs = plan.baseline_processes if baseline else plan.processes
        self.owner = {int(g): w for w, gs in enumerate(groups.workers) for g in gs}
        self.order = [[int(g) for g in gs] for gs in groups.workers]
        self.depth = plan.depth  # p1's queue bound, the one the plan's pipeline assumes
        self.split = {int(g): int(p) for g, p in zip(procs[ctx.worker].groups, procs[ctx.worker].splits)}
        bad = {g: p for g, p in self.split.items() if not 1 <= p <= k}
        if bad:
            g, p = next(iter(bad.items()))
            raise ConfigError(f"plan splits group {g} at {p}: a group of {k} snapshots needs a split in 1..{k} "
                              "(p1 runs at least one snapshot; at k, p2 runs the head alone)")

    def _replan(self) -> None:
        """Collective: re-plan both levels from the times every process measured (rank 0 fits and
        plans, everyone follows; schedule/measured.py). The operator orders stay the plan's."""
        from dynagnn.schedule.measured import measured_costs
        from dynagnn.schedule.plan import build_plan

        run, plan = self.run, self.plan
        everyone = run.comm.all_gather_object(self._measured.taken())
        new = None
        if run.ctx.is_main:
            pf, pb = plan.meta.get("snapshot_forward_s"), plan.meta.get("snapshot_backward_s")
            if pf is None or pb is None:
                log.info("%s: the plan records no per-snapshot predictions; keeping its split", self.name)
            else:
                fwd, bwd, tail = Measured.merge(everyone)
                fwd, bwd = measured_costs(fwd, bwd, pf, pb)
                new = build_plan(fwd, bwd, group_len=plan.group_len, num_workers=plan.num_workers,
                                 dataset=plan.dataset, model=plan.model, store_checksum=plan.store_checksum,
                                 groups=run.train_ends, tail=tail, handover=plan.meta.get("handover"),
                                 allreduce_s=plan.allreduce_s, depth=plan.depth,
                                 meta={**plan.meta, "replanned_from": f"times measured in epoch {self.measure_epoch}",
                                       "snapshot_forward_s": fwd.tolist(), "snapshot_backward_s": bwd.tolist(),
                                       "group_tail_s": {str(g): list(v) for g, v in tail.items()}})
                new.operators = plan.operators
                log.info("%s: re-planned from measured times: predicted epoch %.3fs (the cost model's plan: "
                         "%.3fs); splits %s", self.name, new.summary()["epoch_time"], plan.summary()["epoch_time"],
                         [p.splits.tolist() for p in new.processes])
        new = run.comm.broadcast_object(new)
        if new is not None:
            self.replanned = new
            self._follow(new, False)

    def _set_orders(self, run: Run) -> None:
        layers = find_gcn_layers(run.model)
        ops = self.plan.operators if self.plan is not None else None
        if not self.reorder or ops is None:
            return
        flags = np.asarray(ops.update_first)[run.ctx.worker, run.ctx.rank % self.procs_per_worker]
        if len(layers) != len(flags):
            raise ConfigError(f"the plan orders {len(flags)} GCN layers per process, the model has {len(layers)} "
                              "reorderable ones: use --strategy blad_nm (no reordering) for this model")
        for layer, flip in zip(layers, flags):
            default = layer.resolved_order()
            other = "update_first" if default == "aggregate_first" else "aggregate_first"
            layer.order = other if flip else default


class Measured:
    """What one process measured in an epoch: each snapshot's forward step, each group part's
    backward (the snapshots it covers) and each group's loss and head, in seconds (synchronising a
    GPU around each, so only while ``on``: one early epoch)."""

    def __init__(self):
        self.on = True
        self.fwd: dict[int, list[float]] = {}
        self.bwd: list[tuple[list[int], float]] = []
        self.tails: dict[int, float] = {}
        self.leads: dict[int, float] = {}

    @contextlib.contextmanager
    def _timed(self, device, record):
        if not self.on:
            yield
            return
        if device.type == "cuda":
            torch.cuda.synchronize(device)
        t0 = time.perf_counter()
        yield
        if device.type == "cuda":
            torch.cuda.synchronize(device)
        record(time.perf_counter() - t0)

    def forward(self, s: int, device):
        return self._timed(device, lambda dt: self.fwd.setdefault(int(s), []).append(dt))

    def forward_all(self, snapshots, device):
        """One forward over several snapshots, its time shared evenly among them."""
        ts = [int(s) for s in snapshots]

        def record(dt):
            for s in ts:
                self.fwd.setdefault(s, []).append(dt / len(ts))
        return self._timed(device, record)

    def backward(self, snapshots, device):
        return self._timed(device, lambda dt: self.bwd.append(([int(x) for x in snapshots], dt)))

    def tail(self, t: int, device):
        return self._timed(device, lambda dt: self.tails.__setitem__(int(t), dt))

    def lead(self, t: int, device):
        return self._timed(device, lambda dt: self.leads.__setitem__(int(t), dt))

    def taken(self) -> tuple:
        return self.fwd, self.bwd, self.tails, self.leads

    @staticmethod
    def merge(measured: list[tuple]) -> tuple[dict, list, dict]:
        """Every process's measurements as one (forward, backward, extras): extras are each group's
        (lead, tail) seconds, the loss inputs p1 prepares and the loss and head p2 runs."""
        fwd: dict[int, list[float]] = {}
        bwd: list = []
        tails: dict[int, float] = {}
        leads: dict[int, float] = {}
        for f, b, t, lead in measured:
            for s, times in f.items():
                fwd.setdefault(s, []).extend(times)
            bwd.extend(b)
            tails.update(t)
            leads.update(lead)
        return fwd, bwd, {g: (leads.get(g, 0.0), tails.get(g, 0.0)) for g in sorted(set(tails) | set(leads))}
