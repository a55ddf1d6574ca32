"""BLAD's training (SC'23 §5-6): snapshot groups across workers, two co-located processes per worker
with the planned split, a queue of deferred backward passes, and the planned operator order.

A window is BLAD's snapshot group: the l snapshots ending at the window's target. The schedule
stage's plan (:class:`~dynagnn.schedule.plan.SchedulePlan`) says

- level 1: which groups each worker trains (whole groups, contiguous, balanced by predicted load),
  so the only traffic between workers is the gradient all-reduce;
- level 2: for each of a worker's groups the split p_i between its two processes;
- the operator order (``layer.order``) of each process's GCN layers.

Each worker runs two processes (``procs_per_worker = 2``, local ranks 0 and 1, "p1" and "p2"):

- p1 runs the first p_i snapshots of group i forward from the initial state and hands the state
  (every tensor of the model's recurrent state, in one flat buffer) to p2; it then starts group i+1
  and keeps group i in its queue until p2 hands back the gradient with respect to that state, and
  runs group i's deferred backward from it (BLAD Fig. 9b). The order is the one the plan's
  pipeline model assumes (:func:`dynagnn.schedule.balance.simulate`): FA_1, FA_2, BA_1, FA_3, BA_2,
  ..., the queue holding at most the plan's ``pipeline_depth`` groups (BLAD's 2; deeper queues give
  p1 more forwards of warm-up, FA_1 .. FA_d, BA_1, FA_{d+1}, ...: the same simulation, any depth).
- p2 runs the rest of group i forward from the received state, the loss / B and the backward, and
  sends the gradient of the received state back.

Hand-overs go through the pair's channel (:class:`~dynagnn.distributed.pair_channel.PairChannel`): the
sender copies a message into memory both processes map and writes a doorbell to a pipe the partner
reads itself, so neither blocks on the other's receive and the receiver copies instead of waiting
for gloo's I/O thread; the time a process waits for its partner's hand-over is timed as
``sync_wait``. Gradients are exact:
the state gradient p2 sends is the one sequential back-propagation computes at that point, and the
two processes' parameter gradients are parts of one sum, which the all-reduce over all processes
completes (and sums over workers).

Steps: BLAD's optimiser step follows a batch in which every worker trains its groups. A step here is
B windows; ``steps`` cuts each worker's planned groups into as many contiguous pieces as the epoch
has steps and gives step k every worker's k-th piece, so every step spans all workers (with B at
least the number of training windows, one step holds every group: BLAD's batch).

Baselines: ``blad_nm`` (balanced, no reordering), ``blad_even`` (the plan's even baseline, no reordering).

Operator order: the plan's flag for a process's layer flips its commuting pair from the order
``"auto"`` resolves to (the one its durations were predicted with); the baselines keep ``"auto"``.

Sequence mode ``carry`` (:class:`~dynagnn.train.options.SequenceMode`; group, blad_nm and blad_even):
the carried sequence is one chain of states, so it runs on one worker, and BLAD's groups are the
contiguous pieces the sequence is cut into (``tbptt`` k; the whole training sequence without it).
p1 runs the first part of each piece from the carried state and hands the state to p2, which runs the
rest and hands the state at the piece's end straight back (detached: the next piece's start), before
its own losses and backward; it then sends the gradient of the received state, from which p1 runs the
piece's deferred backward. Each process scores the snapshots it runs. So p1's forward of piece j+1
overlaps p2's backward of piece j, and p1's deferred backward of piece j overlaps p2's forward of
piece j+1: with tbptt and ``step`` "epoch" only (one piece has nothing to overlap, and a step per
piece ends in the gradient all-reduce; with tbptt 1 every piece is p1's alone). The split is each
piece's load-balanced one by the snapshots' predicted cost, edges plus vertices (blad_even: the
middle); a plan given (the workflow passes one to every BLAD run) is not read, with a log line, and the
operator order stays ``"auto"``. group_frames does not carry a sequence.

On a GPU the two processes share the device (start the CUDA MPS daemon, ``nvidia-cuda-mps-control
-d``, to let their kernels run concurrently; without it they time-slice). nccl refuses two ranks on
one GPU, so such jobs use gloo (:mod:`dynagnn.distributed.launch`) and hand-overs go through the channel's
host memory, where BLAD uses a device memory pool. On CPU each process gets half of the worker's cores.
"""

from __future__ import annotations

import contextlib
import logging
import math
import time
from collections import deque
from dataclasses import dataclass
from typing import Sequence

import numpy as np
import torch
from torch.utils._pytree import tree_flatten, tree_unflatten

from dynagnn.distributed.pair_channel import PairChannel, message_bytes
from dynagnn.errors import ConfigError
from dynagnn.models.layers import find_gcn_layers
from dynagnn.schedule.plan import SchedulePlan, check_run_plan
from dynagnn.schedule.topology import cross_kind_overlap
from dynagnn.splits import even_sizes
from dynagnn.timing import trace_segments
from dynagnn.train.options import LinkNegatives, Options, SequenceMode, Transfer, Truncation, WindowOptions, option
from dynagnn.train.strategies.base import Run, Strategy, head_backward, head_backwards
from dynagnn.train.strategies.frames import FramesOptions
from dynagnn.train.strategies.sequential import Sequential

log = logging.getLogger(__name__)

# the operator kinds of BLAD's deployment reward: aggregation is memory-bound, the rest compute-bound
OPERATOR_KINDS = {"graph_op": 0, "nn_op": 1, "rnn": 1}


@dataclass(frozen=True)
class PlanOptions(Options):
    """The schedule stage's plan a BLAD run trains by."""

    plan: str | None = option(None, "group strategies (BLAD): the schedule stage's plan-<P>.json (null = planned "
                              "from the cost model at start)", type=["string", "null"])


@dataclass(frozen=True)
class ReplanOptions(PlanOptions):
    """The plan, and BLAD's re-plan from measured times."""

    replan: bool = option(True, "group and blad_nm: re-plan the split from the times each process measured in the "
                          "second epoch (the first when only two are run; false = the plan's split throughout)",
                          type="boolean")


@dataclass(frozen=True)
class GroupOptions(ReplanOptions, Transfer, SequenceMode, Truncation, LinkNegatives):
    """BLAD's group strategy: its plan, the re-plan, how snapshots are fed, and the sequence mode
    (tbptt cuts a carried sequence into the pieces p1 and p2 split)."""


@dataclass(frozen=True)
class BladEvenOptions(PlanOptions, Transfer, SequenceMode, Truncation, LinkNegatives):
    """BLAD-Even: the plan's even baseline, never re-planned; the sequence mode."""


@dataclass(frozen=True)
class GroupFramesOptions(ReplanOptions, FramesOptions, LinkNegatives):
    """BLAD × PiPAD: the group options with the frames ones."""


ONE_WINDOW_TWO_PROCESSES = ("BLAD's group strategies split each window between two processes already; use "
                            "checkpoint_blocks 1 and no tbptt with them (or --strategy sequential)")


NO_CARRY = ("group_frames trains windows only; for a carried sequence use frames (PiPAD's frames over it) or group "
            "(BLAD's pair over its tbptt pieces)")


class GroupPipeline(Strategy):
    """BLAD: the balanced plan, the planned split and the planned operator order (module docstring)."""

    name = "group"
    simplicity = 4
    divides = "snapshots"

    @classmethod
    def step_traffic(cls, workers: int, shape) -> list[tuple[str, float, int]]:
        """The state handed from one process of the pair to the other, then its gradient back."""
        return [("handover", shape.num_nodes * shape.hidden * 4.0, 2)]
    Options = GroupOptions
    family = "group"
    figure = "compare"
    procs_per_worker = 2
    needs_plan = True
    refuses = {"checkpoint_blocks": ONE_WINDOW_TWO_PROCESSES}
    baseline = False  # the plan's even baseline (groups and splits) instead of its balanced plan
    reorder = True  # set the plan's operator order
    replan_measured = True  # after an early epoch, re-plan from measured times (option replan)

    def check(self, model, store, workers):
        """The window and the whole plan, before any process starts (in the launcher of a job of
        several): its dataset, model, store, workers, window, training windows, splits and operator
        order. Sequence mode carry: one worker, no plan."""
        if self.check_sequence(store):
            if workers != 1:
                raise ConfigError(f"sequence carry is one chain of states: the {self.name} strategy runs it on 1 "
                                  f"worker (its two processes), not {workers}; use --strategy vertex or snapshot "
                                  "to spread a carried sequence over workers")
            if self.options.plan:
                log.warning("%s: plan %s is not read in sequence carry: the strategy splits each tbptt piece "
                            "itself (a plan's groups are windows)", self.name, self.options.plan)
            return
        if getattr(self.options, "tbptt", None):
            raise ConfigError(f"{ONE_WINDOW_TWO_PROCESSES} (tbptt cuts a carried sequence: sequence: carry)")
        if int(self.config.window) < 2:
            raise ConfigError(f"the {self.name} strategy splits each group (window) between 2 processes: "
                              f"window {self.config.window} is too short, use at least 2")
        if self.options.plan:
            from dynagnn.tasks.snapshot import training_ends

            ends = training_ends(store, self.config.window, self.config.task, self.config.seed)
            plan = self.load_plan(store, workers, ends)
            self.check_plan(plan, model, workers)

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

    def setup(self, run: Run) -> None:
        super().setup(run)
        ctx = run.ctx
        if ctx.procs_per_worker != self.procs_per_worker:
            raise ConfigError(f"the {self.name} strategy runs {self.procs_per_worker} processes per worker, "
                              f"this job has {ctx.procs_per_worker}")
        self.local = Sequential(run.config, WindowOptions(transfer=getattr(self.options, "transfer", "full")))
        self.local.preload = False   # a process reads its part of the snapshots (group_frames' others: one)
        self.local.setup(run)
        self.p1 = ctx.rank % self.procs_per_worker == 0
        self.partner = ctx.rank + 1 if self.p1 else ctx.rank - 1
        if self.carry:   # each process scores its own snapshots; the split is each piece's (_carry_split)
            self.plan, self.prepares = None, False
            self.cost = np.array([snap.keys.size + run.num_nodes for snap in run.host], dtype=np.float64)
        else:
            self.plan = self._plan(run)
            self._follow(self.plan, self.baseline)
            # p1 prepares the loss's inputs (negative sampling), which need no model, while it would
            # otherwise wait for p2: the loss side is most of p2's work on a link task
            self.prepares = run.task.prepares_inputs
        self._state_layout(run)
        self.channel = PairChannel.open(run.comm, self.partner, self.p1, self._ring_bytes() if self.p1 else 0,
                                        device=run.device)
        self._set_orders(run)
        self.max_queue = 0  # deepest p1's queue of deferred backward passes got (for tests, benchmarks)
        self.replan = self.replan_measured and self.options.replan and not self.carry
        self.replanned: SchedulePlan | None = None
        self._measured = _Measured()
        # the epoch whose times the re-plan takes: the second (the first warms caches and the
        # allocator, and measured 27% slow), or the first when only one epoch would follow it
        self.measure_epoch = max(0, min(1, self.config.epochs - 2))
        self._measured.on = False
        run.timer.trace = []  # operator timelines, for the measured overlap (epoch_metrics)

    # ------------------------------------------------------------------ plan

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
                fwd, bwd, tail = _Measured.merge(everyone)
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

    # ------------------------------------------------------------------ state hand-over

    def _state_layout(self, run: Run) -> None:
        """The shapes of the recurrent state and of the embedding after one snapshot (the same after
        any number): both processes know the buffer to send and receive without exchanging
        metadata. A group split at k hands over the embedding instead of the state."""
        with torch.no_grad():
            state = run.model.initial_state(run.num_nodes, run.device)
            h, state = self.local._step(0, state)
        self.h_shape = tuple(h.shape)
        leaves, self.spec = tree_flatten(state)
        if not all(isinstance(x, torch.Tensor) for x in leaves):
            raise ConfigError(f"model state holds non-tensor values ({self.spec}); the group strategy hands "
                              "tensors between its processes")
        self.shapes = [tuple(x.shape) for x in leaves]
        self.sizes = [x.numel() for x in leaves]
        self.dtype = leaves[0].dtype if leaves else torch.float32
        self.numel = sum(self.sizes)

    def _flatten(self, state) -> torch.Tensor:
        leaves, _ = tree_flatten(state)
        return torch.cat([x.reshape(-1).to(self.dtype) for x in leaves])

    def _unflatten(self, flat: torch.Tensor):
        return tree_unflatten([x.view(s) for x, s in zip(flat.split(self.sizes), self.shapes)], self.spec)

    def _ring_bytes(self) -> int:
        """p1: each direction's ring in the pair's channel: the messages of ``depth`` groups in flight
        (a state or embedding, and the loss's inputs with their shape), plus the largest message (the
        room a wrap can waste)."""
        run = self.run
        state = message_bytes((max(self.numel, math.prod(self.h_shape)), self.dtype))
        if self.carry:   # p2 to p1: the end state and the gradient of a piece, the next piece's end state
            return 4 * state
        if not self.prepares:
            return (self.depth + 1) * state
        numel = max((run.task.loss_inputs_numel(t) for t in run.train_ends if self.owner[t] == run.ctx.worker),
                    default=0)
        most = message_bytes((numel, torch.int64), (8, torch.int64))
        return self.depth * (state + most) + max(state, most)

    def close(self) -> None:
        self.channel.close()

    def _whole(self, t: int) -> bool:
        """Whether p1 runs group ``t`` whole and p2 its head alone (the hand-over is the embedding)."""
        return self.split[int(t)] >= self.run.window

    # ------------------------------------------------------------------ the step

    def steps(self, ends: Sequence[int], batch_windows: int) -> list[list[int]]:
        if self.carry:
            return super().steps(ends, batch_windows)
        ends = list(ends)
        n_steps = max(1, math.ceil(len(ends) / int(batch_windows)))
        mine = set(int(t) for t in ends)
        pieces = []
        for gs in self.order:
            gs = [g for g in gs if g in mine]
            b = np.cumsum([0, *even_sizes(len(gs), n_steps)])  # empty pieces when steps outnumber groups
            pieces.append([gs[b[k]:b[k + 1]] for k in range(n_steps)])
        steps = [[g for w in range(len(pieces)) for g in pieces[w][k]] for k in range(n_steps)]
        longest = max((len(p) for ps in pieces for p in ps), default=0)
        if longest < 2 and self.run.ctx.is_main:
            log.warning("%s: a step holds at most %d group per worker, so p1 never runs ahead of p2 (no "
                        "pipelining); use batch_windows of at least %d", self.name, longest,
                        2 * len(self.order))
        return [s for s in steps if s]

    def train_step(self, ends: Sequence[int]) -> float:
        run = self.run
        if self.carry:
            total = self._carry_head(ends) if self.p1 else self._carry_tail(ends)
            run.comm.all_reduce_grads(run.parameters())
            loss = torch.tensor([total], dtype=torch.float64)
            run.comm.all_reduce(loss, "loss")
            return float(loss.item())
        unknown = [int(t) for t in ends if int(t) not in self.owner]
        if unknown:
            raise ConfigError(f"windows ending at {unknown[:5]} are not in the plan")
        mine = [int(t) for t in ends if self.owner[int(t)] == run.ctx.worker]
        total = self._head(mine) if self.p1 else self._tail(mine, len(ends))
        run.comm.all_reduce_grads(run.parameters())
        loss = torch.tensor([total], dtype=torch.float64)
        run.comm.all_reduce(loss, "loss")
        return float(loss.item())

    def _forward(self, ts: Sequence[int], state):
        """This process's part of a group: snapshots ``ts`` forward from ``state``; (the last
        embedding, the state after it). Each snapshot's step is measured (for the re-plan)."""
        h = None
        for s in ts:
            with self._measured.forward(s, self.run.device):
                h, state = self.local._step(s, state)
        return h, state

    def _parts(self) -> list[list[int]]:
        """The snapshot ranges this process runs for the epoch's steps, in order."""
        run, mine = self.run, []
        for step in self.steps(run.train_ends, run.batch_windows):
            for t in step:
                if self.owner[int(t)] == run.ctx.worker:
                    ts = run.windows([t])[0]
                    part = ts[: self.split[t]] if self.p1 else ts[self.split[t]:]
                    if len(part):  # p2 runs no snapshot of a group split at k
                        mine.append(part)
        return mine

    def _head(self, groups: list[int]) -> float:
        """p1: the first p_i snapshots of each group forward, hand-over, deferred backward."""
        run, queue = self.run, deque()
        i = 0
        while i < len(groups) or queue:
            if i < len(groups) and len(queue) < self.depth:
                t = groups[i]
                ts = run.windows([t])[0][: self.split[t]]
                h, state = self._forward(ts, run.model.initial_state(run.num_nodes, run.device))
                flat = h.reshape(-1).to(self.dtype) if self._whole(t) else self._flatten(state)
                self.channel.send([flat], "handoff")  # before the inputs: p2 starts its forward at once
                if self.prepares:
                    with run.timer.phase("head"), self._measured.lead(t, run.device):
                        inputs = run.task.loss_inputs(t, run.epoch)
                    self.channel.send([inputs, torch.tensor(inputs.shape, dtype=torch.int64)], "handoff.inputs")
                queue.append((flat, ts, t))
                self.max_queue = max(self.max_queue, len(queue))
                i += 1
            else:
                flat, ts, t = queue.popleft()
                grad, = self.channel.recv("handoff.backward")
                if flat.requires_grad:
                    with run.timer.phase("backward"), self._measured.backward(ts, run.device):
                        flat.backward(grad)
        self.channel.flush()
        return 0.0

    def _tail(self, groups: list[int], batch: int) -> float:
        """p2: the rest of each group forward from the received state, loss / B, backward; the
        state's gradient goes back to p1."""
        run, total = self.run, 0.0
        for t in groups:
            whole = self._whole(t)
            flat, = self.channel.recv("handoff")
            flat.requires_grad_(True)
            inputs = None
            if self.prepares:
                data, shape = self.channel.recv("handoff.inputs")
                inputs = data.view(*shape.tolist())
            ts = run.windows([t])[0][self.split[t]:]
            if whole:  # p1 ran every snapshot: the head's gradient is the hand-back
                h = flat.view(self.h_shape)
            else:
                h, _ = self._forward(ts, self._unflatten(flat))
            with self._measured.tail(t, run.device):
                loss, grad_h = head_backward(run, h, t, 1.0 / batch, inputs=inputs)
            if whole:
                grad = grad_h.reshape(-1) if grad_h is not None else torch.zeros_like(flat)
            else:
                if grad_h is not None:
                    with run.timer.phase("backward"), self._measured.backward(ts, run.device):
                        h.backward(grad_h)
                grad = flat.grad if flat.grad is not None else torch.zeros_like(flat)
            self.channel.send([grad], "handoff.backward")
            total += loss
        self.channel.flush()
        return total

    def epoch_metrics(self, epoch: int, seconds: float) -> dict[str, float]:
        """``overlap_share``: the share of the epoch's wall time in which a worker's two processes ran
        a memory-bound (aggregation) and a compute-bound operator (update, recurrent cell) at once,
        BLAD's deployment reward measured (mean over workers). Forward operators only: autograd's
        backward kernels run outside the timed sections, so backward time counts as no overlap.
        ``planned_epoch_s``: the predicted epoch of the plan the next epoch follows (after the
        re-plan, the prediction from measured times)."""
        run = self.run
        segs = trace_segments(run.timer.trace, OPERATOR_KINDS)
        run.timer.trace.clear()
        share = None
        if self.p1:
            n = torch.zeros(1, dtype=torch.int64)
            run.comm.recv(n, self.partner, "timeline")
            theirs = torch.zeros(3, int(n.item()), dtype=torch.float64)
            run.comm.recv(theirs, self.partner, "timeline")
            s2, e2, k2 = theirs.numpy()
            overlap = cross_kind_overlap(*segs, s2, e2, k2.astype(np.int64))
            share = overlap / seconds if seconds > 0 else 0.0
        else:
            mine = torch.from_numpy(np.stack([segs[0], segs[1], segs[2].astype(np.float64)]))
            run.comm.send(torch.tensor([mine.shape[1]], dtype=torch.int64), self.partner, "timeline")
            run.comm.send(mine, self.partner, "timeline")
        shares = [x for x in run.comm.all_gather_object(share) if x is not None]
        if self._measured.on:
            self._replan()
        self._measured.on = False  # measured once
        out = {"overlap_share": float(np.mean(shares))}
        plan = self.replanned or self.plan  # what the next epoch follows, and predicts for itself
        if plan is not None:
            out["planned_epoch_s"] = plan.summary()["baseline_epoch_time" if self.baseline else "epoch_time"]
        return out

    def start_epoch(self, epoch: int) -> None:
        super().start_epoch(epoch)
        self._measured.on = self.replan and self.replanned is None and epoch == self.measure_epoch

    def embed(self, ts: Sequence[int]) -> torch.Tensor | None:
        # evaluation needs no pipeline: rank 0 holds every parameter and snapshot
        return self.local.embed(ts) if self.run.ctx.is_main else None

    # ------------------------------------------------------------------ sequence mode carry

    def _carry_split(self, piece: Sequence[int]) -> int:
        """How many of ``piece``'s snapshots p1 runs: the point that halves their predicted cost (edges
        plus vertices: the aggregation and the dense operators), at least one each; blad_even: the
        middle. A piece of one snapshot is p1's alone."""
        n = len(piece)
        if n < 2:
            return n
        if self.baseline:
            return n // 2
        cum = np.cumsum(self.cost[list(piece)])
        return int(np.argmin(np.abs(2 * cum[:-1] - cum[-1]))) + 1

    def _carry_head(self, ends: Sequence[int]) -> float:
        """p1: the first part of each piece from the carried state, its losses, the state to p2, the
        previous piece's deferred backward, then the piece's end state back from p2."""
        run, total, pending = self.run, 0.0, None
        weight = 1.0 / len(ends)
        state = self.state_before(ends[0])
        for piece in self.tbptt_pieces(ends):
            a = self._carry_split(piece)
            hs, mid = self.local.run_sequence(piece[:a], state)
            loss, outs, grads = head_backwards(run, piece[:a], hs, weight)
            total += loss
            if a == len(piece):                  # p2 has no part of it: no hand-over
                if pending is not None:
                    self._deferred(*pending)
                    pending = None
                self._backward(outs, grads)
                state = tuple(x.detach() for x in mid)
                continue
            flat = self._flatten(mid)
            self.channel.send([flat], "carry.state")
            if pending is not None:
                self._deferred(*pending)
            end, = self.channel.recv("carry.end")
            pending = (outs, grads, flat)
            state = self._unflatten(end)
        if pending is not None:
            self._deferred(*pending)
        self._carried = (ends[-1] + 1, state)
        self.channel.flush()
        return total

    def _deferred(self, outs: list, grads: list, flat: torch.Tensor) -> None:
        """p1: a piece's backward, from its own losses and the gradient of the state it handed over."""
        grad, = self.channel.recv("carry.grad")
        self._backward(outs + [flat], grads + [grad])

    def _backward(self, outs: list, grads: list) -> None:
        keep = [(o, g) for o, g in zip(outs, grads) if o.requires_grad]
        if keep:
            with self.run.timer.phase("backward"):
                torch.autograd.backward([o for o, _ in keep], [g for _, g in keep])

    def _carry_tail(self, ends: Sequence[int]) -> float:
        """p2: the rest of each piece from the state p1 handed over; the end state back at once, then its
        losses and backward, then the gradient of the received state."""
        run, total = self.run, 0.0
        weight = 1.0 / len(ends)
        for piece in self.tbptt_pieces(ends):
            a = self._carry_split(piece)
            if a == len(piece):
                continue
            flat, = self.channel.recv("carry.state")
            flat.requires_grad_(True)
            hs, end = self.local.run_sequence(piece[a:], self._unflatten(flat))
            self.channel.send([self._flatten(end)], "carry.end")
            loss, outs, grads = head_backwards(run, piece[a:], hs, weight)
            total += loss
            self._backward(outs, grads)
            self.channel.send([flat.grad if flat.grad is not None else torch.zeros_like(flat)], "carry.grad")
        self.channel.flush()
        return total

    def run_sequence(self, ts: Sequence[int], state) -> tuple[list[torch.Tensor], tuple]:
        return self.local.run_sequence(ts, state)

    @torch.no_grad()
    def evaluate_sequence(self, units: Sequence[int]) -> dict[str, float]:
        """p1 (rank 0) continues the state through the units alone, as it holds every parameter and
        snapshot; p2 takes its metrics."""
        if not self.p1:
            return self.run.comm.broadcast_object(None)
        return super().evaluate_sequence(units)


class _Measured:
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


class BladNM(GroupPipeline):
    """BLAD-NM: the balanced groups and split, no operator reordering."""

    name = "blad_nm"
    baseline_of = "group"
    reorder = False


class BladEven(GroupPipeline):
    """BLAD-Even: the plan's even baseline (equal group counts per worker, each group halved between
    the processes), no operator reordering."""

    name = "blad_even"
    baseline_of = "group"
    Options = BladEvenOptions
    baseline = True
    reorder = False
    replan_measured = False


class GroupFrames(GroupPipeline):
    """BLAD × PiPAD: the group strategy whose two processes each run their part of every group
    through PiPAD's frame engine (:class:`~dynagnn.train.frame_engine.FrameEngine`: parallel
    aggregation over a frame's snapshots, reuse of first-layer aggregations across frames and epochs,
    the pipelined feed), with the frames options (``frame_size``, ``frame_reuse``, ``pipeline``).
    A part is measured as a whole for the re-plan, its time shared evenly among its snapshots."""

    name = "group_frames"
    simplicity = 5
    Options = GroupFramesOptions
    refuses = {**GroupPipeline.refuses, "tbptt": ONE_WINDOW_TWO_PROCESSES, "sequence": NO_CARRY, "step": NO_CARRY,
               "transfer": "the group_frames strategy feeds overlap-aware partitions, not "
                                                    "graph differences: set transfer full"}

    def setup(self, run: Run) -> None:
        from dynagnn.train.frame_engine import engine_for

        super().setup(run)
        self.engine = engine_for(run, self.options, preload=False)   # this process reads its part
        self.engine.prepare_host(self._parts())

    def _forward(self, ts: Sequence[int], state):
        with self._measured.forward_all(ts, self.run.device):
            hs, state = self.engine.forward(list(ts), state)
        return hs[-1], state

    def start_epoch(self, epoch: int) -> None:
        super().start_epoch(epoch)
        self.engine.start_epoch(self._parts())

    def epoch_metrics(self, epoch: int, seconds: float) -> dict[str, float]:
        out = super().epoch_metrics(epoch, seconds)  # re-plans after the measured epoch: parts change
        return {**out, **self.engine.end_epoch(seconds, self._parts)}
