"""A child process dies with its parent, whatever killed the parent (issue 34).

A training job is a tree of processes: the launcher, its workers (:mod:`.launch`), and each worker's
BGL sampler processes (:mod:`dynagnn.train.stages`). A child left running when its parent is
killed by SIGKILL (the OOM killer), SIGTERM (SLURM, ``timeout``) or SIGHUP (a closed terminal)
keeps training, holds memory and writes files after the job has failed. ``daemon=True`` does not
prevent that: multiprocessing terminates daemonic children only when the parent exits normally.

So every child calls :func:`die_with_parent` first thing. It uses two mechanisms, each enough alone:

* **Linux's parent-death signal**: ``prctl(PR_SET_PDEATHSIG, SIGKILL)`` asks the kernel to kill this
  process the moment its parent thread ends, however it ends. A worker's parent is the fork server
  (:mod:`.launch`), which exits as soon as the launcher is gone (each worker first closes its copy of
  the launcher's end of the server's pipe, which would keep the server alive). The parent may have died before the
  call; then the sentinel below reads an end of file at once (or, without one, ``os.getppid()`` is
  no longer the parent's pid), and the child exits.
* **The parent's sentinel**: a spawned child holds the read end of a pipe whose only write end is
  its parent's; the kernel closes it when the parent dies, so a thread waiting on it wakes with an
  end of file and kills the process. This works where prctl does not exist (macOS), and also when
  the parent process lives on but dropped the child (the multiprocessing ``Process`` object was
  garbage-collected while the child ran).

:func:`stop_children` is the other half, for a process about to ``os._exit``: the processes it
started stop now (they would die of the parent-death signal anyway) and the semaphores it made
(tqdm's and numcodecs' locks, multiprocessing queues) are unlinked, as a normal exit would, so the
resource tracker has nothing to call leaked.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import logging
import multiprocessing
import multiprocessing.connection
import multiprocessing.util
import os
import signal
import sys
import threading

log = logging.getLogger(__name__)

PR_SET_PDEATHSIG = 1


def _set_pdeathsig(sig: int) -> bool:
    """Ask Linux to send ``sig`` to this process when its parent thread ends; False where it cannot."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or None, use_errno=True)
        return libc.prctl(PR_SET_PDEATHSIG, int(sig), 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


def _watch(sentinel: int) -> None:
    try:
        multiprocessing.connection.wait([sentinel])
    except OSError:
        pass
    os.kill(os.getpid(), signal.SIGKILL)


def die_with_parent(parent_pid: int | None = None) -> None:
    """Make this process die when its parent does (module docstring); call it first thing in a
    child. ``parent_pid``: the parent's pid where this is not a multiprocessing child (default: the
    one multiprocessing recorded)."""
    parent = multiprocessing.parent_process()
    pid = parent.pid if parent is not None else parent_pid
    _set_pdeathsig(signal.SIGKILL)
    sentinel = getattr(parent, "sentinel", None)
    if sentinel is not None:
        # the watch sees a parent that died before the signal was asked for (an end of file at once)
        threading.Thread(target=_watch, args=(sentinel,), daemon=True, name="dynagnn-lifeline").start()
    elif pid is not None and os.getppid() != pid:  # the parent died before the signal was asked for
        os._exit(1)


def stop_children(grace: float = 1.0) -> None:
    """Before ``os._exit``: stop the processes this one started (SIGTERM, then SIGKILL after
    ``grace`` seconds) and run multiprocessing's exit finalizers (they unlink this process's
    semaphores). Never raises."""
    try:
        children = multiprocessing.active_children()
        for p in children:
            p.terminate()
        for p in children:
            p.join(grace)
            if p.is_alive():
                p.kill()
                p.join(grace)
    except Exception:  # pragma: no cover - best effort on the way out
        log.debug("stopping child processes failed", exc_info=True)
    try:
        multiprocessing.util._run_finalizers(0)
    except Exception:  # pragma: no cover
        log.debug("multiprocessing finalizers failed", exc_info=True)
