"""The strategy contract (DESIGN.md, "Training on many workers").

The engine owns epochs, the optimiser step, evaluation, early stopping and the outputs. A strategy
decides where the windows, snapshots or vertices of a step go and what crosses between workers; it
never changes what the step computes. So every strategy, on any number of workers, gives the loss
and gradients of :class:`~dynagnn.train.strategies.sequential.Sequential` with the same B.

- class attributes say what a strategy serves, for the router, the workflow and the chooser:
  ``Options`` (its typed options, :mod:`dynagnn.train.options`), ``fixed`` (options a baseline sets
  itself: the user may not), ``family`` (the workflow's group of strategies compared side by side),
  ``models`` (the model contracts it trains: ``snapshot``, ``stacked``, ``event``, ``sampled``),
  ``tasks``, ``procs_per_worker`` (BLAD's pair is 2), ``needs_plan`` (trains by the schedule stage's
  plan), ``gpu_only`` (pays only on a GPU), ``baseline_of`` (the strategy it is a paper's baseline of:
  blad_nm of group, tgnn_depcomm of tgnn, ...) and ``figure`` (the family figure the workflow draws).
- ``Strategy(config)``: one object per run, made by the engine from the run's
  :class:`~dynagnn.train.run_config.TrainConfig`; ``self.options`` is the config's typed options.
- ``check(model, store, workers)`` (once per run, before training; in the launcher of a job of
  several processes): raise a :class:`~dynagnn.errors.ConfigError` naming what to change when the
  strategy cannot serve the run.
- ``setup(run)``: ``run`` is a :class:`Run` (store, task, model, head, timer, DistContext, Comm, ...).
- ``train_step(ends)``: collective. The forward, backward and communication of one step, the B
  windows ending at ``ends``; its loss is the mean of the windows' losses. On return every worker
  holds the full gradient of that loss in ``.grad`` (the engine then steps the optimiser); the
  loss is returned as a float, the same on every worker.
- ``embed(ts)``: collective, evaluation: the embeddings [N, H] at the end of the window ``ts``
  (consecutive snapshot indices), on rank 0 (other ranks may return None).
- ``steps(ends, B)`` (after setup): the epoch's steps, lists of window ends; by default the training
  windows in order, B at a time. A strategy that places windows by a plan composes its steps from
  the plan (BLAD's groups: each step takes its share of every worker's groups).
- ``procs_per_worker`` (class attribute): processes per worker (device); BLAD's pair is 2.

What a step's unit of work is belongs to the strategy, not to the engine: snapshot windows by
default, event batches for the event models, seed batches for sampled training. So a strategy also
builds its own run and evaluates it:

- ``prepare(store, ctx, comm, timer)`` (in every process): the task, the
  train/val/test split of its units, the model, the head and the data it reads, as a :class:`Run`.
  The default is the snapshot-window run (every snapshot's adjacency and the features on the host).
- ``start_epoch(epoch)``: before each epoch's steps (an event model resets its memory there).
- ``evaluate(units)``: collective, no gradients: the task's metrics over ``units``, the same dict on
  every worker. The engine evaluates the validation units, then the test units, after each epoch.

Sequence mode ``carry`` (:class:`~dynagnn.train.options.SequenceMode`; the run's ``sequence``): a
strategy that serves it implements ``run_sequence(ts, state) -> (embeddings, state)`` over consecutive
snapshots and calls :meth:`Strategy.backward_sequence` in its step; the base evaluates
(:meth:`Strategy.evaluate_sequence`), keeps the carried state (:meth:`Strategy.state_before`) and cuts the steps
(:meth:`Strategy.steps`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
import logging
import math
import time
from typing import Any, Sequence

import numpy as np
import torch

from dynagnn.distributed.comm import Comm
from dynagnn.distributed.context import DistContext
from dynagnn.errors import ConfigError
from dynagnn.models.base import DynamicGNN
from dynagnn.timing import PhaseTimer
from dynagnn.train.options import Options, resolve_sequence
from dynagnn.tasks.snapshot import Split, chronological_split, infer_task, make_task
from dynagnn.train.transfer import load_host_snapshots
from dynagnn.train.backward import backward

log = logging.getLogger("dynagnn.train")


@dataclass
class Run:
    """What a strategy works with: one process's view of the training run.

    ``split``: the train/val/test units (window ends for snapshot strategies); ``in_dim``: the input
    feature width (part of a checkpoint's fingerprint); ``load_seconds``: the one-off read of the
    store. Snapshot runs: ``host`` holds every snapshot's normalised adjacency on the host
    (HostSnapshot list), ``features`` float32 [N, F] or [T, N, F], ``window`` the snapshots per
    window l (1 in sequence mode ``carry``, where the units are the training sequence's snapshots).
    ``sequence``: "window" or "carry" (:class:`~dynagnn.train.options.SequenceMode`). ``config``: the run's :class:`~dynagnn.train.run_config.TrainConfig` (the strategy's
    own options are ``Strategy.options``).
    """

    store: Any
    task: Any
    model: torch.nn.Module
    head: torch.nn.Module
    timer: PhaseTimer
    ctx: DistContext
    comm: Comm
    host: list = field(default_factory=list)
    features: np.ndarray | None = None
    window: int = 1
    batch_windows: int = 1
    config: Any = None
    epoch: int = 0
    split: Split | None = None
    in_dim: int = 0
    load_seconds: float = 0.0
    sequence: str = "window"

    @property
    def train_ends(self) -> list:
        """The training units (window ends, for snapshot strategies)."""
        return list(self.split.train) if self.split is not None else []

    @property
    def num_nodes(self) -> int:
        return int(self.store.num_nodes)

    @property
    def device(self) -> torch.device:
        return self.ctx.device

    def windows(self, ends: Sequence[int]) -> list[list[int]]:
        return [list(range(t - self.window + 1, t + 1)) for t in ends]

    def parameters(self) -> list[torch.nn.Parameter]:
        return list(self.model.parameters()) + list(self.head.parameters())


def refuse_graph_input(config) -> None:
    """ConfigError where ``graph_input`` is set for a model that has no such variant (only T-GCN has)."""
    if config.graph_input != "xh":
        raise ConfigError(f"graph_input {config.graph_input!r} is T-GCN's variant (tgcn); {config.model} has none: "
                          "leave graph_input at its default, xh")


class Strategy:
    name = ""
    Options: type[Options] = Options
    fixed: dict[str, Any] = {}
    refuses: dict[str, str] = {}  # why it takes no such option, where a reason says more than who does
    family = ""
    models: tuple[str, ...] = ("snapshot",)
    needs: tuple[str, ...] = ()   # what a snapshot model's contract must give (models.contract): row_local
    tasks: tuple[str, ...] = ("link", "classify", "regress")
    procs_per_worker = 1
    needs_plan = False
    gpu_only = False
    baseline_of: str | None = None   # the strategy this one is a paper's baseline of (the chooser leaves it out)
    figure: str | None = None
    # what the chooser (dynagnn.choose) asks of a strategy, beside its speed options (``Options.speed``)
    simplicity = 100      # the tie-break rank, plainest first (less machinery to trust); unranked after the ranked
    splits_only = False   # its only point is a step split among workers: on one it is the plain loop with more to do
    plain = False         # the plain one-process loop of the models it trains: what every technique must beat
    divides = ""          # what its workers divide of the memory: "vertices", "snapshots" or "" (nothing)

    @classmethod
    def speed_options(cls, window: int, device: str, given=()) -> list[tuple[tuple[str, object], ...]]:
        """Each combination of its speed options' values worth trying (``Options.speed``, less the
        ``given`` ones and those it fixes), an option at its default left unset."""
        import itertools

        speed = {k: s for k, s in cls.Options.speed().items() if k in cls.settable() - set(given)}
        declared = cls.Options.declared()
        axes = [[(k, v) for v in s.tried(window, device) or (None,)] for k, s in speed.items()]
        return [tuple((k, v) for k, v in combo if v is not None and v != declared[k].default)
                for combo in itertools.product(*axes)]

    @classmethod
    def step_traffic(cls, workers: int, shape) -> list[tuple[str, float, int]]:
        """The messages one step moves between its workers beyond the gradients' all-reduce, as
        (channel, bytes, times) (a channel the chooser's link costs: "allreduce", "handover").
        ``shape``: the run's ``window``, ``num_nodes``, ``hidden``, ``layers``, ``memory_dim`` and
        ``halo_rows`` ({workers: boundary rows}, measured at start)."""
        return []

    @classmethod
    def held_bytes(cls, store, options, gpu: bool) -> float:
        """The bytes it holds of its own beyond the run's data, model and activations (a cache),
        counted from ``options``; ``gpu``: training on a GPU. The chooser's memory model adds them."""
        return 0.0

    def __init__(self, config, options: Options | None = None):
        """``options``: other than the config's, for a strategy run inside another (BLAD's processes
        step through their snapshots with a sequential one)."""
        self.config = config
        self.options = config.options if options is None else options
        self.carry = False                                 # sequence mode "carry" (set by setup)
        self._carried: tuple[int, tuple] | None = None     # (the next snapshot, the state before it)

    @classmethod
    def settable(cls) -> set[str]:
        """The option keys a run of this strategy may set."""
        return set(cls.Options.declared()) - set(cls.fixed)

    @classmethod
    def make_options(cls, **given) -> Options:
        """This strategy's options: ``given`` (keys it takes) over the defaults, its fixed ones set."""
        return cls.Options(**{**given, **cls.fixed})

    @classmethod
    def shape_keys(cls, config) -> dict:
        """Options that shape the model's weights, beside the shared keys (a checkpoint's fingerprint)."""
        return {}

    @classmethod
    def model_refusal(cls, model_cls: type, contract) -> str | None:
        """Why this strategy cannot train the snapshot model ``model_cls``, whose contract check
        (:func:`dynagnn.models.contract.check_contract`) found ``contract``; None where it can."""
        if "snapshot" not in cls.models and "stacked" not in cls.models:
            return f"it trains {' and '.join(cls.models)} models, not snapshot models"
        for need in cls.needs + (("stacked",) if "snapshot" not in cls.models else ()):
            why = contract.refusal(need)
            if why:
                return why
        return None

    def check_model(self, model) -> None:
        """ConfigError, naming the model and the strategies that can train it, where the model's contract
        (checked once per class, the built-in models' too) rules this strategy out."""
        from dynagnn.models.contract import check_contract

        from dynagnn.models import is_import_path
        from dynagnn.train.strategies import serving_strategies

        contract = check_contract(type(model), self.config.model, model.in_dim, model.hidden_dim)
        why = self.model_refusal(type(model), contract)
        if not why and not is_import_path(self.config.model):
            return   # the strategies that serve it are named only where they are news (each is imported to ask)
        can = serving_strategies(type(model), contract)
        if is_import_path(self.config.model):
            log.info("model %s passes the contract check (%s%s): served by %s", self.config.model, contract.kind,
                     ", row-local" if contract.row_local else "", ", ".join(can))
        if why:
            raise ConfigError(f"the {self.name} strategy cannot train model {self.config.model}: {why}; "
                              f"strategies that can: {', '.join(can)}")

    def check(self, model: DynamicGNN, store, workers: int) -> None:
        """Raise ConfigError if this strategy cannot serve ``model`` on ``store`` with ``workers`` workers."""

    def prepare(self, store, ctx: DistContext, comm: Comm, timer: PhaseTimer) -> Run:
        """The snapshot-window run: the task (``config.task``, or inferred from the store), the
        chronological split of its windows, every snapshot's adjacency and the features on the
        host, the model and the task's head on ``ctx.device``."""
        c = self.config
        self.model_class(c.model)  # what the run cannot train, or read, is named before the task is made
        t0 = time.perf_counter()
        features = store.require_features()
        load_seconds = time.perf_counter() - t0
        task, split, sequence, window = self.make_task(store)
        empty = task.empty_windows(split.train) if hasattr(task, "empty_windows") else []
        if empty and ctx.is_main:
            log.info("%d of %d training windows predict a snapshot with no edge (ending at %s): scored on "
                     "their negatives only", len(empty), len(split.train), ", ".join(map(str, empty)))
        t0 = time.perf_counter()
        host = load_host_snapshots(store)
        load_seconds += time.perf_counter() - t0
        in_dim = int(features.shape[-1])
        model = self.build_model(in_dim).to(ctx.device)
        head = task.head(model.out_dim).to(ctx.device)
        return Run(store, task, model, head, timer, ctx, comm, host, features, window, c.batch_windows,
                   c, split=split, in_dim=in_dim, load_seconds=load_seconds, sequence=sequence)

    def make_task(self, store):
        """(task, split of its window ends, sequence mode, window) of a run on ``store``: the config's
        task (or the store's inferred one) with the link task's negatives, split chronologically."""
        c = self.config
        kind = getattr(self.options, "eval_negative_kind", "random")
        reported = list(getattr(self.options, "report_negative_kinds", []))
        link_opts = {"neg_ratio": c.neg_ratio, "eval_negatives": c.eval_negatives, "max_edges": c.max_edges,
                     "negative_kind": kind, "report_kinds": reported}
        task_name = infer_task(store) if c.task == "auto" else c.task
        if task_name != "link" and (kind != "random" or reported):
            what = f"eval_negative_kind {kind}" if kind != "random" else f"report_negative_kinds {reported}"
            raise ConfigError(f"{what}: the link task's evaluation negatives; this run's task is {task_name}")
        task = make_task(task_name, store, c.seed, **(link_opts if task_name == "link" else {}))
        sequence = resolve_sequence(self.options, task_name, store)
        window = 1 if sequence == "carry" else c.window
        split = chronological_split(task.steps(window))
        if task_name == "link":
            task.observe_split(split)
        return task, split, sequence, window

    def input_dim(self, store) -> int:
        """The width of what the model reads from ``store`` (the node features by default); ConfigError
        naming the fix where the store lacks it."""
        return store.feature_dim()

    def model_class(self, name: str) -> type:
        """The snapshot model class ``name``; ConfigError naming the model and the strategies that train
        it (by the registry's ``models`` contracts) when it is an event or a sampled model."""
        from dynagnn.models import ALL_MODELS, is_import_path, model_class, model_kind

        if name not in ALL_MODELS and not is_import_path(name):
            return model_class(name)   # unknown: the snapshot models' error, with its did-you-mean
        kind = model_kind(name)   # an import path is loaded and checked to be a model class here
        if kind in ("sampled", "event"):
            from dynagnn.train.strategies import STRATEGIES

            names = [n for n, cls in STRATEGIES.items() if kind in cls.models]
            what = {"sampled": "a static GNN trained on sampled blocks (BGL)",
                    "event": "an event model (TGN, JODIE, APAN)"}[kind]
            raise ConfigError(f"model: {name!r} is {what}, which the {self.name} strategy does not train; the "
                              f"strategies that train it: {', '.join(names)} (--strategy {names[0]})")
        return model_class(name)

    def build_model(self, in_dim: int, **kw) -> torch.nn.Module:
        """The model ``config.model`` of this strategy's family (snapshot models by default) for
        ``in_dim`` input features, on the CPU."""
        import inspect

        from dynagnn.models import build_model

        c = self.config
        if "graph_input" in inspect.signature(self.model_class(c.model)).parameters:   # T-GCN's variant
            kw["graph_input"] = c.graph_input
        else:
            refuse_graph_input(c)
        return build_model(c.model, in_dim, c.hidden, **kw)

    def setup(self, run: Run) -> None:
        self.run = run
        self.carry = run.sequence == "carry"
        self._carried = None

    def check_sequence(self, store) -> bool:
        """Whether the run carries its sequence (the mode resolved for ``store``); ConfigError for
        options that mode cannot use: a step per tbptt piece with windows or without tbptt, checkpoint
        blocks with a carried sequence."""
        o = self.options
        task = infer_task(store) if self.config.task == "auto" else self.config.task
        carry = resolve_sequence(o, task, store) == "carry"
        step = getattr(o, "step", "epoch")
        if step == "tbptt" and not carry:
            raise ConfigError("step: tbptt steps the optimiser per tbptt piece of a carried sequence; it needs "
                              "sequence: carry (or auto on a pyg-temporal-json regress store)")
        if step == "tbptt" and not o.tbptt:
            raise ConfigError("step: tbptt needs tbptt: k, the snapshots per optimiser step (1: a step per snapshot)")
        if carry and getattr(o, "checkpoint_blocks", 1) > 1:
            why = " (auto: a regress task on a pyg-temporal-json store)" if o.sequence == "auto" else ""
            raise ConfigError(f"sequence carry{why} with checkpoint_blocks > 1: ESDG's time blocks checkpoint a "
                              "window; in carry mode bound the memory with tbptt instead")
        return carry

    def start_epoch(self, epoch: int) -> None:
        """Before the training steps of ``epoch``: in carry mode the sequence starts again from the
        initial state (a strategy that overrides this calls it)."""
        self._carried = None

    @torch.no_grad()
    def evaluate(self, units: Sequence[int]) -> dict[str, float]:
        """Collective: the task's metrics over the windows ending at ``units``, scored on rank 0 from
        :meth:`embed` and broadcast, so every worker takes the same early-stopping decision (carry
        mode: :meth:`evaluate_sequence`)."""
        if self.carry:
            return self.evaluate_sequence(units)
        run = self.run
        embeddings = {t: self.embed(ts) for t, ts in zip(units, run.windows(units))}
        metrics = run.task.evaluate(run.head, embeddings) if run.ctx.is_main else None
        return run.comm.broadcast_object(metrics)

    def train_step(self, ends: Sequence[int]) -> float:
        raise NotImplementedError

    def embed(self, ts: Sequence[int]) -> torch.Tensor | None:
        raise NotImplementedError

    def epoch_metrics(self, epoch: int, seconds: float) -> dict[str, float]:
        """Collective, after each training epoch of ``seconds``: the strategy's own per-epoch figures
        for metrics.parquet (the same on every worker; default none)."""
        return {}

    def state_buffers(self) -> dict[str, torch.Tensor] | None:
        """Collective: what scoring needs beside the weights, as the last evaluation left it (CPU
        tensors by name), for the checkpoint; None (the default) where the weights are all."""
        return None

    def load_state_buffers(self, state: dict[str, torch.Tensor]) -> None:
        """Take back what :meth:`state_buffers` gave (ValueError where it does not fit)."""

    def close(self) -> None:
        """Release what the strategy holds open (channels, threads) once training ends or fails
        (default nothing)."""

    def steps(self, ends: Sequence[int], batch_windows: int) -> list[list[int]]:
        """The training windows' end snapshots cut into steps of B, in order (the last may be shorter).
        Carry mode: the whole training sequence, or pieces of ``tbptt`` snapshots with ``step`` "tbptt"."""
        ends = list(ends)
        if self.carry:
            b = self.options.tbptt if self.options.step == "tbptt" else len(ends)
        else:
            b = int(batch_windows)
        return [ends[i:i + b] for i in range(0, len(ends), max(1, b))]

    # ---- sequence mode "carry" ----------------------------------------------------------------------
    def run_sequence(self, ts: Sequence[int], state: tuple) -> tuple[list[torch.Tensor], tuple]:
        """The embeddings [N, H] of the consecutive snapshots ``ts`` and the state after them, from
        ``state`` (a strategy serving carry mode implements it)."""
        raise NotImplementedError

    def initial_sequence_state(self) -> tuple:
        """The state a carried sequence starts from: the model's, for every vertex (a strategy that
        holds a part of the vertices gives its part's)."""
        return self.run.model.initial_state(self.run.num_nodes, self.run.device)

    #: what each worker back-propagates of a carried step's loss (vertex: every worker computes the
    #: full loss, each back-propagates 1/P of it)
    sequence_scale = 1.0

    def sequence_ranges(self, steps: Sequence[Sequence[int]]) -> list[list[int]]:
        """The snapshot ranges an epoch of carry mode runs, in order: those before the first training
        snapshot (replayed without gradients), then each tbptt piece of each step."""
        units = [t for s in steps for t in s]
        if not units:
            return []
        k = getattr(self.options, "tbptt", None) or len(units)
        out = [list(range(units[0]))] if units[0] > 0 else []
        for s in steps:
            out += [list(s[i:i + k]) for i in range(0, len(s), k)]
        return out

    def state_before(self, t0: int) -> tuple:
        """The carried state before snapshot ``t0``: where the last training step or evaluation ended
        there, that state; else the snapshots 0..t0-1 replayed from the initial state, without
        gradients (the initial state itself keeps its parameters: EvolveGCN's W_0)."""
        if self._carried is not None and self._carried[0] == t0:
            return self._carried[1]
        state = self.initial_sequence_state()
        if t0 > 0:
            with torch.no_grad():
                state = self.advance(list(range(t0)), state)
        return state

    def advance(self, ts: Sequence[int], state: tuple) -> tuple:
        """The state after the consecutive snapshots ``ts`` from ``state`` (:meth:`run_sequence`'s,
        its embeddings dropped; a strategy that moves them to score them overrides this)."""
        return self.run_sequence(ts, state)[1]

    def backward_sequence(self, ends: Sequence[int]) -> float:
        """Carry mode's step over the consecutive snapshots ``ends``, the state carried in: each
        snapshot's loss / len(ends), back-propagated piece by piece (``tbptt`` snapshots each, the
        state detached between pieces). Returns the step's loss (a non-finite one as soon as it
        appears)."""
        ends = list(ends)
        state = self.state_before(ends[0])
        total = 0.0
        for piece in self.tbptt_pieces(ends):
            loss, state = self.backward_piece(piece, state, 1.0 / len(ends))
            total += loss
            if not math.isfinite(loss):
                return loss
            state = tuple(s.detach() for s in state)
        self._carried = (ends[-1] + 1, state)
        return total

    def tbptt_pieces(self, ends: Sequence[int]) -> list[list[int]]:
        """A carried step's consecutive snapshots ``ends`` cut into pieces of ``tbptt`` (one piece
        without it); ValueError where they are not consecutive."""
        ends = list(ends)
        if ends != list(range(ends[0], ends[0] + len(ends))):
            raise ValueError(f"sequence carry steps through consecutive snapshots, not {ends}")
        k = getattr(self.options, "tbptt", None) or len(ends)
        return [ends[i:i + k] for i in range(0, len(ends), k)]

    def backward_piece(self, ts: Sequence[int], state: tuple, weight: float) -> tuple[float, tuple]:
        """The snapshots ``ts`` run from ``state`` (:meth:`run_sequence`), each one's loss times
        ``weight``, and one backward through the piece: (the summed loss, the state after ``ts``)."""
        run = self.run
        hs, state = self.run_sequence(ts, state)
        total, outs, grads = head_backwards(run, ts, hs, weight, self.sequence_scale)
        if not math.isfinite(total):
            return total, state
        if outs:
            with run.timer.phase("backward"):
                backward(outs, grads)
        return total, state

    @torch.no_grad()
    def evaluate_sequence(self, units: Sequence[int]) -> dict[str, float]:
        """Carry mode's evaluation: the state continued through the snapshots of ``units`` (from where
        training or the last evaluation ended), each unit's embedding scored on one worker."""
        run = self.run
        units = list(units)
        embeddings = {}
        if units:
            ts = list(range(units[0], units[-1] + 1))
            hs, state = self.run_sequence(ts, self.state_before(units[0]))
            wanted = set(units)
            embeddings = {t: h for t, h in zip(ts, hs) if t in wanted}
            self._carried = (units[-1] + 1, state)
        metrics = run.task.evaluate(run.head, embeddings) if run.ctx.is_main else None
        return run.comm.broadcast_object(metrics)

    def backward_windows(self, ends: Sequence[int], scale: float = 1.0) -> float:
        """For each window: its loss / B from :meth:`embed`, back-propagated (times ``scale``) at once,
        so memory holds one window's activations whatever B is. Returns the step's loss (a
        non-finite one as soon as it appears, for the engine to stop on)."""
        run = self.run
        total = 0.0
        for t, ts in zip(ends, run.windows(ends)):
            h = self.embed(ts)
            loss, grad = head_backward(run, h, t, 1.0 / len(ends), scale)
            if not math.isfinite(loss):
                return loss
            if grad is not None:
                with run.timer.phase("backward"):
                    backward(h, grad)
            total += loss
        return total


def head_backwards(run: Run, ts: Sequence[int], hs: Sequence[torch.Tensor], weight: float,
                   scale: float = 1.0) -> tuple[float, list[torch.Tensor], list[torch.Tensor]]:
    """:func:`head_backward` of each embedding of ``hs`` at its snapshot of ``ts``: (the summed loss,
    the embeddings whose loss reads them, their gradients), to back-propagate through the model in one
    call. Stops at the first non-finite loss, which is then the sum."""
    total, outs, grads = 0.0, [], []
    for t, h in zip(ts, hs):
        loss, grad = head_backward(run, h, t, weight, scale)
        if not math.isfinite(loss):
            return loss, outs, grads
        total += loss
        if grad is not None:
            outs.append(h)
            grads.append(grad)
    return total, outs, grads


def head_backward(run: Run, h: torch.Tensor, t: int, weight: float = 1.0, scale: float = 1.0,
                  inputs: torch.Tensor | None = None) -> tuple[float, torch.Tensor | None]:
    """The task's loss of the embeddings ``h`` [N, H] at ``t`` times ``weight`` (1/B in a step of B
    windows), its head's part of the backward done (the head's parameter gradients accumulated,
    times ``scale``), timed as ``head``. Returns (that loss, d(loss·scale)/dh or None when the loss
    does not depend on h); the caller back-propagates the gradient through the model, so the two
    parts of the backward are timed apart and a strategy can run the model's part where it likes.
    ``inputs``: the task's loss inputs when prepared elsewhere (``Task.loss_inputs``)."""
    with run.timer.phase("head"):
        leaf = h.detach().requires_grad_(h.requires_grad)
        loss = run.task.loss(run.head, leaf, t, run.epoch, inputs) * weight
        value = float(loss.detach())
        if loss.requires_grad and math.isfinite(value):
            (loss * scale if scale != 1.0 else loss).backward()
    return value, leaf.grad
