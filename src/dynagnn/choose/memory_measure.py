"""The peak memory of a training process, measured: a step's saved tensors counted as they are
saved (:func:`saved_bytes`), a snapshot's and a frame's activations measured on the run's model
(:func:`measured_snapshot`, :func:`measured_frames`), which :mod:`dynagnn.choose.memory_model`'s
prediction scales, and a whole candidate's peak measured in a fresh process
(:func:`measure_peak_bytes`), which the prediction is tested against."""

from __future__ import annotations

import gc
import multiprocessing
import queue as queue_mod
import resource
import traceback
from typing import Callable

import numpy as np
import torch

# ---- the activations, measured ------------------------------------------------------------------

def _storages(t: torch.Tensor) -> list[tuple[int, int]]:
    """(data pointer, bytes) of each storage behind ``t`` (a sparse tensor's index and value arrays)."""
    if t.layout == torch.sparse_csr:
        parts = (t.crow_indices(), t.col_indices(), t.values())
    elif t.layout == torch.sparse_coo:
        parts = (t._indices(), t._values())
    else:
        parts = (t,)
    out = []
    for p in parts:
        try:
            st = p.untyped_storage()
        except (RuntimeError, NotImplementedError):
            continue
        out.append((st.data_ptr(), st.nbytes()))
    return out


def resident_bytes(ptr: int, nbytes: int) -> int:
    """The bytes of the host range [ptr, ptr + nbytes) in resident pages (``mincore``), at most
    ``nbytes``; ``nbytes`` where the system cannot say. A buffer's allocated size is not what it
    costs the resident set: oneDNN's LSTM saves a workspace sized for its worst case (43 MB for 16
    steps of 1,000 vertices at hidden 32, CPU) of which a forward touched 10-25 MB."""
    import ctypes
    import os

    from dynagnn.allocator import glibc

    libc = glibc()
    if libc is None:
        return nbytes
    page = os.sysconf("SC_PAGE_SIZE")
    start = ptr - ptr % page
    length = ptr + nbytes - start
    vec = (ctypes.c_ubyte * ((length + page - 1) // page))()
    if libc.mincore(ctypes.c_void_p(start), ctypes.c_size_t(length), vec) != 0:
        return nbytes
    return min(nbytes, int(np.count_nonzero(np.frombuffer(vec, dtype=np.uint8) & 1)) * page)


#: saved storages at least this large are counted by their resident pages (:func:`resident_bytes`)
RESIDENT_CHECK_BYTES = 1 << 20


def saved_bytes(fn: Callable[[], object], exclude: tuple[torch.Tensor, ...] = (),
                skip: set[int] = frozenset(), resident: bool = True) -> tuple[int, object]:
    """(the bytes of the distinct storages autograd saves for the backward pass while ``fn()`` runs,
    ``fn``'s result). Storages of ``exclude`` (parameters, the resident data: counted by other
    terms) and the data pointers in ``skip`` are not counted; a storage saved twice counts once; a
    large one on the host counts its resident pages (:func:`resident_bytes`), read after ``fn()``,
    where ``resident`` (a prediction for the host; a GPU's allocator counts what it allocates)."""
    skip = set(skip) | {ptr for t in exclude for ptr, _ in _storages(t)}
    seen: dict[int, tuple[int, bool]] = {}

    def pack(t: torch.Tensor) -> torch.Tensor:
        for ptr, nbytes in _storages(t):
            if ptr not in skip and nbytes:
                seen[ptr] = (nbytes, t.device.type == "cpu")
        return t

    if resident:   # the heap's free pages released: what is resident after fn() is what it touched
        from dynagnn.allocator import release_freed_pages

        release_freed_pages()
    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        out = fn()
    total = sum(resident_bytes(ptr, nb) if resident and host and nb >= RESIDENT_CHECK_BYTES else nb
                for ptr, (nb, host) in seen.items())
    return total, out


def _representative(store, ts: list[int]) -> int:
    """The snapshot of ``ts`` with the median edge count (the activations' representative)."""
    nnz = np.diff(store.offsets)[ts]
    return int(ts[int(np.argsort(nnz, kind="stable")[len(ts) // 2])])


def measured_snapshot(store, config) -> dict[str, float]:
    """One snapshot's activations, measured: the run's model (the strategy's build path, at the run's
    widths, its seed) steps through snapshot t-1 and then t, the representative training target
    (median edge count), and the saved bytes of the step at t are ``step``; the task's head scores t
    from that embedding (``head``, its loss inputs included); ``state``: the bytes of the recurrent
    state a step hands on (a checkpoint block's boundary). Returns {"step", "head", "state", "t",
    "window": the snapshots a step back-propagates at once (a carried sequence's, or its tbptt piece),
    "ends": the training windows' last snapshots, "losses": the embeddings whose loss gradient it holds until its backward (every snapshot's in a
    carried sequence, :func:`~dynagnn.train.strategies.base.head_backwards`), "carry": whether it is
    a carried sequence}."""
    from dynagnn.train.transfer import SnapshotFeeder, host_snapshot

    strategy = config.strategy_cls(config)
    task, split, sequence, window = strategy.make_task(store)
    losses = 1
    if sequence == "carry":   # a step back-propagates the carried sequence (or a tbptt piece) at once, every loss in it
        window = int(getattr(config.options, "tbptt", None) or len(split.train) or 1)
        losses = window
    ends = list(split.train) or [store.num_snapshots - 2]
    t = _representative(store, ends)
    prev = max(t - 1, 0)
    feats = store.require_features(prev, t + 1)   # time-varying ones of prev..t: the feeder's 0..t-prev
    n = int(store.num_nodes)
    feeder_host = [host_snapshot(*store.edges(s), n) for s in range(prev, t + 1)]
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(config.seed)
        model = strategy.build_model(int(feats.shape[-1]))
        head = task.head(model.out_dim)
    dev = measuring_device(config)
    model.to(dev)
    head.to(dev)
    feeder = SnapshotFeeder(feeder_host, feats, n, str(dev))
    params = tuple(model.parameters()) + tuple(head.parameters())
    model.train()
    head.train()
    state = model.initial_state(n, dev)
    if prev != t:
        _, state = model.step(*feeder.get(0), state)
    adj, x = feeder.get(t - prev)
    exclude = params + (adj.matrix, x) + tuple(state)
    host = not _gpu(config)
    step, (h, new_state) = saved_bytes(lambda: model.step(adj, x, state), exclude, resident=host)
    leaf = h.detach().requires_grad_(True)
    head_bytes, _ = saved_bytes(lambda: task.loss(head, leaf, t, 0), params + (leaf,), resident=host)
    state_bytes = sum(nb for s in new_state for _, nb in _storages(s))
    return {"step": float(step), "head": float(head_bytes), "state": float(state_bytes),
            "embedding": float(h.numel() * h.element_size()), "t": t, "window": window, "losses": losses,
            "carry": sequence == "carry", "ends": [int(e) for e in split.train]}


def _held_storages(obj, depth: int = 4) -> set[int]:
    """The data pointers of every tensor's storages among ``obj``'s attributes, containers and theirs,
    ``depth`` levels down (modules left out: their parameters are excluded apart)."""
    seen: set[int] = set()
    out: set[int] = set()

    def walk(o, d):
        if isinstance(o, torch.Tensor):
            out.update(ptr for ptr, _ in _storages(o))
            return
        if d < 0 or id(o) in seen or isinstance(o, (torch.nn.Module, type, str, bytes, int, float)):
            return
        seen.add(id(o))
        if isinstance(o, dict):
            items = list(o.values())
        elif isinstance(o, (list, tuple, set)):
            items = list(o)
        else:
            items = list(vars(o).values()) if hasattr(o, "__dict__") else []
        for v in items[:100000]:
            walk(v, d - 1)

    walk(obj, depth)
    return out


def measured_frames(store, config, measured: dict) -> dict[str, float | None]:
    """{"frames": the saved bytes of one step's forward through PiPAD's frames (frames, group_frames),
    "partition_bytes_per_nnz": what a built partition holds per nnz of its snapshots' Â, "s_per":
    the largest partition the tuner cut a frame into (None, both, where the range built none)},
    MEASURED:
    the frame engine (:class:`~dynagnn.train.frame_engine.FrameEngine`, the run's frame size and
    reuse, no producer thread) runs the run's model over the step's range (the window ending at the
    representative target, or the carried piece from its start) twice, the second under the
    saved-tensor hooks (:func:`saved_bytes`), with the engine's own arrays (its reuse cache,
    partitions, features and snapshot copies: :func:`frames_bytes` and :func:`adjacency_bytes` count
    them) and the parameters left out. A frame saves what its batched products read (the frame's
    stacked inputs, a GEMM's operands, a recurrence's workspace), not its snapshots' one-by-one
    tensors: on CollegeMsg daily WD-GCN in frames of 4, 3x their bytes. A third forward and its
    backward then leave the partitions as a run keeps them (a directed graph's transposed Â built by
    the backward) to be counted (:func:`partition_bytes`): on england_covid (directed, a high
    overlap) 12 bytes per nnz missed a third of them, the shared part stored once and the transposes
    at 20 bytes per nnz (torch's CSR from COO keeps the [2, nnz] index)."""
    from dynagnn.train.frame_engine import quiet_engine, range_inputs

    o = config.options
    n, T = int(store.num_nodes), int(store.num_snapshots)
    window = int(measured["window"])
    ends = measured.get("ends") or [int(measured["t"])]
    a = int(ends[0]) if measured.get("carry") else max(0, int(measured["t"]) - window + 1)
    span = max(1, min(window, T - a))
    S = max(1, min(int(o.frame_size or span), span))
    edges, host, feats = range_inputs(store, a, span)
    strategy = config.strategy_cls(config)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(config.seed)
        model = strategy.build_model(int(feats.shape[-1]))
    dev = measuring_device(config)
    model.to(dev).train()
    engine = quiet_engine(model, edges, host, feats, n, str(dev), window=span, frame_size=S,
                          reuse=getattr(o, "frame_reuse", "on") == "on", pipeline=False)
    try:
        def forward():
            engine.schedule([range(span)])
            return engine.forward(range(span), model.initial_state(n, dev))
        forward()   # the reuse cache and the partitions built, as the first epoch leaves them
        got, _ = saved_bytes(forward, tuple(model.parameters()), _held_storages(engine), resident=not _gpu(config))
        hs, _ = forward()
        torch.stack([h.sum() for h in hs]).sum().backward()
        per_nnz = partition_bytes(engine, _nnz(store)[a:a + span])
        s_per = max((size for _, size in _kept_partitions(engine)), default=None)
    finally:
        engine.close()
    return {"frames": float(got), "partition_bytes_per_nnz": per_nnz, "s_per": s_per}


def _kept_partitions(engine) -> dict:
    """The frame ``engine``'s partitions a step reads, by (first snapshot, size): the device's copies
    on a GPU, the host's on a CPU (where they are the same)."""
    return engine._dev_parts if engine.gpu else engine._host_parts


def partition_bytes(engine, nnz: np.ndarray) -> float | None:
    """The bytes the frame ``engine``'s partitions hold (their shared and exclusive Â, transposes
    included, and degree scalings; the device's copies on a GPU) per nnz of their snapshots' Â
    (``nnz``: the engine's snapshots'); None where it built none."""
    parts = _kept_partitions(engine)
    if not parts:
        return None
    seen: dict[int, int] = {}
    for part in parts.values():
        for adj in [part.shared, *part.exclusive]:
            if adj is None:
                continue
            for t in (adj.matrix, adj._transposed):
                if t is not None:
                    seen.update(_storages(t))
        if part.dinv is not None:
            seen.update(_storages(part.dinv))
    covered = sum(int(nnz[b:b + size].sum()) for b, size in parts)
    return float(sum(seen.values())) / max(covered, 1)


# ---- the terms ----------------------------------------------------------------------------------

def _gpu(config) -> bool:
    return str(config.device).startswith("cuda")


def measuring_device(config) -> torch.device:
    """Where the model's activations are measured: the run's GPU, where the process has one (its
    saved tensors are cuDNN's and cuBLAS's, counted at their allocated sizes), else the CPU (a GPU
    run's prediction made without one counts oneDNN's, in full)."""
    if _gpu(config) and torch.cuda.is_available():
        return torch.device(config.device)
    return torch.device("cpu")


def _procs(config) -> int:
    return int(config.workers) * int(config.strategy_cls.procs_per_worker)


def _nnz(store) -> np.ndarray:
    """nnz of each snapshot's normalised adjacency Â_t: its stored edges and one self-loop per node
    (an upper bound: a stored self-loop is not doubled)."""
    return np.diff(store.offsets).astype(np.int64) + int(store.num_nodes)


_WORKSPACES: dict[str, float] = {}


def cuda_workspace_bytes(device: str) -> float:
    """The CUDA libraries' workspaces a training process allocates through the caching allocator
    (cuBLAS's and cuBLASLt's, made at a stream's first product; ``max_memory_allocated`` counts them),
    MEASURED once per process and device: the workspaces cleared, a product and a biased linear map
    run forward and backward, the bytes still allocated once their tensors are freed. The earlier
    host-only model missed them: on an H200, 35-37 MiB above every other term (issue 30's first GPU
    run). 0 without a GPU."""
    if not torch.cuda.is_available():
        return 0.0
    dev = torch.device(device)
    key = str(dev)
    if key not in _WORKSPACES:
        clear = getattr(torch._C, "_cuda_clearCublasWorkspaces", None)
        if clear is not None:
            clear()
        torch.cuda.synchronize(dev)
        before = torch.cuda.memory_allocated(dev)
        a = torch.ones(256, 256, device=dev, requires_grad=True)   # ones: no draw from the caller's stream
        w = torch.ones(256, 256, device=dev, requires_grad=True)
        b = torch.ones(256, device=dev, requires_grad=True)
        (torch.nn.functional.linear(a, w, b).sum() + (a @ w).sum()).backward()
        del a, w, b
        torch.cuda.synchronize(dev)
        _WORKSPACES[key] = float(max(torch.cuda.memory_allocated(dev) - before, 0))
    return _WORKSPACES[key]


def _warm_imports(config, store_path=None) -> None:
    """Load what a trainer loads once per process and never frees (its optimiser's first step; the
    config's schema checker; the store's codecs, by reading its first snapshot; the model's contract check, which runs the model class on a small graph and is cached
    per class and widths, so the trainer does not repeat it), so the start that the peak is measured
    above is after it."""
    import dynagnn.config  # noqa: F401  (jsonschema)
    from dynagnn.train.engine import Trainer  # noqa: F401

    if store_path is not None:
        from dynagnn.data.store import open_store

        store = open_store(store_path)
        store.edges(0)
        strategy = config.strategy_cls(config)
        if "snapshot" in strategy.models or "stacked" in strategy.models:
            from dynagnn.models.contract import check_contract

            in_dim = strategy.input_dim(store)
            check_contract(strategy.model_class(config.model), config.model, in_dim, config.hidden)

    from dynagnn.train.optimizer import Adam

    w = torch.nn.Parameter(torch.zeros(4))
    opt = Adam([w], lr=0.01)
    w.grad = torch.ones(4)
    opt.step()


def _peak_rss() -> int:
    """This process's peak resident bytes since its start or :func:`_reset_peak_rss`: the memory map's
    high-water mark (VmHWM), which an exec starts afresh. Not ``ru_maxrss``: a spawned child keeps
    the parent's size at its fork in it (the pages it shared before the exec), so a child of a large
    process would read the parent's size as its own peak."""
    from dynagnn.host_memory import proc_bytes

    peak = proc_bytes("/proc/self/status", "VmHWM")
    return peak if peak is not None else resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024   # KiB on Linux


def _reset_peak_rss() -> None:
    """Start the high-water mark afresh at the current size (Linux 4.0's clear_refs 5), so that the
    imports' transient peak is not read as the run's; a system without it keeps the mark."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
    except OSError:
        pass


def _measure_here(ctx, store_path, config, steps: int) -> float:
    """One process's measurement (the spawned child's, or a job's rank): the peak above its start."""
    from dynagnn.distributed.comm import Comm
    from dynagnn.host_memory import current_rss_bytes
    from dynagnn.train.engine import Trainer
    from dynagnn.choose.trials import _picks

    _warm_imports(config, store_path)
    gpu = config.device.startswith("cuda")
    if gpu:
        torch.cuda.init()
        before = torch.cuda.memory_allocated()
        torch.cuda.reset_peak_memory_stats()
    else:
        _reset_peak_rss()   # the imports' transient peak is not the run's
        before = current_rss_bytes()
    tr = Trainer(store_path, config, progress=False, ctx=ctx, comm=Comm(ctx) if ctx is not None else None,
                 checked=ctx is not None)
    try:
        tr.model.train()
        tr.head.train()
        tr.run.epoch = 0
        tr.strategy.start_epoch(0)
        all_steps = tr.step_ends()
        for i in _picks(len(all_steps), steps):
            tr.optimizer.zero_grad(set_to_none=True)
            tr.strategy.train_step(all_steps[i])
            tr.optimizer.step()
        if gpu:
            torch.cuda.synchronize()
            return float(max(torch.cuda.max_memory_allocated() - before, 0))
        return float(max(_peak_rss() - before, 0))
    finally:
        tr.strategy.close()


def _child(q, store_path, config, steps: int) -> None:
    try:
        if _procs(config) == 1:
            q.put(("ok", _measure_here(None, store_path, config, steps)))
        else:
            from dynagnn.distributed.launch import launch

            peaks = launch(_measure_here, int(config.workers), store_path, config, steps, device=config.device,
                           threads=config.threads, procs_per_worker=config.strategy_cls.procs_per_worker)
            q.put(("ok", float(max(peaks))))
    except BaseException as exc:  # noqa: BLE001 (reported to the parent, which raises)
        q.put(("error", f"{type(exc).__name__}: {exc}\n{traceback.format_exc()}"))
    # the process ends here and the parent joins it: the final collections over torch's objects (0.3 s)
    # are skipped (dynagnn/__main__.py says why)
    gc.freeze()


class MeasureError(RuntimeError):
    """The measuring process failed or died."""


def measure_peak_bytes(store_path, config, steps: int | None = 3, timeout: float = 600.0) -> float:
    """The peak bytes above a process's start of training ``config`` on the store at ``store_path``,
    measured in a fresh spawned process: its resident memory read after the imports
    (:func:`_warm_imports`), the trainer built as the chooser's trials build it, ``steps`` training
    steps (spread over the epoch, each ``train_step`` and the optimiser's step; None: every step of
    one epoch, the run's peak where no cache fills later), then the resident set's high-water mark
    (:func:`_peak_rss`) less the start; on a GPU the allocator's peak above what was allocated
    before. A candidate of several processes runs as its own job from the child, and the largest
    process's peak is returned. A child that fails raises :class:`MeasureError` with its traceback;
    one that dies (killed, out of memory) raises it with its exit code, never a hang."""
    mp = multiprocessing.get_context("spawn")
    q = mp.Queue()
    p = mp.Process(target=_child, args=(q, str(store_path), config, 10**9 if steps is None else int(steps)),
                   daemon=False)
    p.start()
    try:
        waited = 0.0
        while True:
            try:
                kind, value = q.get(timeout=0.5)
                break
            except queue_mod.Empty:
                waited += 0.5
                if not p.is_alive():
                    try:   # the result may have arrived just as it exited
                        kind, value = q.get(timeout=0.5)
                        break
                    except queue_mod.Empty:
                        raise MeasureError(f"the measuring process died (exit code {p.exitcode}) before it "
                                           "reported a peak") from None
                if waited >= timeout:
                    raise MeasureError(f"the measuring process reported nothing in {timeout:.0f} s")
    finally:
        p.join(timeout=10)
        if p.is_alive():
            p.kill()
            p.join()
    if kind != "ok":
        raise MeasureError(f"the measuring process failed: {value}")
    return float(value)
