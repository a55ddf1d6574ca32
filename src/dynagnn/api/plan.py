"""A group strategy's plan made at start: BLAD's run that names no plan needs the profile and schedule
stages before the train stage; no stage may call another's entry point (``tests/test_layers.py``), so
that sequence lives here, above them.
"""

from __future__ import annotations

import copy
import dataclasses
import logging
from pathlib import Path

from dynagnn.errors import ConfigError

log = logging.getLogger("dynagnn")


def run_costs(store, model: str, hidden: int, window: int, task: str, threads: int = 1) -> tuple[list, dict, dict]:
    """What a BLAD plan covers and charges beside the operators: the training windows' ends (the
    groups), the task's loss and head timed with ``threads`` torch threads (p2 runs them for every
    group), and the bytes a step hands over and all-reduces (:mod:`dynagnn.cost.run_costs`)."""
    from dynagnn.cost.run_costs import head_costs, transfer_bytes
    from dynagnn.tasks.snapshot import training_ends

    groups = training_ends(store, window, task)
    return (groups, head_costs(store, model, hidden, groups, task, threads=threads),
            transfer_bytes(store, model, hidden, groups, task))


def plan_at_start(store_path: Path, config, workers: int, threads: int, out: Path) -> Path:
    """The plan of a group strategy's run that names none, written to ``out``: the model's operators
    profiled on the run's device over the store's shapes (the profile stage's auto grid), the cost
    model fitted, the training windows planned with BLAD's queue of 2. The schedule stage's
    ``plan-<P>.json`` avoids this; under torchrun every machine would profile its own, so a plan
    must be given there."""
    from dynagnn.cost.fit import fit
    from dynagnn.cost.profile import profile_operators
    from dynagnn.cost.stage import stage_grid
    from dynagnn.data.store import open_store
    from dynagnn.schedule.balance import PIPELINE_DEPTH
    from dynagnn.schedule.stage import plan_store

    store = open_store(store_path)
    from dynagnn.cost.models import has_call_list

    if not has_call_list(config.model):
        return _plan_from_steps(store, config, workers, threads, out)
    log.info("no plan given: profiling %s's operators on %s to plan %d workers (the schedule stage's "
             "plan-%d.json avoids this)", config.model, config.device, workers, workers)
    grid = stage_grid("auto", stores=[store.path], models=[config.model], hidden=[config.hidden])
    pred = fit(profile_operators(grid, config.device, repeats=3, progress=False))
    groups, tail, transfers = run_costs(store, config.model, config.hidden, config.window, config.task, threads)
    plan = plan_store(store, pred, model=config.model, workers=workers, window=config.window, hidden=config.hidden,
                      groups=groups, predictor_source="profiled at start", tail=tail, transfers=transfers,
                      depth=PIPELINE_DEPTH)  # BLAD's own queue, as the README says of a plan made at start
    plan.save(out)
    return out


def _plan_from_steps(store, config, workers: int, threads: int, out: Path) -> Path:
    """:func:`plan_at_start` for a model the cost model has no operator list for (a user's): its steps
    timed on each snapshot (:mod:`dynagnn.cost.step_times`), the head as for any plan."""
    import torch

    from dynagnn.cost.run_costs import head_costs
    from dynagnn.cost.step_times import model_step_times
    from dynagnn.models import build_model, find_gcn_layers
    from dynagnn.tasks.snapshot import training_ends
    from dynagnn.schedule.balance import PIPELINE_DEPTH
    from dynagnn.schedule.stage import plan_from_step_times

    log.info("no plan given: timing %s's step on each of the %d snapshots to plan %d workers (a model with no "
             "operator list is planned from its own steps)", config.model, store.num_snapshots, workers)
    fwd, bwd = model_step_times(store, config.model, config.hidden, threads=threads, device=config.device)
    groups = training_ends(store, config.window, config.task)
    tail = head_costs(store, config.model, config.hidden, groups, config.task, threads=threads)
    with torch.random.fork_rng(devices=[]):   # built to count its GCN layers; the caller's stream stays
        layers = len(find_gcn_layers(build_model(config.model, store.feature_dim(), config.hidden)))
    plan = plan_from_step_times(store, fwd, bwd, model=config.model, layers=layers, workers=workers,
                                window=config.window, hidden=config.hidden, groups=groups, tail=tail,
                                depth=PIPELINE_DEPTH, source="measured steps at start")
    plan.save(out)
    return out


def with_plan(store_path: Path, config, folder: Path):
    """``config`` with a plan made at start (:func:`plan_at_start`, into ``folder``) where its strategy
    trains by one and it names none."""
    from dynagnn.distributed.launch import available_cores, under_torchrun

    from dynagnn.data.store import open_store

    cls = config.strategy_cls
    if not cls.needs_plan or config.options.plan:
        return config
    if cls(config).check_sequence(open_store(store_path)):   # a carried sequence is split without a plan
        return config
    if under_torchrun():
        raise ConfigError(f"the {config.strategy} strategy under torchrun needs a plan made once for every machine: "
                          "give --options '{\"plan\": ...}' (the schedule stage's plan-<P>.json)")
    procs = config.workers * cls.procs_per_worker
    threads = config.threads or max(1, available_cores() // procs)  # what each training process gets
    plan = plan_at_start(store_path, config, config.workers, threads, folder / f"plan-{config.workers}.json")
    config = copy.copy(config)  # the caller's keeps its own options
    config.options = dataclasses.replace(config.options, plan=str(plan))
    return config
