"""What issue 48's cuts gain, side by side in one run, medians of interleaved rounds:

- **a process's start and end**, each pair two ``python -c`` timed from launch to exit:
  - the optimiser: building and stepping torch's fused Adam (which imports ``torch._dynamo``) against
    the trainer's (:class:`dynagnn.train.optimizer.Adam`);
  - the first backward from given gradients: ``h.backward(grad)`` (torch's shape check imports sympy)
    against :func:`dynagnn.train.backward.backward`;
  - the exit after ``import torch``: the interpreter's last collections against ``gc.freeze()`` first
    (what ``python -m dynagnn`` does);
  - the strategies: every strategy's class imported (the registry before the catalog) against the one
    a run trains (``sequential``);
- **evaluation's link scores**: :class:`dynagnn.models.heads.LinkPredictor` scoring a validation's
  pairs (``POSITIVES`` positives and 20 negatives each, hidden 32, 2 threads) in one [E, hidden]
  product (the path with gradients) against the cache-sized blocks it takes without them; the scores
  are checked equal.

Run: ``python -m benchmarks start``. Environment: ``DYNAGNN_BENCH_START_ROUNDS`` (default 5).
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import time

POSITIVES = 20_000
# (before, after) of each cut: the code of two processes that do the same work
_BACKWARD = ("import torch; w = torch.nn.Parameter(torch.ones(64, 8)); h = torch.tanh(torch.ones(32, 64) @ w); "
             "g = torch.ones(32, 8); ")
PAIRS = {
    "Adam built and stepped": (
        "import torch; w = torch.nn.Parameter(torch.ones(4)); o = torch.optim.Adam([w], fused=True); "
        "w.grad = torch.ones(4); o.step()",
        "import torch; from dynagnn.train.optimizer import Adam; w = torch.nn.Parameter(torch.ones(4)); o = Adam([w]); "
        "w.grad = torch.ones(4); o.step()"),
    "a first backward from given gradients": (
        _BACKWARD + "h.backward(g)",
        _BACKWARD + "from dynagnn.train.backward import backward; backward(h, g)"),
    "the exit after import torch": ("import torch", "import torch, gc; gc.freeze()"),
    "the strategies a run imports": (
        "from dynagnn.train.strategies import STRATEGIES; list(STRATEGIES.values())",
        "from dynagnn.train.strategies import strategy_class; strategy_class('sequential')"),
}


def _process_seconds(code: str) -> float:
    t = time.perf_counter()
    subprocess.run([sys.executable, "-c", code], check=True)
    return time.perf_counter() - t


def _scores(rounds: int) -> tuple[float, float, bool]:
    import torch

    from dynagnn.models.heads import LinkPredictor

    torch.set_num_threads(2)
    torch.manual_seed(0)
    n, dim = 5000, 32
    head, h = LinkPredictor(dim), torch.randn(n, dim)
    pairs = torch.randint(0, n, (2, POSITIVES * 21))
    whole, blocks = [], []
    for _ in range(rounds + 1):   # the first round warms the allocator
        t = time.perf_counter()
        with torch.enable_grad():
            a = head(h, pairs).detach()
        whole.append(time.perf_counter() - t)
        t = time.perf_counter()
        with torch.no_grad():
            b = head(h, pairs)
        blocks.append(time.perf_counter() - t)
    return statistics.median(whole[1:]), statistics.median(blocks[1:]), bool(torch.equal(a, b))


def main() -> dict:
    rounds = int(os.environ.get("DYNAGNN_BENCH_START_ROUNDS", 5))
    times = {(name, side): [] for name in PAIRS for side in (0, 1)}
    for _ in range(rounds):
        for name, codes in PAIRS.items():
            for side, code in enumerate(codes):
                times[(name, side)].append(_process_seconds(code))
    med = {k: statistics.median(v) for k, v in times.items()}
    whole, blocks, equal = _scores(rounds)
    print(f"\n== start and evaluation (issue 48): medians of {rounds} interleaved rounds")
    print("  a process, launch to exit        before    after   saved")
    for name in PAIRS:
        before, after = med[(name, 0)], med[(name, 1)]
        print(f"  {name:<38} {before:6.2f} s {after:6.2f} s {before - after:+6.2f} s ({before / after:.2f}x)")
    print(f"  link scores of {POSITIVES * 21:,} pairs: one product {whole * 1e3:.0f} ms, in blocks {blocks * 1e3:.0f} ms "
          f"({whole / blocks:.2f}x; scores equal: {equal})")
    return {"process_seconds": {name: (med[(name, 0)], med[(name, 1)]) for name in PAIRS},
            "scores_whole_s": whole, "scores_blocks_s": blocks, "scores_equal": equal}


if __name__ == "__main__":
    main()
