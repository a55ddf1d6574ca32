"""`python -m benchmarks [name ...]`: run the benchmarks (all but the by-name-only ones by default) and print
their ratios."""

import sys

from . import (bench_accuracy, bench_allocator, bench_analyze, bench_auto, bench_cache, bench_cost, bench_dist, bench_frames, bench_group, bench_ingest, bench_overhead, bench_pair_channel, bench_partition, bench_plugin, bench_pygt_loop, bench_sampled, bench_schedule,
               bench_start, bench_stats, bench_tgnn, bench_tgnn_models, bench_train)

BENCHES = {"ingest": bench_ingest.main, "stats": bench_stats.main, "analyze": bench_analyze.main,
           "partition": bench_partition.main, "cache": bench_cache.main, "cost": bench_cost.main,
           "schedule": bench_schedule.main, "train": bench_train.main, "dist": bench_dist.main,
           "group": bench_group.main, "tgnn": bench_tgnn.main, "tgnn_models": bench_tgnn_models.main,
           "frames": bench_frames.main, "sampled": bench_sampled.main, "allocator": bench_allocator.main,
           "pair_channel": bench_pair_channel.main, "pygt_loop": bench_pygt_loop.main,
           "plugin": bench_plugin.main, "auto": bench_auto.main, "start": bench_start.main,
           "overhead": bench_overhead.main, "accuracy": bench_accuracy.main}


# run only when named: hours of training (`python -m benchmarks accuracy`), not part of `make bench`
BY_NAME_ONLY = ("accuracy",)


def main(argv: list[str]) -> int:
    names = argv or [n for n in BENCHES if n not in BY_NAME_ONLY]
    unknown = [n for n in names if n not in BENCHES]
    if unknown:
        print(f"unknown benchmark(s) {unknown}; known: {', '.join(BENCHES)}", file=sys.stderr)
        return 2
    for name in names:
        BENCHES[name]()
    return 0


raise SystemExit(main(sys.argv[1:]))
