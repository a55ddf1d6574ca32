"""Start the processes of a training job, or join the group torchrun made.

``launch(fn, workers, *args)`` runs ``fn(ctx, *args)`` on ``workers × procs_per_worker`` processes and
returns what each rank returned, in rank order:

* **Local** (the default): P processes are started on this machine by multiprocessing's
  ``forkserver``: a server process, started once per launching process, imports torch and the
  training code once (:func:`worker_context`), and each worker is a fork of it, so a worker starts in
  milliseconds instead of importing torch again (about 2 s of CPU each). Never a plain fork of the
  launcher: a forked child of a process whose OpenMP pool is running can deadlock, and the server
  runs no tensor operation. A worker takes the launcher's environment and working directory as they
  are when it starts (the server's are those of its own start), but its standard output and error
  are those the server was started with: the first launch's. They form a process group over TCP
  on 127.0.0.1 with gloo on CPU and nccl on GPU (one GPU per worker, ``cuda:worker``); each process
  gets its share of the cores (``torch.set_num_threads``).
* **torchrun**: when torchrun started this process (``RANK``, ``WORLD_SIZE`` and ``MASTER_ADDR`` set,
  and torchrun's own ``TORCHELASTIC_RUN_ID``, ``GROUP_RANK`` or ``LOCAL_WORLD_SIZE``), it is one rank of
  a job torchrun started (possibly across machines). It joins that group and runs ``fn`` itself; the
  list holds only its own result at index 0. Spawning and restarting is torchrun's job.
* **Torchrun's variables without torchrun** (left in a shell, or set by another launcher): the job's
  ``workers × procs_per_worker`` must equal ``WORLD_SIZE``, else it is refused at once, in one line
  (:func:`check_environment`); when they agree, this process joins that group as rank ``RANK``, as
  it would under torchrun.

Joining a group (torchrun's, or one named by the environment) is a rendezvous first: every rank
announces itself in the master's store, and one that does not see all ``WORLD_SIZE`` ranks within
``DYNAGNN_CONNECT_TIMEOUT`` seconds (default 60) stops with one line naming the ranks that never
came, not after the process group's timeout with a ``DistStoreError``.

Lifetime: a worker dies with its launcher, whatever killed it (:mod:`.lifeline`: Linux's
parent-death signal, and a thread watching the launcher's end of a pipe); the launcher stops its
workers on SIGTERM and SIGHUP and raises :class:`JobStopped` (the command exits non-zero). A SIGINT
to one worker ends the job the same way, naming the worker (workers start with SIGINT ignored until
they can report it: the fork server is started with it ignored and passes that on). Results
come back through one pipe per worker, so no semaphore is left for the resource tracker to call
leaked.

Failure: a worker that raises or dies (a signal, ``os._exit``) ends the job. The parent sees the
exit at once (it waits on the processes' sentinels), terminates the other workers, and raises one
error naming the worker and the cause; a worker blocked in a collective with a dead peer is also
released by gloo's connection error or, at worst, the process group's timeout (``timeout`` seconds,
default 600 or ``DYNAGNN_DIST_TIMEOUT``). A :class:`~dynagnn.errors.DynagnnError` raised in a worker
(a bad config found on rank 0) is raised again in the parent with its own class and message; a
:class:`~dynagnn.distributed.context.DistError` (a worker saw its peer go) yields to the dead worker's own cause.
"""

from __future__ import annotations

import contextlib
import datetime
import logging
import math
import multiprocessing as mp
import multiprocessing.connection
import os
import pickle
import signal
import socket
import sys
import threading
import time
import traceback
from typing import Any, Callable

import torch
import torch.distributed as dist

from dynagnn.distributed.context import DistContext, DistError
from dynagnn.distributed.environment import (DEFAULT_CONNECT_TIMEOUT, DEFAULT_TIMEOUT, available_cores,  # noqa: F401
                                             check_environment, check_workers, connect_timeout, default_timeout,
                                             env_seconds, group_in_environment, refuse_mismatch, under_torchrun)
from dynagnn.distributed.lifeline import die_with_parent, stop_children
from dynagnn.errors import ConfigError, DynagnnError

log = logging.getLogger(__name__)

EXIT_GRACE = 10.0  # seconds workers that reported success get to exit before they are terminated
PORT_TRIES = 3  # starts of the workers, each on a fresh port, when the one picked was taken before rank 0 listened


class JobStopped(DistError):
    """The launcher was told to stop (SIGTERM, SIGHUP): its workers were stopped."""


def _port_taken(exc: BaseException) -> bool:
    """Whether a worker's failure to join is the rendezvous port taken between the launcher's pick
    and rank 0's listen (another process got that ephemeral port meanwhile)."""
    text = f"{type(exc).__name__}: {exc}"
    return "EADDRINUSE" in text or "address already in use" in text.lower()


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


def backend_on(dev: torch.device, ppw: int, local_workers: int) -> str:
    """nccl where every process of this machine has a GPU of its own, else gloo: nccl refuses two
    ranks on one GPU (BLAD's co-located pair, or more workers than GPUs, as in the tests' two workers
    on one GPU), and :class:`~dynagnn.distributed.comm.Comm` then stages CUDA tensors through host
    memory."""
    if dev.type != "cuda" or ppw > 1 or local_workers > torch.cuda.device_count():
        return "gloo"
    return "nccl"


def _init(rank: int, world: int, local_rank: int, dev: torch.device, ppw: int, timeout: float,
          init_method: str | None = None, store=None, local_workers: int = 1) -> DistContext:
    if dev.type == "cuda":
        torch.cuda.set_device(dev)
    backend = backend_on(dev, ppw, local_workers)
    dist.init_process_group(backend, init_method=init_method, store=store, rank=rank, world_size=world,
                            timeout=datetime.timedelta(seconds=timeout))
    return DistContext(rank, world, local_rank, dev, backend, ppw, _colocated_group(rank, world, ppw))


def release_fork_server() -> None:
    """Close this worker's copy of the launcher's end of the fork server's "alive" pipe (the server
    hands it to every child it forks). Held here, it would keep the server running after the
    launcher died, and the parent-death signal, tied to the server, would never come."""
    server = getattr(sys.modules.get("multiprocessing.forkserver"), "_forkserver", None)
    fd = getattr(server, "_forkserver_alive_fd", None)  # None: not a fork server's child
    if fd is not None:
        with contextlib.suppress(OSError):
            os.close(fd)
        server._forkserver_alive_fd = None


def _child(rank: int, world: int, port: int, device, ppw: int, threads: int, timeout: float,
           fn: Callable, args: tuple, report, environ: dict[str, str], catch_sigint: bool) -> None:
    """One worker: ``fn``'s result (or its failure) goes back through ``report``, this worker's end of
    its pipe to the launcher; it dies with the launcher (:func:`~.lifeline.die_with_parent`).
    ``environ``: the launcher's environment now (the fork server's is that of its own start).
    ``catch_sigint``: the launcher acts on SIGINT (not a background job that ignores it)."""
    release_fork_server()
    die_with_parent()
    if os.environ != environ:
        os.environ.clear()
        os.environ.update(environ)
    if catch_sigint:
        # started with SIGINT ignored (one arriving before this line is lost, not a traceback); from
        # here a SIGINT ends this worker, reported as such
        signal.signal(signal.SIGINT, signal.default_int_handler)
    code = 0
    joined = False
    try:
        torch.set_num_threads(threads)
        ctx = _init(rank, world, rank, _device_of(device, rank // ppw), ppw, timeout, f"tcp://127.0.0.1:{port}",
                    local_workers=world // ppw)
        joined = True
        out = fn(ctx, *args)
        # plain pickle: torch's reducer would share tensors through file descriptors of a process
        # that is about to exit
        message = ("ok", pickle.dumps(out))
    except BaseException as exc:  # reported to the parent, which decides what the user sees
        code = 1
        if isinstance(exc, KeyboardInterrupt):
            message = ("user", (JobStopped, f"worker {rank} was interrupted (SIGINT): the other workers were "
                                            "stopped; nothing was written"))
        elif not joined and _port_taken(exc):   # before fn ran anywhere: the launcher tries another port
            message = ("port", " ".join(str(exc).split())[:200])
        elif isinstance(exc, DynagnnError):
            message = ("user", (type(exc), str(exc)))
        else:
            last = traceback.format_exception_only(type(exc), exc)[-1].strip()
            message = ("crash", (last, traceback.format_exc()))
    finally:
        if dist.is_initialized():
            try:
                dist.destroy_process_group()
            except Exception:
                pass
    try:
        report.send_bytes(pickle.dumps(message))
        report.close()
    except Exception:  # the launcher is gone (it would have killed us) or the result does not pickle
        code = code or 1
    stop_children()  # the samplers this worker started; the semaphores it made (tqdm's, numcodecs')
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


@contextlib.contextmanager
def _handlers(handlers: dict):
    """Signal handlers set for the block and restored after it; nothing off the main thread (where
    Python cannot set them)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    old = {}
    for s, h in handlers.items():
        with contextlib.suppress(ValueError, OSError):
            old[s] = signal.signal(s, h)
    try:
        yield
    finally:
        for s, h in old.items():
            signal.signal(s, h)


def _stop_on(signals=(signal.SIGTERM, signal.SIGHUP)):
    """While the launcher waits for its workers: SIGTERM or SIGHUP raise :class:`JobStopped` (once;
    a second signal during the clean-up is ignored, so the workers are still stopped)."""
    got: list[int] = []

    def handler(signum, frame):
        if got:
            return
        got.append(signum)
        raise JobStopped(f"stopped by {signal.Signals(signum).name}: the workers were stopped; nothing was written")

    return _handlers({s: handler for s in signals})


def _sigint_ignored():
    return _handlers({signal.SIGINT: signal.SIG_IGN})


def worker_context(fn: Callable):
    """The multiprocessing context workers start from: ``forkserver`` (module docstring), whose server
    imports torch and the module of ``fn`` (for training, the whole training code) before its first
    fork; ``spawn`` where there is no fork server (not on Linux or macOS). The server is started
    here, at the first launch of a process, and serves every later one."""
    if "forkserver" not in mp.get_all_start_methods():
        return mp.get_context("spawn")
    import multiprocessing.forkserver as forkserver

    ctx = mp.get_context("forkserver")
    ctx.set_forkserver_preload(["torch", "torch.distributed", fn.__module__])
    # the server starts with SIGINT ignored and passes that on to every worker; its imports (a second
    # or more) run with the launcher's SIGINT still live, so a Ctrl-C then is not lost
    with _sigint_ignored():
        forkserver.ensure_running()
    return ctx


def launch(fn: Callable[..., Any], workers: int, *args, procs_per_worker: int = 1,
           device: str | torch.device = "cpu", threads: int | None = None,
           timeout: float | None = None) -> list[Any]:
    """Run ``fn(ctx, *args)`` on ``workers × procs_per_worker`` processes; each rank's result, by rank.

    ``fn`` and ``args`` must be picklable (a module-level function). ``threads``: torch threads per
    process (default: this machine's cores divided among the processes, at least 1).
    """
    check_workers(workers, procs_per_worker)
    timeout = default_timeout() if timeout is None else float(timeout)
    if check_environment(workers, procs_per_worker):
        return [_run_torchrun(fn, args, procs_per_worker, device, threads, timeout)]
    world = int(workers) * int(procs_per_worker)
    threads = int(threads) if threads else max(1, available_cores() // world)
    catch_sigint = signal.getsignal(signal.SIGINT) is not signal.SIG_IGN
    ctx = worker_context(fn)
    environ = dict(os.environ)
    for attempt in range(PORT_TRIES):
        outs, failures, procs = _start_and_wait(ctx, world, _free_port(), device, procs_per_worker, threads, timeout,
                                                fn, args, environ, catch_sigint)
        taken = [payload for kind, payload in failures.values() if kind == "port"]
        if not taken or attempt == PORT_TRIES - 1:
            break
        log.debug("the rendezvous port was taken before rank 0 listened (%s): starting the workers again on "
                  "another", taken[0])
    if failures:
        raise _failure(procs, failures)
    return [outs[r] for r in range(world)]


def _start_and_wait(ctx, world, port, device, procs_per_worker, threads, timeout, fn, args, environ,
                    catch_sigint) -> tuple[dict, dict, list]:
    """One start of the ``world`` workers on the rendezvous ``port``: (results, failures, processes),
    every worker stopped and joined when it returns."""
    outs: dict[int, Any] = {}
    failures: dict[int, tuple[str, Any]] = {}
    procs: list = []
    readers: list = []
    with _stop_on():
        try:
            for r in range(world):
                reader, writer = ctx.Pipe(duplex=False)
                p = ctx.Process(target=_child, args=(r, world, port, device, procs_per_worker, threads, timeout,
                                                     fn, args, writer, environ, catch_sigint), daemon=True,
                                name=f"dynagnn-worker-{r}")
                # spawn's workers inherit an ignored SIGINT through exec (a fork server's from the
                # server); the start waits for the server's imports, when a Ctrl-C must still act
                with _sigint_ignored() if ctx.get_start_method() == "spawn" else contextlib.nullcontext():
                    p.start()
                writer.close()  # the worker holds the only write end: its death reads as an end of file
                procs.append(p)
                readers.append(reader)
            _supervise(procs, readers, outs, failures)
            if not failures:  # every worker reported: let them finish their exit (they release what they hold)
                deadline = time.monotonic() + EXIT_GRACE
                for p in procs:
                    p.join(max(0.0, deadline - time.monotonic()))
        finally:
            for p in procs:
                if p.is_alive():
                    p.terminate()
            for p in procs:
                p.join(5)
                if p.is_alive():
                    p.kill()
                    p.join()
            for reader in readers:
                reader.close()
    return outs, failures, procs


def _read(reader) -> tuple[str, Any] | None:
    """A worker's report from its pipe; None when it ended without one."""
    try:
        kind, payload = pickle.loads(reader.recv_bytes())
    except (EOFError, OSError):
        return None
    except Exception as exc:  # a result that does not unpickle here
        return "crash", (f"its result could not be read: {exc}", traceback.format_exc())
    if kind == "ok":
        try:
            return kind, pickle.loads(payload)
        except Exception as exc:
            return "crash", (f"its result could not be read: {exc}", traceback.format_exc())
    return kind, payload


def _supervise(procs, readers, outs, failures) -> None:
    """Wait until every worker reported, or until one failed (then give the others a moment to
    report their side and return: the caller terminates whoever is left)."""
    pipes = {reader: r for r, reader in enumerate(readers)}
    sentinels = {p.sentinel: r for r, p in enumerate(procs)}
    failed_at = None

    def take(r: int) -> None:
        reader = readers[r]
        if reader not in pipes:
            return
        del pipes[reader]
        report = _read(reader)
        if report is None:
            return
        kind, payload = report
        if kind == "ok":
            outs[r] = payload
        else:
            failures[r] = (kind, payload)

    while len(outs) + len(failures) < len(procs):
        ready = multiprocessing.connection.wait(list(pipes) + list(sentinels), timeout=0.1)
        for obj in ready:  # reports first: a worker writes its report before it exits
            if obj in pipes:
                take(pipes[obj])
        for obj in ready:
            if obj in sentinels:
                r = sentinels.pop(obj)
                procs[r].join()
                take(r)  # what it wrote before it exited, if anything
                if r not in outs and r not in failures:
                    failures[r] = ("died", procs[r].exitcode)
        if failures and failed_at is None:
            failed_at = time.monotonic()
        if failed_at is not None and (not sentinels or time.monotonic() - failed_at > 2.0):
            return


def _failure(procs, failures: dict[int, tuple[str, Any]]) -> Exception:
    """One error for the user: the root cause, not the peers' complaints about it."""
    for r, (kind, payload) in sorted(failures.items()):  # a user's error, or a worker told to stop
        if kind == "user" and (not issubclass(payload[0], DistError) or issubclass(payload[0], JobStopped)):
            return _user_error(*payload)
    for r, (kind, payload) in sorted(failures.items()):
        if kind == "port":
            return DistError(f"worker {r} could not open the rendezvous on 127.0.0.1 in {PORT_TRIES} tries, each "
                             f"port taken by another process first ({payload}); nothing was written")
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


def _rendezvous(addr: str, port: int, rank: int, world: int, wait: float, timeout: float):
    """The store of the group the environment names, once every rank has announced itself in it.

    Rank 0 hosts it (unless torchrun's agent already does); each rank adds itself and waits up to
    ``wait`` seconds for all ``world``: one that is missing by then stops the job with one line naming
    the missing ranks (the process group's own wait would last its ``timeout``, then print a
    ``DistStoreError`` traceback). Returns the store the process group uses (its timeout ``timeout``).
    """
    agent = os.environ.get("TORCHELASTIC_USE_AGENT_STORE") == "True"
    host = rank == 0 and not agent
    if not host:
        _check_master(addr, port, wait)
    try:
        store = dist.TCPStore(addr, port, world_size=None, is_master=host, timeout=datetime.timedelta(seconds=wait),
                              wait_for_workers=False, multi_tenant=True)
    except Exception as exc:  # DistStoreError, RuntimeError: the port is taken, the master went away
        what = f"host the job's store on {addr}:{port}" if host else f"join the job's store at {addr}:{port}"
        raise DistError(f"cannot {what} (MASTER_ADDR/MASTER_PORT): {' '.join(str(exc).split())[:300]}") from None
    # an attempt's own keys: torchrun's agent keeps its store across restarts of the workers
    attempt = f"dynagnn/{os.environ.get('TORCHELASTIC_RUN_ID', 'env')}/{os.environ.get('TORCHELASTIC_RESTART_COUNT', '0')}"
    deadline = time.monotonic() + wait
    try:
        store.set(f"{attempt}/rank/{rank}", "1")
        arrived, pause = store.add(f"{attempt}/arrived", 1), 0.02
        while arrived < world:
            if time.monotonic() >= deadline:
                keys = [f"{attempt}/rank/{r}" for r in range(world)]
                missing = [r for r, k in enumerate(keys) if not store.check([k])]
                raise DistError(_missing_ranks(missing, world, addr, port, wait))
            time.sleep(pause)
            pause = min(0.5, pause * 1.5)
            arrived = store.add(f"{attempt}/arrived", 0)
    except DistError:
        raise
    except Exception as exc:  # the host went away while we waited
        raise DistError(f"lost the job's store at {addr}:{port} during the rendezvous of {world} ranks: "
                        f"{' '.join(str(exc).split())[:300]}") from None
    store.set_timeout(datetime.timedelta(seconds=timeout))
    return dist.PrefixStore(f"{attempt}/pg", store)


def _missing_ranks(missing: list[int], world: int, addr: str, port: int, wait: float) -> str:
    shown = ", ".join(str(r) for r in missing[:20]) + (f" and {len(missing) - 20} more" if len(missing) > 20 else "")
    ranks = f"rank{'s' if len(missing) > 1 else ''} {shown}"
    told = "torchrun started this job" if under_torchrun() else \
        "torchrun did not start this process: are RANK, WORLD_SIZE and MASTER_ADDR left over in the shell?"
    return (f"the job's {world} processes did not all meet at {addr}:{port} within {wait:.0f} s: {ranks} never "
            f"came ({told}; DYNAGNN_CONNECT_TIMEOUT sets the wait)")


def _run_torchrun(fn, args, ppw, device, threads, timeout):
    env = os.environ
    try:
        rank, world = int(env["RANK"]), int(env["WORLD_SIZE"])
        local_rank = int(env.get("LOCAL_RANK", 0))
        port = int(env.get("MASTER_PORT", 29500))
    except ValueError as exc:
        raise DistError(f"torchrun environment is malformed ({exc}): RANK, WORLD_SIZE, LOCAL_RANK and "
                        "MASTER_PORT must be integers") from None
    if not 0 <= rank < world or not 0 <= port < 2 ** 16:
        raise DistError(f"torchrun environment is malformed: RANK={rank} of WORLD_SIZE={world}, MASTER_PORT={port}")
    if world % ppw:
        raise ConfigError(f"torchrun started {world} processes, not a multiple of {ppw} per worker")
    addr = env["MASTER_ADDR"]
    wait = min(timeout, connect_timeout())
    try:
        nlocal = int(env.get("LOCAL_WORLD_SIZE", 1))
    except ValueError:
        nlocal = 1
    torch.set_num_threads(int(threads) if threads else max(1, available_cores() // max(1, nlocal)))
    store = _rendezvous(addr, port, rank, world, wait, timeout)
    ctx = _init(rank, world, local_rank, _device_of(device, local_rank // ppw), ppw, timeout, store=store,
                local_workers=max(1, nlocal // ppw))
    try:
        return fn(ctx, *args)
    finally:
        dist.destroy_process_group()
