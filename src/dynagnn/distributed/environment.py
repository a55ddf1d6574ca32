"""What the environment says of a job: torchrun's group (its variables, and whether torchrun started
this process), the timeouts and the cores. Below both the context and the launcher, which read it."""

from __future__ import annotations

import logging
import math
import os

from dynagnn.errors import ConfigError

log = logging.getLogger("dynagnn.distributed.launch")

DEFAULT_TIMEOUT = 600.0
DEFAULT_CONNECT_TIMEOUT = 60.0
_TORCHRUN_VARS = ("RANK", "WORLD_SIZE", "MASTER_ADDR")
# set by torchrun (torch.distributed.elastic) for every process it starts, and by no shell
_TORCHRUN_MARKERS = ("TORCHELASTIC_RUN_ID", "GROUP_RANK", "LOCAL_WORLD_SIZE")


def env_seconds(name: str, default: float) -> float:
    """Seconds from the environment variable ``name`` (``default`` when unset); ConfigError, in one
    line, for a value that is not a positive finite number."""
    text = os.environ.get(name)
    if text is None or not text.strip():
        return float(default)
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not math.isfinite(value) or value <= 0:
        raise ConfigError(f"{name}={text!r}: expected a positive number of seconds (default {default:g})")
    return value


def group_in_environment() -> bool:
    """Whether the environment names a process group to join: ``RANK``, ``WORLD_SIZE`` and
    ``MASTER_ADDR`` all set (by torchrun, another launcher, or left in a shell)."""
    return all(v in os.environ for v in _TORCHRUN_VARS)


def under_torchrun() -> bool:
    """Whether torchrun started this process: its group's variables (``RANK``, ``WORLD_SIZE``,
    ``MASTER_ADDR``) and one it sets that no shell does (``TORCHELASTIC_RUN_ID``, ``GROUP_RANK`` or
    ``LOCAL_WORLD_SIZE``). Stray ``RANK``/``WORLD_SIZE``/``MASTER_ADDR`` alone are not torchrun
    (:func:`check_environment` decides what they mean)."""
    return group_in_environment() and any(v in os.environ for v in _TORCHRUN_MARKERS)


def _world_in_environment() -> int:
    text = os.environ["WORLD_SIZE"]
    try:
        world = int(text)
    except ValueError:
        world = 0
    if world < 1:
        raise ConfigError(f"WORLD_SIZE={text!r} in the environment: expected a positive number of processes "
                          "(it names the process group to join; unset RANK, WORLD_SIZE and MASTER_ADDR to spawn "
                          "--workers local processes)")
    return world


def refuse_mismatch(workers: int, procs_per_worker: int = 1) -> None:
    """ConfigError (one line) where torchrun's variables are set without torchrun and their
    ``WORLD_SIZE`` is not the job's ``workers × procs_per_worker`` processes: they are most likely
    left over in the shell, and obeying either number would be a guess."""
    if under_torchrun() or not group_in_environment():
        return
    world = _world_in_environment()
    wanted = int(workers) * int(procs_per_worker)
    if world != wanted:
        procs = f"{wanted} process{'es' if wanted > 1 else ''}"
        per = f" ({procs_per_worker} per worker)" if int(procs_per_worker) > 1 else ""
        raise ConfigError(f"WORLD_SIZE={world} in the environment, but --workers {workers} asks for {procs}{per} "
                          "and torchrun did not start this process (no TORCHELASTIC_RUN_ID): unset RANK, "
                          "WORLD_SIZE and MASTER_ADDR (left over from a torchrun job?) or start the job with torchrun")


def check_environment(workers: int, procs_per_worker: int = 1) -> bool:
    """Whether a job of ``workers × procs_per_worker`` processes joins the group the environment names
    (True) or spawns its own (False). Under torchrun it joins, and ``--workers`` yields to torchrun's
    ``WORLD_SIZE``. Torchrun's variables set without torchrun are honoured only when ``WORLD_SIZE`` is
    the job's process count (another launcher's job); a mismatch is refused at once
    (:func:`refuse_mismatch`)."""
    if under_torchrun():
        return True
    if not group_in_environment():
        return False
    refuse_mismatch(workers, procs_per_worker)
    log.info("RANK, WORLD_SIZE and MASTER_ADDR are set but torchrun did not start this process: joining their "
             "group as rank %s of %s (unset them to spawn --workers local processes instead)",
             os.environ.get("RANK"), os.environ.get("WORLD_SIZE"))
    return True


def default_timeout() -> float:
    """The process group's timeout: ``DYNAGNN_DIST_TIMEOUT`` seconds (default 600)."""
    return env_seconds("DYNAGNN_DIST_TIMEOUT", DEFAULT_TIMEOUT)


def connect_timeout() -> float:
    """How long a rank waits to reach the master and to see every rank: ``DYNAGNN_CONNECT_TIMEOUT``
    seconds (default 60)."""
    return env_seconds("DYNAGNN_CONNECT_TIMEOUT", DEFAULT_CONNECT_TIMEOUT)


def available_cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def check_workers(workers: int, procs_per_worker: int = 1) -> None:
    if int(workers) < 1:
        raise ConfigError(f"--workers {workers}: need at least 1 worker")
    if int(procs_per_worker) < 1:
        raise ConfigError(f"procs_per_worker {procs_per_worker}: need at least 1 process per worker")
