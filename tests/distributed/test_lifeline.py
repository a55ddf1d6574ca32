"""A child dies with its parent (distributed/lifeline.py): each mechanism alone is enough, and a
parent that died before the child asked is noticed; the rendezvous of a group the environment
names completes, or names the ranks that never came."""

import multiprocessing as mp
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import psutil
import pytest

from dynagnn.distributed import lifeline
from dynagnn.distributed.context import DistError
from dynagnn.distributed.launch import _rendezvous, release_fork_server

HERE = Path(__file__).resolve().parent


def _child(mode: str) -> None:
    if mode == "watch":      # the pipe alone: no parent-death signal
        lifeline._set_pdeathsig = lambda sig: False
    elif mode == "signal":   # the parent-death signal alone: no watching thread
        lifeline._watch = lambda sentinel: None
    release_fork_server()    # as a worker does (a fork server's child; nothing for a spawned one)
    lifeline.die_with_parent()
    print("ready", flush=True)
    time.sleep(300)


def parent(mode: str, method: str = "spawn") -> None:
    """Run in a subprocess: start a child (``method``: spawn, or forkserver as the launcher starts
    workers), print its pid, sleep until killed."""
    p = mp.get_context(method).Process(target=_child, args=(mode,))
    p.start()
    print(p.pid, flush=True)
    time.sleep(300)


@pytest.mark.parametrize("mode, method", [("both", "spawn"), ("watch", "spawn"), ("signal", "spawn"),
                                          ("watch", "forkserver"), ("signal", "forkserver")])
def test_a_child_dies_when_its_parent_is_killed(mode, method):
    """Each mechanism alone kills the child; for a fork server's child the parent-death signal comes
    when the server exits, which it does once the launcher is gone and no child holds its pipe."""
    proc = subprocess.Popen([sys.executable, "-c", f"import test_lifeline as t; t.parent({mode!r}, {method!r})"], cwd=HERE,
                            env={**os.environ, "PYTHONPATH": f"{HERE}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"},
                            stdout=subprocess.PIPE)
    try:
        child = psutil.Process(int(proc.stdout.readline()))
        assert proc.stdout.readline().strip() == b"ready"   # the child has called die_with_parent
        proc.kill()
        proc.wait(10)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            try:
                if child.status() == psutil.STATUS_ZOMBIE:
                    break
            except psutil.NoSuchProcess:
                break
            time.sleep(0.05)
        else:
            child.kill()
            raise AssertionError(f"the child outlived its parent ({mode}, {method})")
    finally:
        proc.kill()


def test_a_parent_gone_before_the_child_asked_is_noticed():
    code = "from dynagnn.distributed.lifeline import die_with_parent; die_with_parent(parent_pid=1); print('alive')"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == 1 and "alive" not in out.stdout


def _port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_a_rendezvous_completes_and_names_the_ranks_that_never_came():
    port = _port()
    stores, errors = {}, []

    def rank(r):
        try:
            stores[r] = _rendezvous("127.0.0.1", port, r, 2, 10.0, 30.0)
        except Exception as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=rank, args=(r,)) for r in (0, 1)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert not errors and set(stores) == {0, 1}
    stores[0].set("k", "v")
    assert stores[1].get("k") == b"v"
    del stores

    t0 = time.monotonic()
    with pytest.raises(DistError, match=r"the job's 3 processes did not all meet at 127\.0\.0\.1:\d+ within 1 s: "
                                        r"ranks 1, 2 never came"):
        _rendezvous("127.0.0.1", _port(), 0, 3, 1.0, 30.0)
    assert time.monotonic() - t0 < 10
