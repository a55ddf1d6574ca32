"""What a BLAD plan charges beside the operators: the task's loss and head, timed on this machine, and
the bytes a step of the group strategy hands over and all-reduces.

The schedule stage plans with both (:func:`dynagnn.schedule.stage.schedule_stage`'s ``tail`` and
``transfers``); the CLI's schedule command and a plan made at the start of training measure them
here, on the run's own task, model and head, so the cost stage owns every timing a plan is built on.
"""

from __future__ import annotations

import statistics
import time
from typing import Sequence

import torch
from torch.utils._pytree import tree_flatten

from dynagnn.allocator import keep_freed_heap
from dynagnn.models import build_model
from dynagnn.tasks.snapshot import make_task


def head_costs(store, model: str, hidden: int, ends: Sequence[int], task: str = "auto", seed: int = 0,
               repeats: int = 3, threads: int = 1) -> dict[int, float | tuple[float, float]]:
    """{window end: median seconds of the task's loss and head, forward and backward} on this
    machine with ``threads`` torch threads (what each training process runs). The cost model has no
    operator for them, yet p2 runs them for every group (scores over every positive of a link
    task): a plan without them overloads p2. A task whose loss inputs are prepared ahead (link
    prediction's negative sampling, which p1 does) gives (lead, tail): the preparation's seconds
    and the rest's."""

    keep_freed_heap()  # timed under the allocator training runs under

    before = torch.get_num_threads()
    torch.set_num_threads(int(threads))
    try:
        t_ = make_task(task, store, seed)
        dim = build_model(model, store.feature_dim(), hidden).out_dim
        head = t_.head(dim)
        prepares = t_.prepares_inputs
        out = {}
        for t in ends:
            leads, times = [], []
            for _ in range(int(repeats)):
                h = torch.randn(store.num_nodes, dim, requires_grad=True)
                t0 = time.perf_counter()
                inputs = t_.loss_inputs(int(t), 0)
                t1 = time.perf_counter()
                t_.loss(head, h, int(t), 0, inputs).backward()
                leads.append(t1 - t0)
                times.append(time.perf_counter() - t1)
            lead, tail = statistics.median(leads), statistics.median(times)
            out[int(t)] = (lead, tail) if prepares else lead + tail
        return out
    finally:
        torch.set_num_threads(before)


def transfer_bytes(store, model: str, hidden: int, ends: Sequence[int], task: str = "auto",
                   seed: int = 0, built: tuple | None = None) -> dict:
    """The bytes a step of the group strategy moves (:func:`dynagnn.schedule.stage.transfer_costs`):
    one hand-over of the model's recurrent state (every tensor of ``initial_state``, as
    :meth:`dynagnn.train.strategies.group.GroupPipeline._flatten` sends it) or of the last embedding [N, out_dim], the gradients
    all-reduced (the model's and the task head's parameters, float32), and each group's loss
    inputs when p1 prepares them (int64 [3, E]). ``built``: the run's (task, model, head), when
    there is one, instead of fresh ones."""

    if built is None:
        t_ = make_task(task, store, seed)
        net = build_model(model, store.feature_dim(), hidden)
        built = t_, net, t_.head(net.out_dim)
    t_, net, head = built
    with torch.no_grad():
        leaves, _ = tree_flatten(net.initial_state(store.num_nodes, "cpu"))
    state = sum(x.numel() for x in leaves) * 4
    grads = sum(p.numel() for p in [*net.parameters(), *head.parameters()] if p.requires_grad) * 4
    inputs = {}
    if t_.prepares_inputs:
        inputs = {int(t): int(t_.loss_inputs_numel(int(t)) * 8) for t in ends}
    return {"state": int(state), "embedding": int(store.num_nodes * net.out_dim * 4), "gradients": int(grads),
            "inputs": inputs}
