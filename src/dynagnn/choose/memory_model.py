"""The peak memory of a training run, per process: predicted by a model of named terms, and measured
(issue 30: the ``--strategy auto`` chooser drops the candidates that would not fit).

:func:`predict_peak_bytes` returns the bytes a run's largest process holds at its peak above its
start (after imports, before the :class:`~dynagnn.train.engine.Trainer` is built), as the sum of
:func:`memory_terms`, each a small function below:

- ``data``: what a training process keeps of the store (:func:`data_bytes`), counted from the
  arrays the strategies actually keep, at their dtypes;
- ``task``: the link task's per-target caches of the training windows (:func:`task_bytes`);
- ``parameters``: model + head weights, their gradients and Adam's two moments (:func:`parameter_bytes`);
- ``activations``: what one training step keeps for its backward pass, MEASURED by running the
  run's model at its widths on one representative snapshot (and the task's head on its embeddings),
  on the run's GPU where the process has one (:func:`measuring_device`), else on the CPU,
  under :func:`torch.autograd.graph.saved_tensors_hooks` (:func:`saved_bytes`: a large host buffer
  counted by its resident pages), then scaled by the snapshots a step holds at once
  (:func:`activation_bytes`); PiPAD's frames measured through the frame engine over a whole window
  or carried piece (:func:`measured_frames`);
- ``backward``: the gradients in flight during the backward pass (:func:`backward_bytes`),
  ESTIMATED from the measured activations (module constant :data:`BACKWARD_SHARE`);
- ``load``: the transients of loading the snapshots or the event stream, freed but kept by the heap
  (:func:`load_bytes`, ESTIMATED per stored edge or event, :data:`LOAD_BYTES_PER_EDGE`,
  :data:`LOAD_BYTES_PER_EVENT`);
- ``allocator``: what the heap keeps above a step's live peak (:func:`allocator_bytes`, ESTIMATED,
  :data:`ALLOCATOR_SLACK`);
- ``strategy``: what a strategy adds of its own (:func:`strategy_bytes`): PiPAD's frames (the reuse
  cache of ``Â_t X_t``, the frame's partitions and stacked aggregations), BGL's cache levels (``Strategy.held_bytes``), the
  event models' memory and mailbox (those are counted from the arrays their strategy builds);
- ``workspace``: on a GPU, the CUDA libraries' workspaces (:func:`cuda_workspace_bytes`, MEASURED
  once per process); 0 on a CPU.

What is left out, on purpose: evaluation (the link task's fixed evaluation negatives and the
gathered embeddings of the validation and test windows, the same for every strategy of a run); the
live bytes after a step (glibc keeps freed memory with :func:`dynagnn.allocator.keep_freed_heap`,
which every trainer sets, so a process's resident memory stays at its high-water mark: the model
predicts that mark, hence the ``load`` and ``allocator`` terms); and the one-off loading of modules and kernels
(torch's compiler stack that a fused Adam imports, the schema checker), which
:func:`measure_peak_bytes` loads before it reads its start.

:func:`measure_peak_bytes` measures the same quantity in a fresh spawned process: the resident set's
high-water mark (VmHWM) above its start, or on a GPU the allocator's peak above what was allocated.

On a GPU the terms are the device's (``max_memory_allocated``): the feeder's resident copies and the
features there (:func:`device_data_bytes`), the parameters, a step's tensors (counted at their
allocated size), the strategy's device arrays (the frames' device cache and partitions, BGL's first
level, the event models' memory, mailbox and edge features) and the libraries' workspaces; the
host's snapshots, the load's transients, the heap's slack and the task's host arrays are left out.
The host-only model it replaces predicted 0.48-1.91x the measured peak of auto's picks on an H200
(issue 30's first GPU run, docs/benchmarks.md#auto), with a step's activations measured on the CPU;
these device terms, and the activations measured on the device, are written from that run's findings
and tested on a CPU for what they count, and have not yet run on a GPU.
"""

from __future__ import annotations

import math

import numpy as np
import torch

from dynagnn.choose.memory_measure import (_gpu, _nnz, cuda_workspace_bytes, measured_frames, measured_snapshot,
                                          measuring_device, saved_bytes)

MiB = 2 ** 20
FLOAT = 4           # float32
INDEX = 8           # int64
#: the gradients in flight during a backward pass, as a share of the step's saved activations: the
#: gradient of each saved tensor lives while its producer's backward runs, and a GRU/LSTM cell's
#: backward holds its gates' gradients together, beside the step's host temporaries (the link task's
#: negative sampling). ESTIMATED: on CPU, T-GCN at N = 1,000-4,000, hidden 64, the live bytes'
#: peak during a step (glibc's mallinfo2 read after every operator) was 1.9-2.0 x the saved bytes.
BACKWARD_SHARE = 1.0
#: the resident memory a step's live peak costs, as a multiple of it: glibc serves a step's blocks
#: from the heap, which :func:`dynagnn.allocator.keep_freed_heap` never trims, and the blocks a step
#: frees do not fit the next ones' holes exactly, so the heap's high-water mark (what the resident
#: set keeps) exceeds the live peak. ESTIMATED: 1.85-2.1 measured on T-GCN (the ratio of the resident
#: growth over three steps to the live peak).
ALLOCATOR_SLACK = 2.0
#: the load's transient bytes per stored edge (the store's decompressed int32 chunks, their int64
#: copies, the self-looped and sorted triples :func:`~dynagnn.train.transfer.load_host_snapshots`
#: builds): freed after the load but kept by the heap. ESTIMATED from the resident memory after the
#: trainer is built less the counted data (44-61 bytes per stored edge on the churn stores).
LOAD_BYTES_PER_EDGE = 48.0
#: the event models' load transients per event of the stream (the stream read and sorted, the two
#: temporal-neighbour samplers built, the task's splits and negative pools): freed after the trainer is
#: built but kept by the heap. ESTIMATED from the resident memory after the trainer is built less the
#: counted data on CollegeMsg's 59,835 events: 9.5, 11.3 and 10.6 MiB for TGN, JODIE and APAN
#: (166-198 bytes per event).
LOAD_BYTES_PER_EVENT = 180.0
#: the resident memory a carried sequence's held activations cost, as a multiple of them: a carried
#: piece keeps every snapshot's saved tensors (and its embedding's gradient) until its one backward,
#: allocated once in forward order rather than churned step after step, so the heap keeps less above
#: them than :data:`ALLOCATOR_SLACK` above a window's. ESTIMATED from one epoch's peak of the
#: sequential loop on the benchmark's carried sequences (england_covid T-GCN ``x``, twitter_tennis
#: MPNN-LSTM and EvolveGCN-O): 1.2-1.75 x the held bytes above the data.
CARRY_SLACK = 1.5


# ---- the activations, measured ------------------------------------------------------------------

def _frames(config) -> bool:
    from dynagnn.train.strategies.frames import runs_frames

    return runs_frames(config.strategy_cls)


def feature_bytes(store, config) -> float:
    """The node features as the trainer holds them: float32 N x F (T x N x F when per snapshot), read
    once from the store, and for static features the feeder's device copy (on a CPU a clone)."""
    shape = store.root["features/x"].shape if store.has("features/x") else (store.num_nodes, store.feature_dim())
    one = float(np.prod(shape, dtype=np.float64)) * FLOAT
    static = len(shape) == 2
    return one * (2.0 if static else 1.0)


def adjacency_bytes(store, config) -> float:
    """Every snapshot's Â_t on the host (sorted int64 keys, float32 values, int64 row offsets: the
    :class:`~dynagnn.train.transfer.HostSnapshot` every snapshot strategy loads), plus the feeder's
    resident copies (int64 row offsets and columns, float32 values) of the snapshots an epoch's
    windows read; the feeder keeps every snapshot it was asked for unless ``checkpoint_blocks``
    bounds it to a block. A worker of several keeps its share of the resident copies."""
    n = int(store.num_nodes)
    nnz = _nnz(store)
    host = float((nnz * (INDEX + FLOAT)).sum() + len(nnz) * INDEX * (n + 1))
    return host + resident_adjacency_bytes(store, config)


def resident_adjacency_bytes(store, config) -> float:
    """The feeder's resident copies (int64 row offsets and columns, float32 values) of the snapshots
    an epoch's windows read, on the training device: every snapshot it was asked for unless
    ``checkpoint_blocks`` bounds it to a block (the graph difference keeps each copy's int64 keys
    too); a worker of several keeps its share."""
    n = int(store.num_nodes)
    nnz = _nnz(store)
    diff = getattr(config.options, "transfer", "full") == "diff"
    per = nnz * (INDEX + FLOAT + (INDEX if diff else 0)) + INDEX * (n + 1)
    blocks = int(getattr(config.options, "checkpoint_blocks", 1) or 1)
    if blocks > 1:
        resident = float(np.sort(per)[::-1][: math.ceil(config.window / blocks) + 1].sum())
    else:
        resident = float(per.sum())
    if config.strategy_cls.divides:
        resident /= max(1, int(config.workers))
    return resident


def data_bytes(store, config) -> float:
    """What a training process keeps of the store: :func:`feature_bytes` + :func:`adjacency_bytes`
    (counted; the event models' stream is :func:`event_bytes`)."""
    if "event" in config.strategy_cls.models or "sampled" in config.strategy_cls.models:
        return 0.0
    return feature_bytes(store, config) + adjacency_bytes(store, config)


def task_bytes(store, config) -> float:
    """The link task's caches of the training targets t+1 (int64 keys of every stored edge, both
    directions, and of the positives, u < v), counted; 0 for the node tasks (the labels are read
    per step). The loss inputs of a step are in the measured head activations."""
    from dynagnn.tasks.snapshot import infer_task

    if "snapshot" not in config.strategy_cls.models and "stacked" not in config.strategy_cls.models:
        return 0.0
    task = infer_task(store) if config.task == "auto" else config.task
    if task != "link":
        return 0.0
    stored = np.diff(store.offsets)
    targets = stored[1:]   # a window ending at t predicts t+1
    train = targets[: max(1, int(0.7 * len(targets)))]
    return float(train.sum()) * INDEX * 1.5


def parameter_bytes(store, config, model: torch.nn.Module | None = None, head: torch.nn.Module | None = None) -> float:
    """Model + head parameters, their gradients and Adam's two moments (exp_avg, exp_avg_sq): 4 x
    the parameters' bytes (counted from the run's model at its widths)."""
    if model is None:
        model, head = _model_and_head(store, config)
    params = list(model.parameters()) + list(head.parameters())
    return 4.0 * sum(p.numel() * p.element_size() for p in params)


def _model_and_head(store, config):
    strategy = config.strategy_cls(config)
    if "event" in strategy.models:
        from dynagnn.models.heads import LinkPredictor

        model = strategy.build_model(strategy.input_dim(store), store.num_nodes)
        return model, LinkPredictor(model.out_dim)
    task = strategy.make_task(store)[0]
    model = strategy.build_model(strategy.input_dim(store))
    return model, task.head(model.out_dim)


def step_snapshots(config, window: int) -> dict[str, float]:
    """How many snapshots' activations a step holds at once, per process: a step of B windows
    back-propagates each window before the next (so B does not multiply); ``checkpoint_blocks`` b
    keeps one block of ceil(l / b) snapshots plus the b block boundary states; ``tbptt`` does not cut
    what is kept (the whole window is back-propagated at once). A strategy that splits the vertices
    divides every snapshot's activations among its workers; one that splits the snapshots gives each
    worker its share of the window (and B windows spread over the workers)."""
    o = config.options
    blocks = int(getattr(o, "checkpoint_blocks", 1) or 1)
    blocks = max(1, min(blocks, window))
    per = math.ceil(window / blocks) if blocks > 1 else window
    workers = max(1, int(config.workers))
    split = config.strategy_cls.divides
    scale = 1.0 / workers if split == "vertices" else 1.0
    if split == "snapshots":
        per = math.ceil(per / workers) if int(config.batch_windows) < workers else per
    return {"snapshots": float(per) * scale, "boundaries": float(blocks if blocks > 1 else 0) * scale}


def activation_bytes(store, config, measured: dict | None = None) -> float:
    """The activations one step keeps for its backward pass: the measured per-snapshot saved bytes
    (:func:`measured_snapshot`) times the snapshots a step holds (:func:`step_snapshots`), the block
    boundary states under checkpointing, the recomputed block's output, the head's saved bytes of
    one loss (each head's backward runs as its loss is computed; every worker computes the full loss
    where the vertices are split) and the gradient of each embedding whose loss the step holds (one
    in a window, every snapshot's in a carried piece)."""
    m = measured or measured_snapshot(store, config)
    s = step_snapshots(config, int(m["window"]))
    losses = m.get("losses", 1)
    return _model_saved(m, s) + s["boundaries"] * m["state"] + m["head"] + losses * m["embedding"]


def _model_saved(m: dict, s: dict) -> float:
    """The model's saved bytes of the snapshots a step holds: the frames' own measurement where there
    is one (:func:`measured_frames`, of a whole window or piece, scaled to the share of it a process
    holds), else the snapshots times one snapshot's."""
    if "frames" in m:
        return m["frames"] * s["snapshots"] / max(1, int(m["window"]))
    return s["snapshots"] * m["step"]


def backward_bytes(store, config, measured: dict | None = None) -> float:
    """The gradients in flight during the backward pass: :data:`BACKWARD_SHARE` of the model's
    activations of one step plus the head's (ESTIMATED; module docstring of the constant); in a
    carried sequence, of one snapshot's: its backward runs through the held snapshots one by one,
    each freeing its saved tensors as the next one's gradients are made."""
    m = measured or measured_snapshot(store, config)
    s = step_snapshots(config, int(m["window"]))
    if m.get("carry"):   # one snapshot's backward at a time; in frames, one frame's
        frame = min(int(getattr(config.options, "frame_size", None) or 1), int(m["window"]))
        held = _model_saved(m, {"snapshots": float(frame)}) if "frames" in m else m["step"]
    else:
        held = _model_saved(m, s)
    return BACKWARD_SHARE * (held + m["head"])


def frames_bytes(store, config, measured: dict | None = None, model: torch.nn.Module | None = None) -> float:
    """PiPAD's frames (frames, group_frames), COUNTED where the engine allocates fixed arrays and
    ESTIMATED for the frame's working set: the reuse cache of Â_t X_t (float32 T x N x F, when
    ``frame_reuse`` is on and the model's first aggregation reads X alone: ``"ax"`` in its
    ``frame_needs``, as :class:`~dynagnn.train.frame_engine.FrameEngine` decides); a second
    sequential feeder's static features and the engine's own copy (2 x N x F); every snapshot's raw
    triples (:class:`~dynagnn.graph.overlap.RawSnapshot`: int64 keys and float32 weights of Â's
    entries, self-loops included, and float64 D^-1/2 per vertex; host memory, left out on a GPU);
    the partitions the epoch's frames build and keep (:func:`built_partitions`; at the bytes per nnz
    of their snapshots :func:`measured_frames` counted, else 12: on a CPU the host's, on a GPU their
    device copies); and the frame's stacked
    aggregations, S snapshots' [N, F] inputs and [N, H] outputs at once (``frame_size`` S, at most
    the window or the carried piece; the span when the tuner decides)."""
    o = config.options
    n, T = int(store.num_nodes), int(store.num_snapshots)
    f = int(store.feature_dim())
    window = int(config.window)
    measured = measured or measured_snapshot(store, config)
    span = int(measured.get("window") or window) if measured.get("carry") else window
    S = min(int(o.frame_size or span), span)
    nnz = _nnz(store)
    if model is None:
        model = _model_and_head(store, config)[0]
    from dynagnn.train.frame_engine import reuses_ax

    needs = set(model.frame_needs()) if hasattr(model, "frame_needs") else {"x", "adjs"}
    reused = reuses_ax(needs, getattr(o, "frame_reuse", "on") == "on")
    reuse = T * n * f * FLOAT if reused else 0.0
    copies = 2.0 * n * f * FLOAT
    raws = 0.0 if _gpu(config) else float(nnz.sum()) * (INDEX + FLOAT) + T * n * 8.0
    per_nnz = measured.get("partition_bytes_per_nnz") or 12.0
    parts = per_nnz * float(sum(nnz[a:a + size].sum() for a, size in
                                built_partitions(measured, window, S, needs, reused, measured.get("s_per"))))
    stacked = S * n * (f + int(config.hidden)) * FLOAT
    return reuse + copies + raws + parts + stacked


def built_partitions(measured: dict, window: int, S: int, needs: set[str], reused: bool,
                     s_per: int | None = None) -> set[tuple[int, int]]:
    """(first snapshot, size) of each frame partition an epoch's frames build and keep, COUNTED from
    the epoch's ranges (``measured``'s ``ends``: a window ending at each, or a carried sequence's
    tbptt pieces) cut into frames of S as the engine cuts them, and each frame into partitions of
    ``s_per`` (the tuner's cut, :func:`measured_frames`; S where None), the partitions of
    overlapping windows' frames built once: every frame of several snapshots where
    the model reads partitions (:func:`~dynagnn.train.frame_engine.partitions_matter`: sliding
    windows make a frame, and a partition, per window); where only the reused ``Â X`` is read, the
    frames whose every entry is missing when they run (the first epoch's disjoint frames of a
    carried sequence; of sliding windows, about the first). Empty where no partition is read."""
    from dynagnn.train.frame_engine import partitions_matter

    ends = [int(e) for e in measured.get("ends", [])]
    if measured.get("carry"):
        k = int(measured.get("window") or len(ends)) or 1
        ranges = [ends[i:i + k] for i in range(0, len(ends), k)]
    else:
        ranges = [list(range(max(0, e - window + 1), e + 1)) for e in ends]
    every = partitions_matter(needs, reused)
    if not every and "ax" not in needs:
        return set()
    keys, seen = set(), set()
    for ts in ranges:
        for a in range(ts[0], ts[-1] + 1, S) if ts else ():
            size = min(S, ts[-1] + 1 - a)
            frame = set(range(a, a + size))
            if size > 1 and (every or not frame & seen):
                per = max(1, min(int(s_per or size), size))
                keys.update((b, min(per, a + size - b)) for b in range(a, a + size, per))
            seen |= frame
    return keys


def _events_class():
    """The event models' plain one-process loop (the registry's, :func:`~dynagnn.choose.candidates.plain_name`)."""
    from dynagnn.choose.candidates import plain_name, strategy_of

    return strategy_of(plain_name("event"))


def event_bytes(store, config) -> dict[str, float]:
    """The event models' data, COUNTED from the arrays their strategy builds (its ``prepare`` and
    ``setup`` in this process): the event stream and its edge features, the task's arrays, the two
    temporal-neighbour samplers, the node memory and mailbox (N x dims), the model; and one
    training batch's activations MEASURED under the saved-tensor hooks (the batch's loss inputs and
    sampled neighbourhoods included). Returns {"data", "memory", "activations"}. Sven's strategies
    (tgnn) are counted as the one-worker events strategy with the same event options, the memory and
    mailbox and a batch's activations split among the workers (each owns its share of the vertices
    and trains the events whose source it owns; ESTIMATED: an even split)."""
    from dynagnn.distributed.comm import Comm
    from dynagnn.distributed.context import DistContext
    from dynagnn.timing import PhaseTimer

    if config.strategy_cls is not _events_class():
        from dynagnn.choose.trials import candidate_config

        keys = {k: getattr(config.options, k) for k in config.options.declared()
                if k in _events_class().Options.declared()}
        one = event_bytes(store, candidate_config(config, _events_class().name, 1, config.threads or 1, keys))
        workers = max(1, int(config.workers))
        return {**one, "memory": one["memory"] / workers, "activations": one["activations"] / workers}

    strategy = config.strategy_cls(config)
    ctx = DistContext.single(measuring_device(config))
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(config.seed)
        run = strategy.prepare(store, ctx, Comm(ctx), PhaseTimer("cpu"))
        strategy.setup(run)
    try:
        memory = sum(t.numel() * t.element_size() for t in strategy.memory.state().values())
        data = _array_bytes(run.task) + _array_bytes(strategy.train_sampler) + _array_bytes(strategy.full_sampler)
        data += 0 if run.features is None else float(np.asarray(run.features).nbytes) * 2
        strategy.start_epoch(0)
        unit = run.task.split.train[len(run.task.split.train) // 2]
        batch = strategy.training_batch(unit)
        params = tuple(run.model.parameters()) + tuple(run.head.parameters())
        mem_tensors = tuple(strategy.memory.state().values())
        acts, _ = saved_bytes(lambda: strategy.score_batch(batch), params + mem_tensors, resident=not _gpu(config))
        acts += _array_bytes(batch)
    finally:
        strategy.close()
    features = 0.0 if run.features is None else float(np.asarray(run.features).nbytes)
    return {"data": float(data), "memory": float(memory), "activations": float(acts), "features": features}


def _array_bytes(obj, depth: int = 2) -> float:
    """The bytes of the numpy arrays and tensors among ``obj``'s attributes (and theirs, ``depth``
    levels down; each buffer once)."""
    seen: set[int] = set()

    def walk(o, d):
        total = 0.0
        values = list(vars(o).values()) if hasattr(o, "__dict__") else []
        if hasattr(o, "__slots__"):
            values += [getattr(o, s, None) for s in o.__slots__]
        for v in values:
            if isinstance(v, np.ndarray):
                base = v if v.base is None else v.base
                if id(base) not in seen and isinstance(base, np.ndarray):
                    seen.add(id(base))
                    total += base.nbytes
            elif isinstance(v, torch.Tensor) and v.layout == torch.strided:
                ptr = v.untyped_storage().data_ptr()
                if ptr not in seen:
                    seen.add(ptr)
                    total += v.untyped_storage().nbytes()
            elif isinstance(v, (list, tuple, dict)):
                items = v.values() if isinstance(v, dict) else v
                for x in list(items)[:100000]:
                    if isinstance(x, np.ndarray) and id(x) not in seen:
                        seen.add(id(x))
                        total += x.nbytes
            elif d > 0 and hasattr(v, "__dict__") and not isinstance(v, (torch.nn.Module, type)):
                total += walk(v, d - 1)
        return total

    return walk(obj, depth)


def strategy_bytes(store, config, measured: dict | None = None, model: torch.nn.Module | None = None) -> float:
    """What the strategy adds of its own: :func:`frames_bytes` where it runs PiPAD's frames, else what
    it says it holds (``Strategy.held_bytes``: BGL's cache levels; the event models' terms are
    :func:`event_bytes`)."""
    if _frames(config):
        return frames_bytes(store, config, measured, model)
    return float(config.strategy_cls.held_bytes(store, config.options, _gpu(config)))


def load_bytes(store, config) -> float:
    """The load's transients, kept by the heap: :data:`LOAD_BYTES_PER_EDGE` per stored edge of every
    snapshot (every snapshot strategy's process loads them all), :data:`LOAD_BYTES_PER_EVENT` per
    event of the stream for the event models (ESTIMATED); 0 for the sampled strategies."""
    models = config.strategy_cls.models
    if "event" in models:
        return LOAD_BYTES_PER_EVENT * float(store.root["events/src"].shape[0]) if store.has("events/src") else 0.0
    if "snapshot" not in models and "stacked" not in models:
        return 0.0
    return LOAD_BYTES_PER_EDGE * float(store.offsets[-1])


def allocator_bytes(activations: float, backward: float, carry: bool = False) -> float:
    """What the heap keeps above a step's live peak (``activations`` + ``backward``):
    (:data:`ALLOCATOR_SLACK` - 1) x it; in a carried sequence (:data:`CARRY_SLACK` - 1) x the held
    activations and (:data:`ALLOCATOR_SLACK` - 1) x the backward's (ESTIMATED)."""
    if carry:
        return (CARRY_SLACK - 1.0) * activations + (ALLOCATOR_SLACK - 1.0) * backward
    return (ALLOCATOR_SLACK - 1.0) * (activations + backward)


def _measurement_key(config, *option_names: str) -> tuple:
    """What a measurement of the run's model depends on among a candidate's keys: its strategy (which
    builds the model and the task), the device and the named options; not its workers, threads,
    checkpoint blocks or transfer, which the terms scale by."""
    o = config.options
    return (config.strategy, str(config.device)) + tuple(getattr(o, k, None) for k in option_names)


def memory_terms(store, config, memo: dict | None = None, frames: bool = True) -> dict[str, float]:
    """Each term of :func:`predict_peak_bytes` in bytes, by name (module docstring), for the largest
    process of the run. ``memo``: a dict shared by the predictions of one run's candidates, which
    keeps each measurement (:func:`measured_snapshot`, :func:`measured_frames`) for the candidates
    that differ only in what the terms scale by (:func:`_measurement_key`): measured once per
    candidate, they were 2 of a resolve's 12 s on CollegeMsg daily. ``frames`` False: the frames'
    own measurement (1 s of a short run's 2 s choice) left out, their activations the one-snapshot
    measurement's times the snapshots held, as the plain loop's (a bound the short path checks with a
    margin, :func:`dynagnn.choose.resolve.short_choice`)."""
    memo = {} if memo is None else memo
    model, head = _model_and_head(store, config)
    params = parameter_bytes(store, config, model, head)
    gpu = _gpu(config)
    if "event" in config.strategy_cls.models:
        ev = event_bytes(store, config)
        acts = ev["activations"]
        back = BACKWARD_SHARE * acts
        if gpu:   # the edge features, the memory and mailbox on the device; the stream and samplers on the host
            return {"data": ev["features"], "task": 0.0, "load": 0.0, "parameters": params, "activations": acts,
                    "backward": back, "allocator": 0.0, "strategy": ev["memory"],
                    "workspace": cuda_workspace_bytes(config.device)}
        return {"data": ev["data"], "task": 0.0, "load": load_bytes(store, config), "parameters": params, "activations": acts,
                "backward": back, "allocator": allocator_bytes(acts, back), "strategy": ev["memory"], "workspace": 0.0}
    key = ("snapshot",) + _measurement_key(config, "tbptt")
    if key not in memo:
        memo[key] = measured_snapshot(store, config)
    m = dict(memo[key])
    if _frames(config) and frames:
        fkey = ("frames",) + _measurement_key(config, "tbptt", "frame_size", "frame_reuse")
        if fkey not in memo:
            memo[fkey] = measured_frames(store, config, m)
        m.update(memo[fkey])
    acts, back = activation_bytes(store, config, m), backward_bytes(store, config, m)
    if gpu:
        return {"data": device_data_bytes(store, config, m), "task": 0.0, "load": 0.0, "parameters": params,
                "activations": acts, "backward": back, "allocator": 0.0,
                "strategy": strategy_bytes(store, config, m, model), "workspace": cuda_workspace_bytes(config.device)}
    return {"data": data_bytes(store, config), "task": task_bytes(store, config), "load": load_bytes(store, config),
            "parameters": params, "activations": acts, "backward": back,
            "allocator": allocator_bytes(acts, back, bool(m.get("carry"))),
            "strategy": strategy_bytes(store, config, m, model), "workspace": 0.0}


def device_data_bytes(store, config, measured: dict) -> float:
    """What a training process keeps of the store on a GPU: the feeder's resident copies
    (:func:`resident_adjacency_bytes`) and the node features there: static ones once (the feeder's
    copy), per-snapshot ones sent with each step's snapshots (a window's, or a carried piece's), freed
    after it."""
    if "event" in config.strategy_cls.models or "sampled" in config.strategy_cls.models:
        return 0.0   # the event models' and BGL's device arrays are their strategy's terms
    shape = store.root["features/x"].shape if store.has("features/x") else (store.num_nodes, store.feature_dim())
    one = float(store.num_nodes) * float(shape[-1]) * FLOAT
    per_step = one if len(shape) == 2 else one * int(measured.get("window") or config.window)
    if _frames(config) and len(shape) == 2:
        per_step = 0.0   # the frame engine's static copies are :func:`frames_bytes`' (it has no other feeder)
    return resident_adjacency_bytes(store, config) + per_step


def predict_peak_bytes(store, config, memo: dict | None = None, frames: bool = True) -> float:
    """The predicted peak bytes above a process's start (after imports, before the trainer is built)
    of training ``config`` (a candidate's :class:`~dynagnn.train.run_config.TrainConfig`) on
    ``store`` (an opened :class:`~dynagnn.data.store.SnapshotStore`), for the run's largest process:
    the sum of :func:`memory_terms` (``memo``: its measurements shared by one run's candidates;
    ``frames`` False: PiPAD's frames not measured, their activations ESTIMATED as the plain loop's)."""
    return float(sum(memory_terms(store, config, memo, frames).values()))


# ---- the measurement ----------------------------------------------------------------------------


__all__ = ["ALLOCATOR_SLACK", "BACKWARD_SHARE", "LOAD_BYTES_PER_EDGE", "LOAD_BYTES_PER_EVENT", "built_partitions",
           "cuda_workspace_bytes", "device_data_bytes", "resident_adjacency_bytes", "allocator_bytes", "load_bytes",
           "activation_bytes", "backward_bytes", "data_bytes", "event_bytes", "frames_bytes", "memory_terms",
           "parameter_bytes", "predict_peak_bytes", "step_snapshots", "strategy_bytes", "task_bytes"]
