"""Sven's distributed TGNN training (Xia et al., HPDC'23 / TPDS; notes §3-7): TGN, JODIE and APAN on
several workers, with the node memory and mailbox partitioned across them.

- **Memory placement.** Each node's memory and mailbox row lives on one worker, chosen by
  ``memory_partitioner``: Re-FlexBiCut (default; Sven's min-max communication partition of the
  training events' graph, each node weighted by its occurrences as an event endpoint, the
  pre-sampling counts), a seeded hash, or id ranges. Each worker takes the events of every batch
  whose source it owns, with their negatives
  (:class:`~dynagnn.train.strategies.tgnn_memory.PartitionedMemory`).
- **Redundancy-free dispatch.** A worker's share of a batch reads the rows of its distinct nodes
  (sources, destinations, negatives, sampled neighbours: ``EventBatch.nodes``), each fetched once
  per micro-batch (so once per batch at m = 1; a row two micro-batches read is fetched by each)
  from its owner by an uneven all-to-all and scattered back by the inverse index
  (:func:`~dynagnn.graph.dispatch.plan_requests`). The memory update runs where the batch is; the
  updated memory of the positive endpoints and the new mails go back to the owners, where the
  latest (by stream order) wins at the end of the batch. So P workers compute exactly what one
  worker computes (the loss is the sum of the workers' parts of the batch's mean, the gradients are
  all-reduced).
- **Baselines** (NeutronStar's, as Sven compares with them): ``tgnn_depcomm`` asks every occurrence
  (no deduplication) and the *owner* runs the memory update, answering each occurrence with the
  updated memory (its gradient returns to the owner); ``tgnn_depcache`` replicates the memory on
  every worker (dispatch is local) and sends every write to every worker.
- **Hierarchical pipelining** (§6): a prefetch thread samples batch k+1 (and plans its requests)
  while batch k trains (``pipeline``: auto = on); each worker's share of a batch is cut into
  ``micro_batches`` pieces whose dispatch runs in a communication thread while the previous piece
  computes, and whose writes are sent while the next computes (gradients accumulate; the result is
  the unsplit batch's). ``micro_batches: adaptive`` measures 1, 2, 4 and 8 on the first steps of the
  first epoch and keeps the fastest (the measurement §6.2's fitted rule n = ⌊(A·bs + B)/S⌋ stands
  for; notes §6.2). ``stale_allreduce``: step k applies the all-reduced gradient of step k−1 while
  its own is reduced (ω_{t+1} = ω_t − α∇f(ω_{t−1}), Sven eq. 13; the loss is reduced apart, at
  once, so each step reports its own); off by default, it changes the training trajectory (every
  step applies the previous step's gradient), not the model.

How the overlap is made: gloo's collectives are synchronous in :class:`~dynagnn.distributed.comm.Comm`
(no async all-to-all handle there), so every collective of a training step runs, in the order the
step issues them, on one communication thread per worker (a single-worker executor; the same order
on every worker keeps the collectives matched); the training thread waits on its futures only
when it needs the rows (timed as ``communication``). DepComm's backward sends the gradient of the
fetched memory to its owners inside ``backward()``, a collective of the training thread, so
DepComm runs its pieces without that thread.

Bytes are counted per worker and collective in comm.parquet (module
:mod:`~dynagnn.train.strategies.tgnn_memory` names them): ``dispatch`` and ``aggregation`` are what
:func:`~dynagnn.analysis.commvolume.sven_volumes` models (for TGN and JODIE at m = 1; APAN also
writes mails to its sampled neighbours, which those closed forms do not count, and m > 1 fetches a
row once per micro-batch); ``epoch_metrics`` adds the batches per epoch, so that bytes per batch
follow.
"""

from __future__ import annotations

import concurrent.futures as cf
import copy
import logging
import time
from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F

from dynagnn.distributed.comm import Comm
from dynagnn.errors import ConfigError
from dynagnn.graph import partition as gp
from dynagnn.graph.dispatch import Requests
from dynagnn.models.tgnn import MemoryRows, Writes
from dynagnn.sortedkeys import unique_sorted
from dynagnn.timing import section
from dynagnn.train.pipeline import Prefetcher
from dynagnn.train.strategies.base import Run
from dynagnn.train.options import Speed, option
from dynagnn.train.strategies.events import EventOptions, EventStrategy
from dynagnn.train.strategies.tgnn_memory import PartitionedMemory, wire_device

PARTITIONERS = ("reflexbicut", "hash", "range")
ADAPTIVE_CHOICES = (1, 2, 4, 8)
PROBE_STEPS = 2  # steps per candidate while adaptive m is measured (the first one warms up)

log = logging.getLogger("dynagnn.train")


def memory_owner(src: np.ndarray, dst: np.ndarray, num_nodes: int, workers: int, how: str,
                 seed: int = 0) -> np.ndarray:
    """int64 [N]: the worker of each node's memory row, by partitioner ``how``; Re-FlexBiCut partitions
    the undirected graph of the events ``src``, ``dst`` [E] with each node weighted by its endpoint
    occurrences among them (Sven's pre-sampling counts: how often the node is a source or a
    destination, standing for how often its row is asked for; its occurrences as a negative or a
    sampled neighbour are not counted)."""
    if how == "hash":
        return gp.hash_partition(num_nodes, workers, seed)
    if how == "range":
        return gp.range_partition(num_nodes, workers)
    if how != "reflexbicut":
        raise ConfigError(f"memory_partitioner {how!r}: expected one of {', '.join(PARTITIONERS)}")
    n = np.int64(num_nodes)
    r, c = np.concatenate([src, dst]), np.concatenate([dst, src])
    keep = r != c
    keys = unique_sorted(r[keep] * n + c[keep])
    weights = np.bincount(np.concatenate([src, dst]), minlength=num_nodes).astype(np.float64)
    return gp.reflexbicut_partition(keys // n, keys % n, num_nodes, workers, weights=weights, seed=seed)


def worker_batches(strategy: EventStrategy, owner: np.ndarray, workers: int, units, epoch: int = 0):
    """The batch each worker trains at each step of ``units`` (training batch units), with one piece
    per worker (m = 1), built by ``strategy`` (any event strategy: its task, sampler and batch
    maker), for counting without running the workers: yields (step, worker, EventBatch)."""
    task = strategy.task
    for step, unit in enumerate(units):
        _, events = task.unit_events(unit)
        neg = task.train_negatives(events, epoch, unit)
        of = owner[task.src[events]]
        for rank in range(workers):
            mine = of == rank
            if mine.any():
                yield step, rank, strategy._make(events[mine], neg[mine], strategy.train_sampler)


@dataclass
class Piece:
    """One worker's micro-batch: ``batch`` (None: no events here), the requests for its rows, and
    for DepComm ``first`` int64 [U]: per node of ``batch.nodes`` the request row of its first
    occurrence."""

    batch: object
    req: Requests
    first: np.ndarray | None = None


@dataclass
class Share:
    """A worker's part of one batch: its pieces and the batch's logit count B·(1 + K) (the loss's
    denominator, the same on every worker)."""

    pieces: list
    logits: int


class _Inline:
    """An executor that runs at once, in the caller's thread (DepComm; see the module docstring)."""

    def submit(self, fn, *args):
        f = cf.Future()
        f.set_result(fn(*args))
        return f

    def shutdown(self, wait=True):
        pass


def _empty_writes(dim: int, device) -> Writes:
    return Writes(torch.zeros(0, dtype=torch.int64, device=device), torch.zeros(0, dim, device=device),
                  torch.zeros(0, dtype=torch.float64, device=device), np.zeros(0, dtype=np.int64))


def _untimed(comm: Comm) -> Comm:
    """``comm`` (same group, same byte counters, so comm.parquet keeps every byte) without the barrier
    it times before each collective: on the communication thread that barrier is one more
    collective per exchange and times nothing the training thread sees."""
    out = copy.copy(comm)  # shallow: the counters are the same dicts
    out.sync_timing = False
    return out


@dataclass(frozen=True)
class TGNNOptions(EventOptions):
    """Sven's: the event options, the memory partitioner, micro-batches, the stale all-reduce and the
    prefetch of the next batch's share (pipeline off turns it off)."""

    memory_partitioner: str = option("reflexbicut", "tgnn strategies (Sven): how the node memory and mailbox rows "
                                     "are split across workers (Re-FlexBiCut on the training events' graph, a seeded "
                                     "hash, id ranges)", enum=list(PARTITIONERS))
    micro_batches: int | str = option(1, "a count of micro-batches >= 1 or adaptive (tgnn strategies: each worker's "
                                      "share of a batch in that many pieces, the fetch of one overlapping the compute "
                                      "of the previous; adaptive: the fastest of 1, 2, 4, 8 in the first steps)",
                                      Speed((1, 2, 4)), type=["integer", "string"], minimum=1, pattern="^adaptive$")
    stale_allreduce: bool = option(False, "tgnn strategies: Sven's one-step-stale gradient all-reduce (step k applies "
                                   "the all-reduced gradient of step k-1 while its own is reduced)", type="boolean")


class TGNNStrategy(EventStrategy):
    """Sven: partitioned memory, redundancy-free dispatch, pipelined (module docstring)."""

    name = "tgnn"
    simplicity = 7
    splits_only = True
    divides = "vertices"   # Sven's memory rows, by owner

    @classmethod
    def step_traffic(cls, workers: int, shape) -> list[tuple[str, float, int]]:
        """Each worker's share of the node memory, fetched and written back."""
        if workers < 2:
            return []
        return [("allreduce", shape.num_nodes * shape.memory_dim * 4 / workers, 2)]
    Options = TGNNOptions
    family = "tgnn"
    figure = "sven"
    mode = "sven"

    def check(self, model, store, workers):
        num_nodes = store.num_nodes
        c, o = self.config, self.options
        if o.memory_partitioner not in PARTITIONERS:
            raise ConfigError(f"memory_partitioner {o.memory_partitioner!r}: expected one of {', '.join(PARTITIONERS)}")
        m = o.micro_batches
        if not (m == "adaptive" or (isinstance(m, int) and not isinstance(m, bool) and m >= 1)):
            raise ConfigError(f"micro_batches {m!r}: expected a count >= 1 or adaptive")
        if workers > num_nodes:
            raise ConfigError(f"{workers} workers for {num_nodes} nodes: the {self.name} strategy gives every "
                              f"worker memory rows; use at most {num_nodes} workers")
        if self.mode == "depcomm" and c.model == "apan":
            raise ConfigError("tgnn_depcomm cannot serve apan: its owner-side update is one row per node, and "
                              "APAN updates a node's memory per query time; use tgnn or tgnn_depcache")

    # ---- setup ----------------------------------------------------------------------------------
    def setup(self, run: Run) -> None:
        super().setup(run)  # the partition and this worker's rows: _new_memory
        opts = self.options
        overlap = self.mode != "depcomm"
        self.micro = opts.micro_batches
        self.m_cap = self._most_held(run)
        self.m = 1 if self.micro == "adaptive" else int(self.micro)
        if self.m > self.m_cap:  # more pieces than events: empty pieces, each a collective round for nothing
            if run.ctx.is_main:
                log.warning("micro_batches %d is more than the %d training events a worker holds at most in a "
                            "batch: capped at %d (the value recorded in metrics.parquet)", self.m, self.m_cap,
                            self.m_cap)
            self.m = self.m_cap
        self.stale = bool(opts.stale_allreduce)
        self.params = [p for p in run.parameters() if p.requires_grad]
        self.executor = (cf.ThreadPoolExecutor(1, thread_name_prefix="dynagnn-comm") if overlap else _Inline())
        self.prefetch = Prefetcher(self._prepare, enabled=opts.pipeline != "off", depth=2, device="cpu")
        self._stale_future: cf.Future | None = None
        self._probe: dict[int, list[float]] = {}
        self._decided = self.micro != "adaptive"
        self._step = 0
        self.batches = 0

    def _most_held(self, run: Run) -> int:
        """The most training events one worker holds in one batch (>= 1): the micro-batches' cap, the
        same on every worker (the partition is broadcast before)."""
        task, most = self.task, 1
        for unit in task.split.train:
            events = task.unit_events(unit)[1]
            held = np.bincount(self.owner[task.src[events]], minlength=self.world)
            most = max(most, int(held.max()) if held.size else 0)
        return most

    def _new_memory(self, run: Run) -> PartitionedMemory:
        """Partition the memory rows (``self.owner`` int64 [N]) and allocate this worker's."""
        comm, task = run.comm, run.task
        self.rank, self.world = comm.rank, comm.world
        self.comm = _untimed(comm) if self.mode != "depcomm" else comm
        tr = task.train_events
        owner = torch.zeros(run.num_nodes, dtype=torch.int64)
        if comm.rank == 0:  # one partition for all (METIS inside Re-FlexBiCut is seeded, but be sure)
            owner = torch.from_numpy(memory_owner(task.src[tr], task.dst[tr], run.num_nodes, comm.world,
                                                  self.options.memory_partitioner, self.config.seed))
        self.owner = comm.broadcast(owner.to(wire_device(comm)), 0, "partition").cpu().numpy()
        m = self.model
        return PartitionedMemory(self.comm, self.owner, m.memory_dim, m.mail_dim, m.mailbox, self.mode, self.device)

    # ---- preparing a worker's share (the prefetch thread's work) -----------------------------------
    def _piece(self, events: np.ndarray, neg: np.ndarray, sampler) -> Piece:
        batch = self._make(events, neg, sampler) if events.size else None
        if self.mode != "depcomm":
            ids = batch.nodes if batch is not None else np.zeros(0, dtype=np.int64)
            return Piece(batch, self.memory.plan(ids))
        if batch is None:
            return Piece(None, self.memory.plan(np.zeros(0, dtype=np.int64)), np.zeros(0, dtype=np.int64))
        valid = batch.nbr_valid
        occ = np.concatenate([batch.roots, batch.nbr[valid]])
        pos = np.concatenate([batch.root_idx, batch.nbr_idx[valid]])
        req = self.memory.plan(occ)
        first = np.empty(batch.nodes.size, dtype=np.int64)
        first[pos[::-1]] = req.inverse[::-1]  # the first occurrence's row wins
        return Piece(batch, req, first)

    def _share(self, events: np.ndarray, neg: np.ndarray, sampler, m: int) -> Share:
        """This worker's events of a batch (those whose source it owns) in ``m`` pieces."""
        mine = np.flatnonzero(self.owner[self.task.src[events]] == self.rank)
        pieces = [self._piece(events[p], neg[p], sampler) for p in np.array_split(mine, m)]
        return Share(pieces, int(events.size * (1 + neg.shape[1])))

    def _prepare(self, key) -> Share:
        unit, m, epoch = key
        _, events = self.task.unit_events(unit)
        return self._share(events, self.task.train_negatives(events, epoch, unit), self.train_sampler, m)

    # ---- collectives of a piece (run on the communication thread) ---------------------------------
    def _rows(self, piece: Piece) -> MemoryRows | None:
        """The rows of ``piece.batch.nodes`` (None without events; the fetch is collective either way)."""
        if self.mode == "depcomm":
            return self._updated_rows(piece)
        rows = self.memory.fetch(piece.req)
        if piece.batch is None:
            return None
        inv = torch.from_numpy(piece.req.inverse).to(rows.memory.device)
        return MemoryRows(*(getattr(rows, f)[inv] for f in ("memory", "memory_ts", "mail", "mail_ts", "mail_valid")))

    def _updated_rows(self, piece: Piece):
        """DepComm: the owners' updated memory of every occurrence; per node its first occurrence's,
        as rows whose mailbox is empty (so the model's own update leaves them as they are). Returns
        (rows or None, the received tensor: the loss must reach it for the backward exchange)."""
        def update(rows):
            memory, ts = self.model.updater(rows)
            if torch.is_grad_enabled() and not memory.requires_grad:
                memory = memory.detach().requires_grad_()  # every worker's exchange joins the backward
            return memory, ts
        memory, ts = self.memory.fetch_updated(piece.req, update)
        if piece.batch is None:
            return None, memory
        sel = torch.from_numpy(piece.first).to(memory.device)
        u, mb, d = sel.numel(), self.memory.store.mailbox_size, self.memory.store.mail_dim
        rows = MemoryRows(memory[sel], ts[sel], memory.new_zeros(u, mb, d),
                          torch.zeros(u, mb, dtype=torch.float64, device=memory.device),
                          torch.zeros(u, mb, dtype=torch.bool, device=memory.device))
        return rows, memory

    def _push(self, out) -> None:
        if out is None:
            store = self.memory.store
            self.memory.push(_empty_writes(store.memory_dim, self.device), _empty_writes(store.mail_dim, self.device))
        else:
            self.memory.push(out.memory, out.mail)

    # ---- training -------------------------------------------------------------------------------
    def start_epoch(self, epoch: int) -> None:
        self._drain()
        self.memory.reset()
        self.epoch = int(epoch)
        self._step = 0
        self.batches = 0
        self._schedule(self.task.split.train)

    def _schedule(self, units) -> None:
        self.prefetch.schedule([(u, self._m_at(i), self.epoch) for i, u in enumerate(units, self._step)])

    def _m_at(self, step: int) -> int:
        """Micro-batches of the epoch's step ``step``: adaptive m measures its candidates first."""
        if self.micro == "adaptive" and self._measuring():
            i = step // PROBE_STEPS
            return min(ADAPTIVE_CHOICES[i], self.m_cap) if i < len(ADAPTIVE_CHOICES) else self.m
        return self.m

    def _measuring(self) -> bool:
        return not self._decided and self.epoch == 0

    def after_step(self) -> None:
        """Apply the last batch's staged writes (after the optimiser step)."""
        with section("mailbox"):
            self.memory.commit()

    def train_step(self, step) -> float:
        self.after_step()
        self.model.train()
        self.head.train()
        (unit,) = step  # one batch per step (steps())
        m = self._m_at(self._step)
        t0 = time.perf_counter()
        with section("sample"):
            share = self.prefetch.get((unit, m, self.epoch))
        local = self._train_share(share)
        loss = self._reduce(local)
        if self._measuring():
            self._probe.setdefault(m, []).append(time.perf_counter() - t0)
            self._decide()
        self._step += 1
        self.batches += 1
        return loss

    def _train_share(self, share: Share) -> float:
        """Forward and backward of this worker's pieces, fetches ahead and writes behind (module
        docstring). Returns the worker's part of the batch's loss."""
        ex, pieces = self.executor, share.pieces
        fetches = [ex.submit(self._rows, pieces[0])]
        pushes, total = [], 0.0
        for j, piece in enumerate(pieces):
            if j + 1 < len(pieces):
                fetches.append(ex.submit(self._rows, pieces[j + 1]))
            with section("communication"):
                got = fetches[j].result()
            received = None
            if self.mode == "depcomm":
                got, received = got
            out = None
            if piece.batch is not None:
                pos, neg, out = self._score(piece.batch, got)
                with section("embed"):
                    logits = torch.cat([pos, neg.reshape(-1)])
                    target = torch.cat([torch.ones_like(pos), torch.zeros(neg.numel(), device=pos.device)])
                    loss = F.binary_cross_entropy_with_logits(logits, target, reduction="sum") / share.logits
                total += float(loss.detach())
            else:
                loss = None
            if received is not None:  # DepComm: the owners wait for this gradient
                loss = received.sum() * 0.0 if loss is None else loss + received.sum() * 0.0
            if loss is not None and loss.requires_grad:
                with section("backward"):
                    loss.backward()
            pushes.append(ex.submit(self._push, out))
        with section("communication"):
            for f in pushes:
                f.result()
        return total

    def _flat(self, loss: float) -> torch.Tensor:
        """The gradients, a has-gradient flag per parameter and the loss, in one buffer."""
        grads = [(p.grad if p.grad is not None else torch.zeros_like(p)).reshape(-1) for p in self.params]
        flags = torch.tensor([float(p.grad is not None) for p in self.params] + [loss], device=self.device)
        return torch.cat(grads + [flags.to(grads[0].dtype)])

    def _apply(self, flat: torch.Tensor) -> float:
        offset = 0
        n = len(self.params)
        flags = flat[-n - 1:-1]
        for i, p in enumerate(self.params):
            k = p.numel()
            p.grad = flat[offset:offset + k].view_as(p).clone() if flags[i] > 0 else None
            offset += k
        return float(flat[-1])

    def _reduce(self, local: float) -> float:
        """All-reduce the step's gradients and loss, put the gradients' sum in ``.grad`` and return the
        loss's. Stale: the loss is reduced at once (the step reports its own loss), the gradients'
        all-reduce is started and ``.grad`` gets the previous step's sum instead (none at the first
        step, which then updates nothing)."""
        ex = self.executor
        if not self.stale:
            future = ex.submit(self.comm.all_reduce, self._flat(local), "grad_all_reduce")
            with section("communication"):
                return self._apply(future.result())
        # the loss first: the communication thread runs in order, so it does not wait on the gradients
        loss = ex.submit(self.comm.all_reduce, torch.tensor([local], dtype=self.params[0].dtype,
                                                             device=self.device), "loss_all_reduce")
        previous, self._stale_future = self._stale_future, ex.submit(self.comm.all_reduce, self._flat(0.0),
                                                                     "grad_all_reduce")
        with section("communication"):
            if previous is None:
                for p in self.params:
                    p.grad = None
            else:
                self._apply(previous.result())
            return float(loss.result()[0])

    def _drain(self) -> None:
        """Wait for the stale all-reduce in flight (before a collective of the training thread); its
        sum stays for the next step."""
        if self._stale_future is not None:
            self._stale_future.result()

    def _decide(self) -> None:
        """Adaptive m: once every candidate ran its probe steps, keep the fastest (the sum of the
        workers' second-step times, all-reduced, so every worker keeps the same)."""
        measured = [c for c in ADAPTIVE_CHOICES if len(self._probe.get(c, [])) >= PROBE_STEPS]
        steps_left = len(self.task.split.train) - self._step - 1
        if len(measured) < len(ADAPTIVE_CHOICES) and steps_left > 0:
            return
        if not measured:
            measured = list(self._probe)
        times = torch.tensor([self._probe[c][-1] for c in measured], dtype=torch.float64, device=self.memory.wire)
        times = self.executor.submit(self.comm.all_reduce, times, "adaptive").result().cpu()
        self.m = measured[int(torch.argmin(times))]
        self._decided = True
        self._schedule(self.task.split.train[self._step + 1:])

    def epoch_metrics(self, epoch: int, seconds: float) -> dict[str, float]:
        self._drain()
        self.prefetch.close()
        return {"micro_batches": float(self.m), "batches": float(self.batches)}

    # ---- evaluation -----------------------------------------------------------------------------
    @torch.no_grad()
    def _pass(self, split: str, events: np.ndarray, inductive: bool = False, score: bool = True):
        """Collective: score ``events`` of ``split`` batch by batch, each worker its share, writing
        memory and mails after each; (positives [n], negatives [n, K]) in event order, on every worker."""
        self._drain()
        b, k = self.task.batch_size, self.task.eval_negatives
        parts = []
        for i in range(0, events.size, b):
            ev = events[i:i + b]
            neg = (self.task.eval_negatives_of(split, ev, inductive) if score
                   else np.zeros((ev.size, 0), dtype=np.int64))
            sampler = self.full_sampler if score or split != "train" else self.train_sampler
            with section("sample"):
                share = self._share(ev, neg, sampler, 1)
            piece = share.pieces[0]
            got = self.executor.submit(self._rows, piece).result()
            if self.mode == "depcomm":
                got = got[0]
            out = None
            if piece.batch is not None:
                pos, negs, out = self._score(piece.batch, got)
                mine = np.flatnonzero(self.owner[self.task.src[ev]] == self.rank)
                if score:
                    parts.append((i + mine, pos.cpu().numpy(), negs.cpu().numpy()))
            self.executor.submit(self._push, out).result()
            with section("mailbox"):
                self.memory.commit()
        if not score:
            return None
        gathered = [p for worker in self.comm.all_gather_object(parts) for p in worker]
        if not gathered:
            return np.zeros(0), np.zeros((0, k))
        where = np.concatenate([g[0] for g in gathered])
        order = np.argsort(where, kind="stable")
        return np.concatenate([g[1] for g in gathered])[order], np.concatenate([g[2] for g in gathered])[order]

    @torch.no_grad()
    def replay(self, units) -> None:
        """Collective: run the events of ``units`` through the memory without scoring them."""
        self.after_step()
        self.model.eval()
        for unit in units:
            split, events = self.task.unit_events(unit)
            self._pass(split, events, score=False)


class TGNNDepComm(TGNNStrategy):
    """DepComm (NeutronStar, Sven's baseline): per-occurrence fetch of the owner-updated memory."""

    name = "tgnn_depcomm"
    baseline_of = "tgnn"
    mode = "depcomm"


class TGNNDepCache(TGNNStrategy):
    """DepCache (NeutronStar, Sven's baseline): the memory on every worker, writes all-gathered."""

    name = "tgnn_depcache"
    baseline_of = "tgnn"
    mode = "depcache"


class TGNNHash(TGNNStrategy):
    """Sven with the memory rows hashed to workers (a partitioner baseline, beside tgnn in a workflow)."""

    name = "tgnn_hash"
    baseline_of = "tgnn"
    fixed = {"memory_partitioner": "hash"}


class TGNNRange(TGNNStrategy):
    """Sven with the memory rows split by id ranges (DGL's; a partitioner baseline)."""

    name = "tgnn_range"
    baseline_of = "tgnn"
    fixed = {"memory_partitioner": "range"}
