"""Per-snapshot step times of a model the cost model has no operator list for: a user's model.

BLAD plans from linear-regression predictors of profiled operators, which need each model's
operator calls (:mod:`.models`, written for dynagnn's own models). A model named by import path has
none, so a plan for it (the group strategy's plan made at start, :func:`dynagnn.api.plan_at_start`)
is built from the model itself instead: each snapshot's forward step and its backward, timed on the
run's device with its threads and width, the median of ``repeats`` after a warm-up. That is the
measurement BLAD's planner would predict, taken directly: a snapshot's cost includes everything its
step does, nothing is extrapolated, and it costs one forward and backward per snapshot and repeat.
"""

from __future__ import annotations

import statistics
import time

import numpy as np
import torch

from dynagnn.allocator import keep_freed_heap
from dynagnn.graph import csr
from dynagnn.models import build_model


def model_step_times(store, model: str, hidden: int, threads: int = 1, repeats: int = 3, seed: int = 0,
                     device: str = "cpu", snapshots=None, features=None) -> tuple[np.ndarray, np.ndarray]:
    """(forward, backward) float64 [T] median seconds of ``model``'s step on each snapshot of
    ``store`` from its initial state (module docstring), with ``threads`` torch threads, on ``device``;
    ``snapshots``: time only these (the chooser's sample), the others' entries left NaN;
    ``features``: the store's features already read (a caller timing several thread counts)."""
    keep_freed_heap()
    dev = torch.device(device)
    sync = torch.cuda.synchronize if dev.type == "cuda" else (lambda: None)
    before = torch.get_num_threads()
    torch.set_num_threads(int(threads))
    try:
        features = np.asarray(store.require_features() if features is None else features, dtype=np.float32)
        # the timed steps draw from torch's generator (dropout): the caller's stream stays as it was
        with torch.random.fork_rng(devices=[dev.index or 0] if dev.type == "cuda" else []):
            torch.manual_seed(seed)
            net = build_model(model, store.feature_dim(), hidden).to(dev)
            n = store.num_nodes
            fwd, bwd = np.full(store.num_snapshots, np.nan), np.full(store.num_snapshots, np.nan)
            picked = range(store.num_snapshots) if snapshots is None else sorted(set(int(t) for t in snapshots))
            for t in picked:
                row, col, w = store.edges(t)
                adj = csr.normalize(row, col, w, n).to(dev)
                x = torch.from_numpy(features if features.ndim == 2 else features[t]).to(dev)
                fwd[t], bwd[t] = _time_step(net, adj, x, n, int(repeats), sync)
        return fwd, bwd
    finally:
        torch.set_num_threads(before)


def step_seconds(store, model: str, hidden: int, t: int, thread_counts, passes: int = 2, seed: int = 0,
                 device: str = "cpu") -> dict[int, tuple[float, float]]:
    """{threads: (forward, backward) seconds of ``model``'s step on snapshot ``t`` from its initial
    state} at each of ``thread_counts``: one model built, a warm-up step per thread count, then
    ``passes`` timed passes over the counts interleaved, the fastest of each kept (a pass's noise on a
    shared machine only adds). The chooser's one-snapshot timing: one build and one warm-up per count
    where :func:`model_step_times` per count builds and warms its own."""
    keep_freed_heap()
    dev = torch.device(device)
    sync = torch.cuda.synchronize if dev.type == "cuda" else (lambda: None)
    before = torch.get_num_threads()
    counts = sorted({int(c) for c in thread_counts})
    try:
        x = store.require_features(t, t + 1)
        x = x if x.ndim == 2 else x[0]
        with torch.random.fork_rng(devices=[dev.index or 0] if dev.type == "cuda" else []):
            torch.manual_seed(seed)
            net = build_model(model, store.feature_dim(), hidden).to(dev)
            n = store.num_nodes
            adj = csr.normalize(*store.edges(t), n).to(dev)
            x = torch.from_numpy(np.asarray(x, dtype=np.float32)).to(dev)
            best: dict[int, tuple[float, float]] = {}
            for p in range(passes):
                for c in counts:
                    torch.set_num_threads(c)
                    got = _time_step(net, adj, x, n, 1, sync, warm=p == 0)
                    best[c] = min(best.get(c, got), got, key=sum)
        return best
    finally:
        torch.set_num_threads(before)


def _time_step(net, adj, x, n: int, repeats: int, sync, warm: bool = True) -> tuple[float, float]:
    f, b = [], []
    for _ in range(repeats + warm):   # the first run warms the allocator and the layers' caches
        state = net.initial_state(n, x.device)
        sync()
        t0 = time.perf_counter()
        h, _ = net.step(adj, x, state)
        sync()
        t1 = time.perf_counter()
        h.sum().backward()
        sync()
        t2 = time.perf_counter()
        f.append(t1 - t0)
        b.append(t2 - t1)
        net.zero_grad(set_to_none=True)
    return statistics.median(f[warm:]), statistics.median(b[warm:])
