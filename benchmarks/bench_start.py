"""What issue 48's cuts gain, side by side in one run, medians of interleaved rounds:

- **the optimiser's start**: a fresh process that builds and steps torch's fused Adam (which imports
  ``torch._dynamo``) against one that builds and steps the trainer's
  (:class:`dynagnn.train.optimizer.Adam`), each ``python -c`` timed from launch to exit;
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
ADAM = {"torch": "import torch; o = torch.optim.Adam([w], fused=True)",
        "dynagnn": "import torch; from dynagnn.train.optimizer import Adam; o = Adam([w])"}


def _process_seconds(build: str) -> float:
    code = (build.replace("[w]", "[torch.nn.Parameter(torch.ones(4))]")
            + "; p = o.param_groups[0]['params'][0]; p.grad = torch.ones(4); o.step()")
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
    times = {k: [] for k in ADAM}
    for _ in range(rounds):
        for k, build in ADAM.items():
            times[k].append(_process_seconds(build))
    adam = {k: statistics.median(v) for k, v in times.items()}
    whole, blocks, equal = _scores(rounds)
    print(f"\n== start and evaluation (issue 48): medians of {rounds} interleaved rounds")
    print(f"  a process building and stepping Adam: torch's {adam['torch']:.2f} s, the trainer's "
          f"{adam['dynagnn']:.2f} s ({adam['torch'] - adam['dynagnn']:+.2f} s saved, {adam['torch'] / adam['dynagnn']:.2f}x)")
    print(f"  link scores of {POSITIVES * 21:,} pairs: one product {whole * 1e3:.0f} ms, in blocks {blocks * 1e3:.0f} ms "
          f"({whole / blocks:.2f}x; scores equal: {equal})")
    return {"adam_seconds": adam, "scores_whole_s": whole, "scores_blocks_s": blocks, "scores_equal": equal}


if __name__ == "__main__":
    main()
