"""The cores other jobs keep busy (cpu_load.py): the machine's busy time less this process's own,
read from /proc/stat; the cores left to auto by that count."""

import os
import subprocess
import sys

import pytest

from dynagnn import cpu_load
from dynagnn.cpu_load import Mark, between, cores_left
from dynagnn.errors import ConfigError


def _stat(tmp_path, rows):
    """A /proc/stat of the CPUs ``rows`` ({cpu: (user, system, idle, iowait)} in ticks)."""
    lines = ["cpu  0 0 0 0 0 0 0 0 0 0"]
    for cpu, (user, system, idle, iowait) in rows.items():
        lines.append(f"cpu{cpu} {user} 0 {system} {idle} {iowait} 0 0 0 0 0")
    path = tmp_path / "stat"
    path.write_text("\n".join(lines + ["intr 1 2 3", "ctxt 9"]) + "\n")
    return str(path)


def test_busy_is_every_state_but_idle_and_iowait_on_our_cpus(tmp_path, monkeypatch):
    tick = os.sysconf("SC_CLK_TCK")
    monkeypatch.setattr(cpu_load, "_cpus", lambda: {0, 2})
    monkeypatch.setattr(cpu_load, "STAT", _stat(tmp_path, {0: (100, 50, 999, 7), 1: (5000, 0, 0, 0),
                                                           2: (10, 0, 3, 0)}))
    got = cpu_load.mark()
    assert got.busy == pytest.approx((100 + 50 + 10) / tick)   # cpu1 is not ours; idle and iowait are not busy
    monkeypatch.setattr(cpu_load, "STAT", str(tmp_path / "gone"))
    assert cpu_load.mark() is None


def test_between_leaves_out_our_own_cpu():
    since, now = Mark(busy=10.0, own=1.0, wall=100.0), Mark(busy=13.0, own=2.0, wall=102.0)
    assert between(since, now) == pytest.approx((3.0 - 1.0) / 2.0)
    assert between(since, Mark(busy=10.5, own=2.0, wall=101.0)) == 0.0   # jiffies round: never below zero


@pytest.mark.parametrize("busy, total, cores, left", [
    (0.0, 2, 2, 2), (0.4, 2, 2, 2), (0.6, 2, 2, 1), (1.9, 2, 2, 1), (3.0, 2, 2, 1),   # at least one
    (1.0, 4, 2, 2), (2.6, 4, 4, 1), (1.2, 4, 4, 3),
    (0.0, 2, 4, 4), (0.3, 2, 3, 3), (1.0, 2, 4, 1)])   # more asked than CPUs: kept where all are free
def test_cores_left(busy, total, cores, left):
    assert cores_left(cores, busy, total) == left


def test_the_environment_says_it(monkeypatch):
    monkeypatch.setenv("DYNAGNN_OTHERS_BUSY", "1.5")
    assert cpu_load.others_busy() == 1.5 and cpu_load.free_cores(4)[0] == max(1, min(4, len(cpu_load._cpus()) - 2))
    for bad in ("many", "inf", "nan", "-1"):
        monkeypatch.setenv("DYNAGNN_OTHERS_BUSY", bad)
        with pytest.raises(ConfigError, match=f"DYNAGNN_OTHERS_BUSY='{bad}': the cores other jobs keep busy"):
            cpu_load.others_busy()


def test_a_start_s_mark_serves_one_reading(tmp_path, monkeypatch):
    """The first reading is over the window since the start's mark; the next (a second choice in the
    same process) waits out a window of its own, not one holding the first run's training; a reading
    within REUSE_SECONDS is reused."""
    tick = os.sysconf("SC_CLK_TCK")
    monkeypatch.delenv("DYNAGNN_OTHERS_BUSY")
    monkeypatch.setattr(cpu_load, "_cpus", lambda: {0})
    monkeypatch.setattr(cpu_load, "_FIRST", None)
    monkeypatch.setattr(cpu_load, "_LAST", None)
    clock, busy_ticks, own = [100.0], [0], [0.0]
    monkeypatch.setattr(cpu_load, "_clock", lambda: clock[0])
    monkeypatch.setattr(cpu_load, "_sleep", lambda s: clock.__setitem__(0, clock[0] + s))
    monkeypatch.setattr(cpu_load, "_times", lambda: os.times_result((own[0], 0.0, 0.0, 0.0, 0.0)))

    def stat():
        monkeypatch.setattr(cpu_load, "STAT", _stat(tmp_path, {0: (busy_ticks[0], 0, 0, 0)}))
    stat()
    cpu_load.note_start()
    clock[0] += 2.0                        # 2 s of imports: 1.5 s busy, 0.5 s of it ours
    busy_ticks[0], own[0] = int(1.5 * tick), 0.5
    stat()
    assert cpu_load.others_busy() == pytest.approx(0.5) and cpu_load._FIRST is None
    clock[0] += 1.0                        # within REUSE_SECONDS: the same reading
    busy_ticks[0] += tick
    stat()
    assert cpu_load.others_busy() == pytest.approx(0.5)
    clock[0] += 60.0                       # a second choice a minute later: others' 60 s of load not read
    busy_ticks[0] += 60 * tick
    stat()
    assert cpu_load.others_busy() == 0.0   # its own window of MIN_WINDOW, nothing busy in it
    assert clock[0] == pytest.approx(163.0 + cpu_load.MIN_WINDOW)


def test_a_busy_child_is_counted():
    """A child spinning for 0.6 s of its own CPU is others' load: at least its own CPU seconds over
    the window (other jobs only add). Our own CPU is left out (test_between_leaves_out_our_own_cpu)."""
    since = cpu_load.mark()
    if since is None:
        pytest.skip("no /proc/stat here")
    child = subprocess.run([sys.executable, "-c", (
        "import os, time\nt = time.process_time()\nwhile time.process_time() - t < 0.6: pass\n"
        "u = os.times(); print(u.user + u.system)")], capture_output=True, text=True, check=True)
    spun = float(child.stdout)
    now = cpu_load.mark()
    tick = 1 / os.sysconf("SC_CLK_TCK")
    assert between(since, now) * (now.wall - since.wall) >= spun - 4 * tick * len(cpu_load._cpus() or [0])
