"""Run a test body on P gloo processes and collect what each returned (tests of multi-worker code).

    def body(ctx, comm, value):          # module level, so the spawned processes can import it
        return comm.all_reduce(torch.tensor([value + ctx.rank])).item()

    assert run_on(2, body, 1.0) == [3.0, 3.0]

``body(ctx, comm, *args)`` runs with a :class:`~dynagnn.distributed.comm.Comm` of the job; each process uses
one torch thread so that P = 2 fits a 2-core machine. A failure in any process raises in the caller
(:func:`~dynagnn.distributed.launch.launch`).
"""

from __future__ import annotations

from typing import Any, Callable

from dynagnn.distributed.comm import Comm
from dynagnn.distributed.launch import launch


def _body(ctx, fn, args):
    return fn(ctx, Comm(ctx), *args)


def run_on(workers: int, fn: Callable[..., Any], *args, timeout: float = 120.0, threads: int = 1,
           procs_per_worker: int = 1, device: str = "cpu") -> list[Any]:
    """``fn(ctx, comm, *args)`` on ``workers × procs_per_worker`` processes; the results in rank order.
    On ``cpu`` they form a gloo group; on ``cuda`` each worker takes ``cuda:worker % GPUs``, with nccl
    where every worker has a GPU of its own and gloo with host staging where they share one."""
    return launch(_body, workers, fn, args, threads=threads, timeout=timeout, procs_per_worker=procs_per_worker,
                  device=device)
