"""The cores other jobs keep busy while this process starts: what ``--strategy auto`` may use.

A chooser that times a step at every core's thread on a machine another job shares measures the
contention, not the step: issue 54's loaded case timed torch's 2-thread step beside an equal job at
10x its 1-thread time (a 2-thread run took 60 s there against 6 s at 1 thread), and spent 9.5 s
choosing for 1.4 s of training. So before anything is timed the chooser asks how many cores the
others left it.

The machine's busy time (``/proc/stat``: every state but idle and iowait, over the CPUs this process
may run on) less this process's own CPU time (``os.times``: all its threads), over the wall since a
mark (:func:`note_start`, taken where the CLI starts: the interpreter's imports are the window, a
second or more at no cost), is the cores the others used. A mark younger than :data:`MIN_WINDOW` is waited out
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
_LAST: tuple[float, float] | None = None   # (when, the others' busy cores) of the last reading
REUSE_SECONDS = 2.0
_clock, _sleep, _times = time.monotonic, time.sleep, os.times   # (tests replace them)
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
    t = _times()
    return Mark(busy / tick, t.user + t.system, _clock())


def note_start() -> None:
    """Take the mark of this process's start (the CLI's) where none is waiting: the window the next
    :func:`others_busy` reads by default."""
    global _FIRST
    if _FIRST is None:
        _FIRST = mark()


def between(since: Mark, now: Mark) -> float:
    """The cores other processes kept busy, on average, from ``since`` to ``now``."""
    return max(0.0, (now.busy - since.busy) - (now.own - since.own)) / max(now.wall - since.wall, 1e-9)


def others_busy(since: Mark | None = None) -> float | None:
    """The cores other processes kept busy, on average, since ``since`` (default: the mark
    :func:`note_start` left, taken now where none was, then :data:`MIN_WINDOW` waited); None where
    nothing can be read. :data:`ENV` set says it instead (0: every core free).

    A start's mark serves one reading: a second choice in the same process (the seeds of one run, a
    notebook's ``fit`` calls) reads a window of its own, not one that holds the first run's training
    (its worker processes are not this process's CPU time). A reading is reused for
    :data:`REUSE_SECONDS` (the API asks before recalling a choice and again before choosing)."""
    global _FIRST, _LAST
    if os.environ.get(ENV, "").strip():
        try:
            value = float(os.environ[ENV])
        except ValueError:
            value = math.nan
        if not math.isfinite(value) or value < 0:
            raise ConfigError(f"{ENV}={os.environ[ENV]!r}: the cores other jobs keep busy, a number >= 0") from None
        return value
    if since is None:
        if _LAST is not None and _clock() - _LAST[0] <= REUSE_SECONDS:
            return _LAST[1]
        note_start()
        since, _FIRST = _FIRST, None
    if since is None:
        return None
    wait = MIN_WINDOW - (_clock() - since.wall)
    if wait > 0:
        _sleep(wait)
    now = mark()
    if now is None:
        return None
    _LAST = (now.wall, between(since, now))
    return _LAST[1]


def cores_left(cores: int, busy: float, total: int) -> int:
    """The cores of ``cores`` that others busy on ``busy`` of the ``total`` CPUs leave, at least one:
    the others' busy time rounded to whole CPUs (a share of :data:`TAKEN_SHARE` of one or more counts
    as one) is theirs. A run that asks for more cores than there are CPUs keeps its ask where the
    others leave every CPU."""
    free = int(total) - math.floor(busy + (1 - TAKEN_SHARE))
    if free >= min(int(cores), int(total)):
        return int(cores)
    return max(1, free)


def free_cores(cores: int, since: Mark | None = None) -> tuple[int, float | None]:
    """(the cores of ``cores`` the others leave free, :func:`cores_left`; the others' busy cores, or
    None where unknown and every core is taken as free)."""
    busy = others_busy(since)
    if busy is None:
        return int(cores), None
    return cores_left(cores, busy, len(_cpus() or range(os.cpu_count() or 1))), busy
