"""Start the processes of a training job, or join the group torchrun made.

``launch(fn, workers, *args)`` runs ``fn(ctx, *args)`` on ``workers × procs_per_worker`` processes and
returns what each rank returned, in rank order:

* **Local** (the default): P processes are spawned on this machine (``spawn`` start method: a forked
  child of a process whose OpenMP pool is running can deadlock). They form a process group over TCP
  on 127.0.0.1 with gloo on CPU and nccl on GPU (one GPU per worker, ``cuda:worker``); each process
  gets its share of the cores (``torch.set_num_threads``).
* **torchrun**: when ``RANK``, ``WORLD_SIZE`` and ``MASTER_ADDR`` are set, this process is one rank of
  a job torchrun started (possibly across machines). It joins that group (``env://``) and runs ``fn``
  itself; the list holds only its own result at index 0. Spawning and restarting is torchrun's job.

Failure: a worker that raises or dies (a signal, ``os._exit``) ends the job. The parent sees the
exit at once (it waits on the processes' sentinels), terminates the other workers, and raises one
error naming the worker and the cause; a worker blocked in a collective with a dead peer is also
released by gloo's connection error or, at worst, the process group's timeout (``timeout`` seconds,
default 600 or ``DYNAGNN_DIST_TIMEOUT``). A :class:`~dynagnn.errors.DynagnnError` raised in a worker
(a bad config found on rank 0) is raised again in the parent with its own class and message; a
:class:`~dynagnn.distributed.context.DistError` (a worker saw its peer go) yields to the dead worker's own cause.
"""

from __future__ import annotations

import datetime
import logging
import multiprocessing as mp
import multiprocessing.connection
import os
import pickle
import queue as queue_mod
import signal
import socket
import time
import traceback
from typing import Any, Callable

import torch
import torch.distributed as dist

from dynagnn.distributed.context import DistContext, DistError
from dynagnn.errors import ConfigError, DynagnnError

log = logging.getLogger(__name__)

DEFAULT_TIMEOUT = 600.0
_TORCHRUN_VARS = ("RANK", "WORLD_SIZE", "MASTER_ADDR")


def under_torchrun() -> bool:
    """Whether torchrun (or any launcher that sets RANK, WORLD_SIZE and MASTER_ADDR) started us."""
    return all(v in os.environ for v in _TORCHRUN_VARS)


def default_timeout() -> float:
    return float(os.environ.get("DYNAGNN_DIST_TIMEOUT", DEFAULT_TIMEOUT))


def available_cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def backend_for(device: str | torch.device) -> str:
    return "nccl" if torch.device(device).type == "cuda" else "gloo"


def check_workers(workers: int, procs_per_worker: int = 1) -> None:
    if int(workers) < 1:
        raise ConfigError(f"--workers {workers}: need at least 1 worker")
    if int(procs_per_worker) < 1:
        raise ConfigError(f"procs_per_worker {procs_per_worker}: need at least 1 process per worker")


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _device_of(device: str | torch.device, worker: int) -> torch.device:
    dev = torch.device(device)
    if dev.type != "cuda":
        return torch.device("cpu")
    if not torch.cuda.is_available():
        raise ConfigError(f"device {device!r} requested but this torch has no CUDA device")
    return torch.device("cuda", worker % torch.cuda.device_count())


def _colocated_group(rank: int, world: int, ppw: int):
    """Every rank creates every co-located group (new_group is collective), keeps its own."""
    mine = None
    if ppw > 1:
        for w in range(world // ppw):
            ranks = list(range(w * ppw, (w + 1) * ppw))
            g = dist.new_group(ranks)
            if rank in ranks:
                mine = g
    return mine


def _init(rank: int, world: int, local_rank: int, dev: torch.device, ppw: int, timeout: float,
          init_method: str) -> DistContext:
    if dev.type == "cuda":
        torch.cuda.set_device(dev)
    # nccl refuses two ranks on one GPU (BLAD's co-located pair): such jobs go through gloo, which
    # all-reduces CUDA tensors and sends host copies
    backend = backend_for(dev) if ppw == 1 else "gloo"
    dist.init_process_group(backend, init_method=init_method, rank=rank, world_size=world,
                            timeout=datetime.timedelta(seconds=timeout))
    return DistContext(rank, world, local_rank, dev, backend, ppw, _colocated_group(rank, world, ppw))


def _child(rank: int, world: int, port: int, device, ppw: int, threads: int, timeout: float,
           fn: Callable, args: tuple, results) -> None:
    code = 0
    try:
        torch.set_num_threads(threads)
        ctx = _init(rank, world, rank, _device_of(device, rank // ppw), ppw, timeout, f"tcp://127.0.0.1:{port}")
        out = fn(ctx, *args)
        # plain pickle: torch's queue reducer would share tensors through file descriptors of a
        # process that is about to exit
        results.put((rank, "ok", pickle.dumps(out)))
    except BaseException as exc:  # reported to the parent, which decides what the user sees
        code = 1
        if isinstance(exc, DynagnnError):
            results.put((rank, "user", (type(exc), str(exc))))
        else:
            last = traceback.format_exception_only(type(exc), exc)[-1].strip()
            results.put((rank, "crash", (last, traceback.format_exc())))
    finally:
        if dist.is_initialized():
            try:
                dist.destroy_process_group()
            except Exception:
                pass
        results.close()
        results.join_thread()
    os._exit(code)  # skip interpreter teardown: a peer may be gone and atexit hooks could block


def _user_error(cls: type, message: str) -> DynagnnError:
    exc = cls.__new__(cls)
    Exception.__init__(exc, message)
    return exc


def _exit_reason(code: int | None) -> str:
    if code is None:
        return "did not exit"
    if code < 0:
        try:
            return f"was killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"was killed by signal {-code}"
    return f"exited with status {code}"


def _peer_error(text: str) -> bool:
    """A worker's error that only says a peer went away (not the cause)."""
    t = text.lower()
    return any(s in t for s in ("connection closed", "connection reset", "broken pipe", "peer", "timed out",
                                "timeout", "connection refused", "socket"))


def launch(fn: Callable[..., Any], workers: int, *args, procs_per_worker: int = 1,
           device: str | torch.device = "cpu", threads: int | None = None,
           timeout: float | None = None) -> list[Any]:
    """Run ``fn(ctx, *args)`` on ``workers × procs_per_worker`` processes; each rank's result, by rank.

    ``fn`` and ``args`` must be picklable (a module-level function). ``threads``: torch threads per
    process (default: this machine's cores divided among the processes, at least 1).
    """
    check_workers(workers, procs_per_worker)
    timeout = default_timeout() if timeout is None else float(timeout)
    if under_torchrun():
        return [_run_torchrun(fn, args, procs_per_worker, device, threads, timeout)]
    world = int(workers) * int(procs_per_worker)
    threads = int(threads) if threads else max(1, available_cores() // world)
    ctx = mp.get_context("spawn")
    results = ctx.Queue()
    port = _free_port()
    procs = [ctx.Process(target=_child, args=(r, world, port, device, procs_per_worker, threads, timeout,
                                               fn, args, results), daemon=True, name=f"dynagnn-worker-{r}")
             for r in range(world)]
    for p in procs:
        p.start()
    outs: dict[int, Any] = {}
    failures: dict[int, tuple[str, Any]] = {}
    try:
        _supervise(procs, results, outs, failures)
    finally:
        for p in procs:
            if p.is_alive():
                p.terminate()
        for p in procs:
            p.join(5)
            if p.is_alive():
                p.kill()
                p.join()
        results.close()
    if failures:
        raise _failure(procs, failures)
    return [outs[r] for r in range(world)]


def _drain(results, outs, failures) -> None:
    while True:
        try:
            rank, kind, payload = results.get_nowait()
        except queue_mod.Empty:
            return
        if kind == "ok":
            outs[rank] = pickle.loads(payload)
        else:
            failures[rank] = (kind, payload)


def _supervise(procs, results, outs, failures) -> None:
    """Wait until every worker reported, or until one failed (then give the others a moment to
    report their side and return: the caller terminates whoever is left)."""
    pending = {p.sentinel: r for r, p in enumerate(procs)}
    failed_at = None
    while pending or len(outs) + len(failures) < len(procs):
        ready = multiprocessing.connection.wait(list(pending), timeout=0.1)
        _drain(results, outs, failures)
        for s in ready:
            r = pending.pop(s)
            procs[r].join()
            if procs[r].exitcode != 0 and r not in failures:
                time.sleep(0.2)  # its report may still be in the pipe
                _drain(results, outs, failures)
                failures.setdefault(r, ("died", procs[r].exitcode))
        if failures and failed_at is None:
            failed_at = time.monotonic()
        if failed_at is not None and (not pending or time.monotonic() - failed_at > 2.0):
            _drain(results, outs, failures)
            return
        if not pending and len(outs) + len(failures) < len(procs):
            _drain(results, outs, failures)
            for r in range(len(procs)):
                if r not in outs and r not in failures:
                    failures[r] = ("died", procs[r].exitcode)
            return


def _failure(procs, failures: dict[int, tuple[str, Any]]) -> Exception:
    """One error for the user: the root cause, not the peers' complaints about it."""
    for r, (kind, payload) in sorted(failures.items()):
        if kind == "user" and not issubclass(payload[0], DistError):
            return _user_error(*payload)
    for r, (kind, payload) in sorted(failures.items()):
        if kind == "died":
            return DistError(f"worker {r} {_exit_reason(procs[r].exitcode)} without reporting an error; "
                             f"the other {len(procs) - 1} worker(s) were stopped and nothing was written")
    crashes = sorted(((r, p) for r, (kind, p) in failures.items() if kind == "crash"), key=lambda kv: _peer_error(kv[1][0]))
    went = [p for r, (kind, p) in sorted(failures.items()) if kind == "user"]  # DistErrors: a peer went away
    if crashes and (not went or not _peer_error(crashes[0][1][0])):  # a cause beats a complaint
        r, (last, tb) = crashes[0]
        log.debug("worker %d traceback:\n%s", r, tb)
        return DistError(f"worker {r} failed: {last} (the other workers were stopped; nothing was written)")
    return _user_error(*went[0])


def _check_master(addr: str, port: int, timeout: float) -> None:
    """Fail fast, with what to change, when torchrun's master cannot be resolved or reached."""
    try:
        socket.getaddrinfo(addr, port)
    except socket.gaierror:
        raise DistError(f"cannot resolve the torchrun master address {addr!r} (MASTER_ADDR): give "
                        "torchrun --rdzv-endpoint / --master-addr a host name or IP every node can reach") from None
    deadline = time.monotonic() + timeout
    while True:
        try:
            with socket.create_connection((addr, port), timeout=min(5.0, timeout)):
                return
        except OSError:
            if time.monotonic() >= deadline:
                raise DistError(f"cannot reach the torchrun master at {addr}:{port} within {timeout:.0f} s: "
                                "check MASTER_ADDR/MASTER_PORT (torchrun --master-addr/--master-port) and "
                                "that the port is open between the nodes") from None
            time.sleep(0.5)


def _run_torchrun(fn, args, ppw, device, threads, timeout):
    env = os.environ
    try:
        rank, world = int(env["RANK"]), int(env["WORLD_SIZE"])
        local_rank = int(env.get("LOCAL_RANK", 0))
        port = int(env.get("MASTER_PORT", 29500))
    except ValueError as exc:
        raise DistError(f"torchrun environment is malformed ({exc}): RANK, WORLD_SIZE, LOCAL_RANK and "
                        "MASTER_PORT must be integers") from None
    if world % ppw:
        raise ConfigError(f"torchrun started {world} processes, not a multiple of {ppw} per worker")
    addr = env["MASTER_ADDR"]
    # rank 0 hosts the store unless torchrun's agent already does
    if rank != 0 or env.get("TORCHELASTIC_USE_AGENT_STORE") == "True":
        _check_master(addr, port, min(timeout, float(env.get("DYNAGNN_CONNECT_TIMEOUT", 60))))
    nlocal = int(env.get("LOCAL_WORLD_SIZE", 1))
    torch.set_num_threads(int(threads) if threads else max(1, available_cores() // nlocal))
    ctx = _init(rank, world, local_rank, _device_of(device, local_rank // ppw), ppw, timeout, "env://")
    try:
        return fn(ctx, *args)
    finally:
        dist.destroy_process_group()
