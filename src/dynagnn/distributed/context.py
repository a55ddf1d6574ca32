"""Who a training process is: rank, world size, device, backend, and its co-located group."""

from __future__ import annotations

import os
from dataclasses import dataclass, field

import torch
import torch.distributed as dist

from dynagnn.distributed.environment import refuse_mismatch, under_torchrun
from dynagnn.errors import DynagnnError


class DistError(DynagnnError):
    """A worker died, a peer could not be reached, or the workers disagree: training stops."""


@dataclass
class DistContext:
    """One process of a (possibly one-process) training job.

    ``rank`` in [0, world_size); ``local_rank``: index among the processes of this machine;
    ``device``: where this process computes (``cuda:local_device`` on GPU, ``cpu`` otherwise);
    ``backend``: "gloo", "nccl" or None when no process group exists (world size 1);
    ``procs_per_worker``: processes sharing one device (BLAD's co-located pair); ``colocated``: the
    process group of those processes (None when there is one per device).
    """

    rank: int = 0
    world_size: int = 1
    local_rank: int = 0
    device: torch.device = field(default_factory=lambda: torch.device("cpu"))
    backend: str | None = None
    procs_per_worker: int = 1
    colocated: object | None = None

    @property
    def is_main(self) -> bool:
        return self.rank == 0

    @property
    def local_processes(self) -> int:
        """The job's processes on this machine: under torchrun its ``LOCAL_WORLD_SIZE`` (a positive
        number), else the whole job (dynagnn's launcher starts every process on one machine; a
        stray variable in the shell is not torchrun's)."""
        if under_torchrun():
            try:
                return max(1, int(os.environ["LOCAL_WORLD_SIZE"]))
            except (KeyError, ValueError):
                pass
        return max(1, int(self.world_size))

    @property
    def distributed(self) -> bool:
        """Whether collectives go through a process group (world size > 1)."""
        return self.world_size > 1 and dist.is_available() and dist.is_initialized()

    @property
    def worker(self) -> int:
        """The worker (device) this process belongs to."""
        return self.rank // self.procs_per_worker

    @property
    def workers(self) -> int:
        return self.world_size // self.procs_per_worker

    @classmethod
    def single(cls, device: torch.device | str = "cpu") -> "DistContext":
        """The context of a plain one-process run (no process group). Refused (ConfigError, one line)
        where torchrun's variables, left in the shell, name a group of several processes: the user
        meant a job of that many, or did not mean them at all."""
        refuse_mismatch(1, 1)
        return cls(device=torch.device(device))
