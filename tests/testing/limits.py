"""Guards against a hang, never against slowness (issue 48).

A test that waits on a process waits on its progress or its exit; the wall-clock limit only ends a
test that would otherwise never end. Each is far above the slowest quiet run measured (at least 5x),
so that a machine running another job beside the suite does not fail it.
"""

# a training or checking subprocess of a test: tens of seconds at most on 2 busy cores
PROCESS_HANG_S = 900
# one Snakemake run of the tiny config: 133 s on a quiet 2-core CI (a 300 s limit failed it once beside
# another job)
SNAKEMAKE_HANG_S = 1800
