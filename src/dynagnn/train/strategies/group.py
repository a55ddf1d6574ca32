"""BLAD's training (SC'23 §5-6): snapshot groups across workers, two co-located processes per worker
with the planned split, a queue of deferred backward passes, and the planned operator order.

A window is BLAD's snapshot group: the l snapshots ending at the window's target. The schedule
stage's plan (:class:`~dynagnn.schedule.plan.SchedulePlan`) says

- level 1: which groups each worker trains (whole groups, contiguous, balanced by predicted load),
  so the only traffic between workers is the gradient all-reduce;
- level 2: for each of a worker's groups the split p_i between its two processes;
- the operator order (``layer.order``) of each process's GCN layers.

Loading, checking and following the plan, and re-making it from measured times (option ``replan``):
:mod:`~dynagnn.train.strategies.group_plan`.

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

Sequence mode ``carry`` (group, blad_nm and blad_even) runs the pair over the tbptt pieces of one carried
sequence on one worker, a plan given left unread: :mod:`~dynagnn.train.strategies.group_carry`.
group_frames does not carry a sequence.

On a GPU the two processes share the device (start the CUDA MPS daemon, ``nvidia-cuda-mps-control
-d``, to let their kernels run concurrently; without it they time-slice). nccl refuses two ranks on
one GPU, so such jobs use gloo (:mod:`dynagnn.distributed.launch`) and hand-overs go through the channel's
host memory, where BLAD uses a device memory pool. On CPU each process gets half of the worker's cores.
"""

from __future__ import annotations

import logging
import math
from collections import deque
from dataclasses import dataclass
from typing import Sequence

import numpy as np
import torch
from torch.utils._pytree import tree_flatten, tree_unflatten

from dynagnn.distributed.pair_channel import PairChannel, message_bytes
from dynagnn.errors import ConfigError
from dynagnn.schedule.plan import SchedulePlan
from dynagnn.schedule.topology import cross_kind_overlap
from dynagnn.splits import even_sizes
from dynagnn.timing import trace_segments
from dynagnn.train.options import LinkNegatives, Options, SequenceMode, Transfer, Truncation, WindowOptions, option
from dynagnn.train.strategies.base import Run, Strategy, head_backward
from dynagnn.train.strategies.frames import FramesOptions
from dynagnn.train.strategies.group_carry import CarryPair
from dynagnn.train.strategies.group_plan import Measured, PlanFollower
from dynagnn.train.strategies.sequential import Sequential
from dynagnn.train.backward import backward

log = logging.getLogger(__name__)

_Measured = Measured  # its name here before it moved to group_plan (tests import it from this module)

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


class GroupPipeline(PlanFollower, CarryPair, Strategy):
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
        self._measured = Measured()
        # the epoch whose times the re-plan takes: the second (the first warms caches and the
        # allocator, and measured 27% slow), or the first when only one epoch would follow it
        self.measure_epoch = max(0, min(1, self.config.epochs - 2))
        self._measured.on = False
        run.timer.trace = []  # operator timelines, for the measured overlap (epoch_metrics)

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
                        backward(flat, grad)
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
                        backward(h, grad_h)
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
