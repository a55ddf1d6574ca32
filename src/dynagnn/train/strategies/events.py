"""The event strategy: TGN, JODIE and APAN trained on one worker over batches of events.

The unit of work is a batch of ``event_batch`` consecutive events (default 200, DyGLib's). Each
batch, in the order of issue 14 (and of TGL's training loop):

1. ``sample``: the batch's negatives, the k most recent neighbours of its roots, its unique ids
   (prepared ahead by a thread while the previous batch computes: ``pipeline``);
2. ``memory``: the rows of those ids are read and their pending mails applied (the updated memory);
3. ``embed``: the roots are embedded and the edges scored; the loss (binary cross-entropy of
   positives against their negatives) is back-propagated (``backward``);
4. the engine steps the optimiser; then ``mailbox``: the positive endpoints' memory and the
   batch's mails are written back. The writes were computed, detached, in the forward pass, and
   are applied when the next batch (or evaluation) starts, or at :meth:`EventStrategy.after_step`.

Memory is reset at the start of every epoch, carried from training into validation and from
validation into test, as TGN, TGL and DyGLib do; training and validation are not replayed before
testing because the memory at the start of the test events is exactly the one the validation pass
left (an epoch trains through the training events, then validation runs through its events).
Evaluation scores every event against its fixed negatives, then (DyGLib's inductive setting) runs
again from the same starting memory over only the inductive events, and leaves the memory where
the full pass left it.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F

from dynagnn.errors import ConfigError
from dynagnn.graph.sample import TemporalNeighbors
from dynagnn.models.heads import LinkPredictor
from dynagnn.models.tgnn import BatchOutput, TGNN_MODELS, apply_writes, build_tgnn, make_batch
from dynagnn.sortedkeys import sort_groups
from dynagnn.timing import section
from dynagnn.tasks.events import EventLinkTask, check_events, split_metrics
from dynagnn.train.options import LinkNegatives, Pipelining, option
from dynagnn.train.pipeline import Prefetcher, producer_has_core
from dynagnn.train.strategies.base import Run, Strategy, refuse_graph_input


def edge_features(events) -> np.ndarray | None:
    """float32 [E, d_e]: the events' own features, else their weights as one column, else None."""
    if events.features is not None:
        return np.asarray(events.features, dtype=np.float32).reshape(len(events), -1)
    if events.w is not None:
        return np.asarray(events.w, dtype=np.float32).reshape(-1, 1)
    return None


def memory_age_stats(src: np.ndarray, dst: np.ndarray, t: np.ndarray, start: float) -> tuple[float, float]:
    """Mean and standard deviation of the time since a node's previous event (its first event
    counted from ``start``), over every event's endpoints: JODIE's standardisation of Δt.

    The engine takes them over the whole stream from its first time, adapting what TGN's and
    DyGLib's code do (``compute_time_statistics`` / ``compute_src_dst_node_time_shifts``: over the
    whole stream, a node's first event counted from time 0 of timestamps that start near 0, two
    numbers of the later periods' timing but never their links); they keep sources' and
    destinations' gaps apart (as sources, as destinations), here one projection serves both and a
    gap is the memory's age, since the node's last event in either role. The first events' long gaps widen the scale: on CollegeMsg
    the training events' gaps between events alone have a standard deviation of 1.0e5 s, against
    6.9e5 s so; at 1.0e5 s the projection is seven times steeper, and JODIE's test AP fell late in
    training while its validation AP rose (seed 2: 80.0 at the best epoch, against 91.5 with
    DyGLib's scale)."""
    node = np.stack([src, dst], 1).ravel()
    time = np.repeat(np.asarray(t, dtype=np.float64), 2)
    order, first = sort_groups(node)
    tt = time[order]
    if tt.size == 0:
        return 0.0, 1.0
    prev = np.empty_like(tt)
    prev[1:] = tt[:-1]
    prev[first] = float(start)
    gaps = tt - prev
    return float(gaps.mean()), float(gaps.std() or 1.0)


@dataclass(frozen=True)
class EventOptions(Pipelining, LinkNegatives):
    """The event models' widths, their neighbourhood and the batches of events (and the prefetch of
    the next training batch: ``pipeline``)."""

    event_batch: int = option(200, "event models (tgn, jodie, apan): events per batch, the unit of a step "
                              "(DyGLib's 200)", type="integer", minimum=1)
    memory_dim: int = option(100, "event models: node-memory width d_mem, also the embedding width (even for tgn "
                             "and apan: 2 heads)", type="integer", minimum=1)
    time_dim: int = option(100, "event models: time-encoding width", type="integer", minimum=1)
    neighbors: int = option(10, "event models: most recent neighbours per event endpoint (TGN's attention, APAN's "
                            "mail delivery)", type="integer", minimum=1)
    event_negatives: int = option(100, "event models: fixed negative destinations per evaluation event for MRR "
                                  "(TGB's 100; AP and AUC use the first)", type="integer", minimum=1)


class EventStrategy(Strategy):
    """One worker, batches of events in time order (the TGL/DyGLib loop)."""

    name = "events"
    simplicity = 6
    plain = True
    Options = EventOptions
    family = "events"
    models = ("event",)
    tasks = ("link",)

    @classmethod
    def shape_keys(cls, config) -> dict:
        """An event model's widths are these, not hidden."""
        return {"memory_dim": config.options.memory_dim, "time_dim": config.options.time_dim}

    def check(self, model, store, workers):
        if workers != 1:
            raise ConfigError(f"the events strategy runs on 1 worker, not {workers}")

    def input_dim(self, store) -> int:
        """The edge-feature width d_e of :func:`edge_features`, from the arrays' shapes (the event
        models read no node features); ConfigError where the store has no event stream."""
        if not store.has("events/src"):
            check_events(None, store.path)
        if store.has("events/features"):
            return int(np.prod(store.root["events/features"].shape[1:], dtype=np.int64))
        return 1 if store.has("events/w") else 0

    def build_model(self, in_dim: int, num_nodes: int = 1, **kw) -> torch.nn.Module:
        """The event model ``config.model`` for ``num_nodes`` nodes and ``in_dim`` edge features
        (the launcher builds one of 1 node to check the run)."""
        c, o = self.config, self.options
        if c.model not in TGNN_MODELS:
            raise ConfigError(f"the events strategy trains the event models {', '.join(TGNN_MODELS)}, not "
                              f"{c.model!r} (a snapshot model: use --strategy sequential)")
        refuse_graph_input(c)
        if c.model in ("tgn", "apan") and o.memory_dim % 2:
            raise ConfigError(f"memory_dim {o.memory_dim}: {c.model}'s 2 attention heads need an even width")
        return build_tgnn(c.model, num_nodes, in_dim, o.memory_dim, o.time_dim, o.neighbors, **kw)

    def prepare(self, store, ctx, comm, timer) -> Run:
        """The event run: the task over the store's (time-ordered) event stream and its split into
        batch units, the edge features (``Run.features``: float32 [E, d_e] or None), the model and
        the edge-scoring head."""
        c, o = self.config, self.options
        if c.task not in ("auto", "link"):
            raise ConfigError(f"task {c.task!r}: the event models predict links (task auto or link)")
        t0 = time.perf_counter()
        task = self.make_task(store)[0]
        feats = edge_features(task.events)
        load_seconds = time.perf_counter() - t0
        in_dim = 0 if feats is None else int(feats.shape[1])
        extra = {}
        if c.model == "jodie":
            shift, scale = memory_age_stats(task.src, task.dst, task.t, float(task.t[0]))
            extra = {"dt_shift": shift, "dt_scale": scale}
        model = self.build_model(in_dim, store.num_nodes, **extra).to(ctx.device)
        head = LinkPredictor(model.out_dim).to(ctx.device)
        return Run(store, task, model, head, timer, ctx, comm, features=feats, config=c,
                   split=task.split, in_dim=in_dim, load_seconds=load_seconds)

    def make_task(self, store):
        """(task, its split of batch units, "window", 1): the event link task over the store's stream,
        its evaluation negatives the run's (the tuple is the snapshot strategies' :meth:`make_task`'s)."""
        c, o = self.config, self.options
        events = store.events()
        task = EventLinkTask(events, store.num_nodes, o.event_batch, o.event_negatives, c.seed,
                             path=str(store.path), negative_kind=o.eval_negative_kind,
                             report_kinds=o.report_negative_kinds)
        return task, task.split, "window", 1

    def setup(self, run: Run) -> None:
        """The memory, the samplers (training: the kept training events; evaluation: the whole
        stream, of which a query sees only the past) and the edge features on the device."""
        super().setup(run)
        self.task, self.model, self.head, self.timer = run.task, run.model, run.head, run.timer
        self.device = run.device
        task, n = run.task, run.num_nodes
        self.efeat = None if run.features is None else torch.from_numpy(run.features).to(self.device)
        self.memory = self._new_memory(run)
        tr = task.train_events
        self.train_sampler = TemporalNeighbors(task.src[tr], task.dst[tr], task.t[tr], n, event_ids=tr)
        self.full_sampler = TemporalNeighbors(task.src, task.dst, task.t, n)
        self.epoch = 0
        self._pending: BatchOutput | None = None
        # the next training batches are sampled while this one computes (TGL's and Sven's pipeline):
        # a batch depends on the events, the seed and the epoch, never on the model
        self.prefetch = Prefetcher(self._prepare, enabled=self._prefetching(), depth=2, device="cpu")

    def _prefetching(self) -> bool:
        """pipeline on, or auto where the sampling thread has a core of its own
        (:func:`~dynagnn.train.pipeline.producer_has_core`): on CollegeMsg at 1 of 2 threads TGN's
        epoch is 1.05x faster with it, at 2 of 2 it is 0.98x (the thread competes for the cores)."""
        mode = self.options.pipeline
        return mode == "on" or (mode == "auto" and producer_has_core(self.device))

    def _new_memory(self, run: Run):
        """The node memory and mailbox this worker holds: every node's (a strategy that partitions
        them allocates only its share)."""
        return self.model.new_memory(self.device)

    # ---- engine hooks -------------------------------------------------------------------------
    def state_buffers(self) -> dict[str, torch.Tensor]:
        """Every node's memory and mailbox as the last pass left them (after an epoch's test events:
        the state from which the events after the stream are scored)."""
        return self.memory.state()

    def load_state_buffers(self, state: dict[str, torch.Tensor]) -> None:
        self.memory.load_state(state)

    def start_epoch(self, epoch: int) -> None:
        self._pending = None
        self.memory.reset()
        self.epoch = int(epoch)
        self.prefetch.schedule([(u, self.epoch) for u in self.task.split.train])

    def epoch_metrics(self, epoch: int, seconds: float) -> dict[str, float]:
        self.prefetch.close()
        return {}

    def close(self) -> None:
        """Stop the sampling thread (training ended, or failed mid-epoch)."""
        prefetch = getattr(self, "prefetch", None)
        if prefetch is not None:
            prefetch.close()

    def steps(self, units, batch_windows: int = 1) -> list[list[int]]:
        """One batch of events per step (the batch is the unit; B is the event batch's size)."""
        return [[u] for u in units]

    def after_step(self) -> None:
        """Write the last batch's memory and mails (after the optimiser step)."""
        if self._pending is not None:
            with section("mailbox"):
                apply_writes(self.memory, self._pending)
            self._pending = None

    # ---- one batch ------------------------------------------------------------------------------
    def training_batch(self, unit, epoch: int = 0):
        """The batch of training unit ``unit`` at ``epoch``, made as a step makes it (the chooser's
        memory model measures one)."""
        return self._prepare((unit, epoch))

    def score_batch(self, batch):
        """(positive scores, negative scores, writes) of a batch :meth:`training_batch` made."""
        return self._run(batch)

    def _forward(self, events: np.ndarray, neg: np.ndarray, sampler: TemporalNeighbors):
        """(positive scores [B], negative scores [B, K], writes) of one batch."""
        with section("sample"):
            batch = self._make(events, neg, sampler)
        return self._run(batch)

    def _run(self, batch):
        """:meth:`_forward` of a batch already made: its rows read, its roots scored."""
        with section("sample"):
            ids = torch.from_numpy(batch.nodes).to(self.device)
        with section("memory"):
            rows = self.memory.read(ids)
        return self._score(batch, rows)

    def _prepare(self, key):
        """The batch of training unit ``unit`` at ``epoch`` (the prefetch thread's work)."""
        unit, epoch = key
        _, events = self.task.unit_events(unit)
        return self._make(events, self.task.train_negatives(events, epoch, unit), self.train_sampler)

    def _make(self, events: np.ndarray, neg: np.ndarray, sampler: TemporalNeighbors):
        """The :class:`~dynagnn.models.tgnn.EventBatch` of ``events`` with negatives ``neg`` [B, K]."""
        t, m = self.task, self.model
        return make_batch(t.src[events], t.dst[events], t.t[events], events, neg, sampler, m.neighbors, m.sample,
                          m.dedup)

    def _score(self, batch, rows):
        """(positive scores [B], negative scores [B, K], writes) of ``batch`` from its memory ``rows``."""
        out = self.model(batch, rows, self.efeat)
        with section("embed"):
            b, k = batch.size, batch.negatives
            ar = np.arange(b)
            neg_src, neg_dst = batch.negative_pairs()
            pairs = torch.from_numpy(np.stack([np.concatenate([ar, neg_src]), np.concatenate([b + ar, neg_dst])]))
            scores = self.head(out.z, pairs.to(self.device))
        return scores[:b], scores[b:].reshape(b, k), out

    def train_step(self, step) -> float:
        self.after_step()
        self.model.train()
        self.head.train()
        total = 0.0
        for unit in step:
            with section("sample"):
                batch = self.prefetch.get((unit, self.epoch))
            pos, negs, out = self._run(batch)
            with section("embed"):
                logits = torch.cat([pos, negs.reshape(-1)])
                target = torch.cat([torch.ones_like(pos), torch.zeros(negs.numel(), device=pos.device)])
                loss = F.binary_cross_entropy_with_logits(logits, target) / len(step)
            value = float(loss.detach())
            if not math.isfinite(value):
                return value
            with section("backward"):
                loss.backward()
            total += value
            if len(step) > 1:  # several batches in one step: each writes before the next reads
                with section("mailbox"):
                    apply_writes(self.memory, out)
            else:
                self._pending = out
        return total

    @torch.no_grad()
    def _pass(self, split: str, events: np.ndarray, inductive: bool = False) -> tuple[np.ndarray, np.ndarray]:
        """Score ``events`` of ``split`` batch by batch, writing memory and mails after each
        (``inductive``: the split's inductive events, with their own negatives)."""
        pos_all, neg_all = [], []
        b = self.task.batch_size
        for i in range(0, events.size, b):
            ev = events[i:i + b]
            pos, neg, out = self._forward(ev, self.task.eval_negatives_of(split, ev, inductive), self.full_sampler)
            with section("mailbox"):
                apply_writes(self.memory, out)
            pos_all.append(pos.cpu().numpy())
            neg_all.append(neg.cpu().numpy())
        if not pos_all:
            return np.zeros(0), np.zeros((0, self.task.eval_negatives))
        return np.concatenate(pos_all), np.concatenate(neg_all)

    @torch.no_grad()
    def replay(self, units) -> None:
        """Run the events of ``units`` through the memory and mailbox without scoring them: a
        memory rebuilt from weights alone (training units, then an evaluation as the engine's). It
        is not the one training left (that one depends on the weights' trajectory, which is why the
        checkpoint keeps the memory itself); TGN's and JODIE's scores barely depend on the difference
        (on CollegeMsg a replayed checkpoint scores its epoch's validation AP within 0.4 points),
        APAN's do (see :class:`~dynagnn.models.tgnn.models.APAN`)."""
        self.after_step()
        self.model.eval()
        for unit in units:
            split, events = self.task.unit_events(unit)
            sampler = self.train_sampler if split == "train" else self.full_sampler
            _, _, out = self._forward(events, np.zeros((events.size, 0), dtype=np.int64), sampler)
            with section("mailbox"):
                apply_writes(self.memory, out)

    def evaluate(self, units) -> dict[str, float]:
        """AP, AUC, MRR of the units' events (one split), and the same on its inductive events
        (``ind_`` prefix), from the memory the previous pass left, for the task's negative kind and
        then each reported kind (prefixed); the memory then holds the state after the units' events."""
        self.after_step()
        self.model.eval()
        self.head.eval()
        parts = [self.task.unit_events(u) for u in units]
        if not parts:
            return {}
        split = parts[0][0]
        events = np.concatenate([p[1] for p in parts])
        start, after = self.memory.snapshot(), []

        def score_pass(ev, inductive):
            if inductive:   # the inductive pass runs from the memory the split started with
                after.append(self.memory.snapshot())
                self.memory.restore(start)
            return self._pass(split, ev, inductive)

        def one_kind():     # every kind's passes run from the memory the split started with
            if after:
                self.memory.restore(start)
            return split_metrics(self.task, split, events, score_pass)
        metrics = self.task.every_kind(one_kind)
        self.memory.restore(after[0])   # where the run's kind's full pass left it
        return metrics
