"""The contract every refused input keeps, asserted one way for the bad-input table (issue 18).

A refused command exits with status 2, prints exactly one line on stderr (``dynagnn <stage>: error: ...``),
never a traceback, and leaves nothing behind: no output file, no temporary store, no half-written table.
The table's rows live in the ``test_*.py`` files beside this one, one file per area.
"""

from __future__ import annotations

import gc
import re
import subprocess
import sys
from pathlib import Path

from dynagnn.cli import main

TINY_NODES = 40  # nodes of the tiny intact store (conftest.py's intact)


def snapshot(root: Path) -> dict[str, bytes | None]:
    """Every path under root with its bytes (None for a folder): what a refused write must not change."""
    return {str(p.relative_to(root)): (None if p.is_dir() else p.read_bytes()) for p in root.rglob("*")}


def dead_pid() -> int:
    """The pid of a process that has exited (a killed writer's, for its stale temporaries)."""
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def tree(root: Path) -> set[str]:
    """Every path under root (hidden ones included), relative, so a test sees anything written."""
    return {str(p.relative_to(root)) for p in root.rglob("*")} if root.exists() else set()


def assert_refused(capfd, argv: list[str], watch: Path, message: str | None = None) -> str:
    """Run ``dynagnn argv`` in this process and assert the refusal contract; returns the error line.

    watch: the folder whose contents must be the same after the command as before (the test's
    tmp_path, holding the inputs and every output path of argv). message: a regular expression the
    error line must contain.
    """
    before = tree(watch)
    # garbage an earlier test left (a Dask client's unretrieved future logs when collected) must not
    # land in this command's stderr: collect it now, and drop what it printed
    gc.collect()
    capfd.readouterr()
    try:
        rc = main(["-q", *argv])
    except SystemExit as exc:  # argparse exits itself; its status still counts
        rc = exc.code
    out, err = capfd.readouterr()
    lines = [line for line in err.splitlines() if line.strip()]
    assert "Traceback" not in err and "Traceback" not in out, err
    assert rc == 2, f"exit {rc}, stderr: {err}"
    assert len(lines) == 1, f"stderr is not one line: {err!r}"
    assert lines[0].startswith("dynagnn "), lines[0]
    if message is not None:
        assert re.search(message, lines[0]), f"{message!r} not in {lines[0]!r}"
    after = tree(watch)
    assert after == before, f"left behind: {sorted(after - before)}; removed: {sorted(before - after)}"
    return lines[0]
