"""The cores other jobs keep busy while this process starts: what ``--strategy auto`` may use.

A chooser that times a step at every core's thread on a machine another job shares measures the
contention, not the step: issue 54's loaded case timed torch's 2-thread step beside an equal job at
10x its 1-thread time (a 2-thread run took 60 s there against 6 s at 1 thread), and spent 9.5 s
choosing for 1.4 s of training. So before anything is timed the chooser asks how many cores the
others left it.

The machine's busy time (``/proc/stat``: every state but idle and iowait, over the CPUs this process
may run on) less this process's own CPU time (``os.times``: all its threads), over the wall since a
mark (:func:`mark`, taken where the CLI starts: the interpreter's imports are the window, a second or
more at no cost), is the cores the others used. A mark younger than :data:`MIN_WINDOW` is waited out
(the clock ticks in 10 ms: a shorter window reads noise). Where ``/proc/stat`` cannot be read (not
Linux) nothing is known, and every core is taken as free. ``DYNAGNN_OTHERS_BUSY`` says the count
instead (0 where a job owns its cores, as a cluster's allocation does).
"""

from __future__ import annotations

import math
import os
import time
from dataclasses import dataclass

from dynagnn.errors import ConfigError

MIN_WINDOW = 0.15   # seconds: 15 clock ticks of each CPU, a core's busy share read to ~0.1
# a core counts as taken by others from this share of it up: a torch pool that spins beside another
# job's loses 10x, a background process's blips (a few per cent) are not a job
TAKEN_SHARE = 0.5


@dataclass(frozen=True)
class Mark:
    busy: float   # CPU seconds the machine's CPUs (this process's affinity) spent busy, since boot
    own: float    # this process's CPU seconds (every thread)
    wall: float   # time.monotonic()


_FIRST: Mark | None = None
STAT = "/proc/stat"
# the others' busy cores to assume instead of reading them (a cluster's job that owns its cores: 0)
ENV = "DYNAGNN_OTHERS_BUSY"


def _cpus() -> set[int] | None:
    try:
        return set(os.sched_getaffinity(0))
    except AttributeError:
        return None


def mark() -> Mark | None:
    """The counters now; None where :data:`STAT` cannot be read."""
    try:
        with open(STAT) as f:
            lines = f.read().splitlines()
    except OSError:
        return None
    cpus, tick = _cpus(), os.sysconf("SC_CLK_TCK")
    busy = 0
    for line in lines:
        name, _, rest = line.partition(" ")
        if not name.startswith("cpu") or name == "cpu" or (cpus is not None and int(name[3:]) not in cpus):
            continue
        v = [int(x) for x in rest.split()]
        busy += sum(v[:8]) - v[3] - v[4]   # user nice system idle iowait irq softirq steal
    t = os.times()
    return Mark(busy / tick, t.user + t.system, time.monotonic())


def note_start() -> None:
    """Remember the first mark of this process (the CLI's start): the window :func:`others_busy`
    reads by default."""
    global _FIRST
    if _FIRST is None:
        _FIRST = mark()


def between(since: Mark, now: Mark) -> float:
    """The cores other processes kept busy, on average, from ``since`` to ``now``."""
    return max(0.0, (now.busy - since.busy) - (now.own - since.own)) / max(now.wall - since.wall, 1e-9)


def others_busy(since: Mark | None = None) -> float | None:
    """The cores other processes kept busy, on average, since ``since`` (default: the first mark,
    :func:`note_start`, taken now where none was, then :data:`MIN_WINDOW` waited); None where
    nothing can be read. :data:`ENV` set says it instead (0: every core free)."""
    if os.environ.get(ENV, "").strip():
        try:
            return max(0.0, float(os.environ[ENV]))
        except ValueError:
            raise ConfigError(f"{ENV}={os.environ[ENV]!r}: the cores other jobs keep busy, a number") from None
    note_start()
    since = since or _FIRST
    if since is None:
        return None
    wait = MIN_WINDOW - (time.monotonic() - since.wall)
    if wait > 0:
        time.sleep(wait)
    now = mark()
    return None if now is None else between(since, now)


def cores_left(cores: int, busy: float, total: int) -> int:
    """The cores of ``cores`` that others busy on ``busy`` of the ``total`` CPUs leave, at least one:
    each CPU the others keep busy past :data:`TAKEN_SHARE` of it is theirs."""
    taken = math.floor(busy + (1 - TAKEN_SHARE))
    return max(1, min(int(cores), int(total) - taken))


def free_cores(cores: int, since: Mark | None = None) -> tuple[int, float | None]:
    """(the cores of ``cores`` the others leave free, :func:`cores_left`; the others' busy cores, or
    None where unknown and every core is taken as free)."""
    busy = others_busy(since)
    if busy is None:
        return int(cores), None
    return cores_left(cores, busy, len(_cpus() or range(os.cpu_count() or 1))), busy
