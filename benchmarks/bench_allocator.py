"""What the trainers' malloc setting (:func:`dynagnn.allocator.keep_freed_heap`) gains on a CPU.

The setting is process-wide and cannot be undone, so each side runs in a fresh child process: the
same link-head step (the task's head over the churn store's shape: N = 2,000 embeddings of width 32,
40,000 scored pairs, forward, loss and backward, 1 thread), once under glibc's defaults and once
with freed memory kept. Printed: median ms per step and minor page faults per step of each, in
alternating rounds, and the ratio.

Then what keeping freed memory asks of the trainers: that a long-lived block is not made among a
step's temporaries. The sequential loop's feeder on a CPU makes every snapshot's copy when it is built
(``SnapshotFeeder(preload=True)``); made as each step first reads its snapshot instead, the heap serves
later steps from fresh pages. Each side trains one epoch of T-GCN on CollegeMsg's daily snapshots
(window 4, hidden 32, 1 thread) in a fresh process (``dynagnn.choose.memory_measure``'s measurement: the
resident set's high-water mark above its start); printed: each side's peak, alternating rounds, and
the ratio. ``DYNAGNN_BENCH_ALLOCATOR_SMOKE=1``: a tiny churn store, one round.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys

CHILD = r"""
import json, os, resource, statistics, sys, time
import torch
import torch.nn.functional as F
torch.set_num_threads(1)
if sys.argv[1] == "keep":
    from dynagnn.allocator import keep_freed_heap
    keep_freed_heap()
from dynagnn.models.heads import LinkPredictor
torch.manual_seed(0)
head = LinkPredictor(32)
h = torch.randn(2000, 32, requires_grad=True)
pairs = torch.randint(0, 2000, (2, 40000))
target = torch.rand(40000).round()
def step():
    loss = F.binary_cross_entropy_with_logits(head(h, pairs), target)
    loss.backward()
for _ in range(3):
    step()
times, faults = [], []
for _ in range(int(sys.argv[2])):
    f0 = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    t0 = time.perf_counter()
    step()
    times.append(time.perf_counter() - t0)
    faults.append(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - f0)
print(json.dumps({"ms": 1e3 * statistics.median(times), "faults": statistics.median(faults)}))
"""


def _child(mode: str, steps: int) -> dict:
    out = subprocess.run([sys.executable, "-c", CHILD, mode, str(steps)], capture_output=True, text=True,
                         check=True, env={**os.environ, "OMP_NUM_THREADS": "1"})
    return json.loads(out.stdout.strip().splitlines()[-1])


EPOCH_CHILD = r"""
import json, sys
from dynagnn.train.strategies.sequential import Sequential
Sequential.preload = sys.argv[2] == "up-front"   # this process only
from dynagnn.choose.memory_measure import _measure_here
from dynagnn.train.run_config import TrainConfig
cfg = TrainConfig.of(model="tgcn", hidden=32, window=4, threads=1)
print(json.dumps({"peak": _measure_here(None, sys.argv[1], cfg, 10 ** 9)}))
"""


def feeder_copies(smoke: bool) -> dict:
    """One epoch's resident peak (MiB) with the feeder's copies made up front and as read."""
    from .bench_auto import _churn, _collegemsg_daily

    path = _churn(tiny=True) if smoke else _collegemsg_daily()
    got = {"up-front": [], "as read": []}
    for _ in range(1 if smoke else 3):   # alternating, as above
        for mode in got:
            out = subprocess.run([sys.executable, "-c", EPOCH_CHILD, str(path), mode], capture_output=True,
                                 text=True, check=True, env={**os.environ, "OMP_NUM_THREADS": "1"})
            got[mode].append(json.loads(out.stdout.strip().splitlines()[-1])["peak"] / 2 ** 20)
    res = {m: statistics.median(v) for m, v in got.items()}
    print(f"\n== the feeder's snapshot copies on a CPU: one epoch of T-GCN on {path.stem} (window 4, 1 thread), "
          f"resident peak above the start, median of {len(got['up-front'])} round(s)")
    for mode in got:
        print(f"  {mode:<10s} {res[mode]:8.1f} MiB")
    print(f"  as read / up front: {res['as read'] / res['up-front']:.2f}x")
    return res


def main() -> dict:
    smoke = os.environ.get("DYNAGNN_BENCH_ALLOCATOR_SMOKE") == "1"
    steps, rounds = (5, 1) if smoke else (30, 3)
    got = {"default": [], "keep": []}
    for _ in range(rounds):  # alternating, so that load drift hits both
        for mode in got:
            got[mode].append(_child(mode, steps))
    res = {m: {"ms": statistics.median(r["ms"] for r in rs), "faults": statistics.median(r["faults"] for r in rs)}
           for m, rs in got.items()}
    print(f"\n== malloc keeping freed memory: link head, 2,000 x 32, 40,000 pairs, 1 thread; medians of {rounds} "
          f"rounds x {steps} steps")
    for mode, label in (("default", "glibc defaults"), ("keep", "keep_freed_heap")):
        print(f"  {label:<16s} {res[mode]['ms']:8.2f} ms/step  {res[mode]['faults']:8.0f} page faults/step")
    print(f"  speed-up: {res['default']['ms'] / res['keep']['ms']:.2f}x")
    res["feeder_copies_mib"] = feeder_copies(smoke)
    return res


if __name__ == "__main__":
    main()
