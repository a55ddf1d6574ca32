"""Atomic writes: a file (or a directory, or a set of them) appears whole or not at all.

Every writer of the library goes through here (DESIGN.md, "Errors": nothing half-written is left
behind). A writer is a function ``write(tmp_path)`` that writes what it would write to the final path
to ``tmp_path`` instead; :func:`write_all` calls each writer with a temporary sibling of its target
(``.<name>.tmp-<pid>-<random>``, in the same folder, so that the rename is atomic), and renames the
temporaries over the targets only once every writer has succeeded. An error in a writer removes every
temporary and leaves every target as it was. Each rename is atomic, the set of renames is not: a
crash (not an error) between two of them leaves some targets new and some old, never one half-written.

A directory target (the Zarr store) is replaced by renaming the old one aside first; that is two
renames, so a crash between them leaves the new directory under its temporary name and no target,
never a mixture of old and new.
"""

from __future__ import annotations

import os
import shutil
import uuid
from collections.abc import Callable, Mapping
from pathlib import Path

Writer = Callable[[Path], object]


def temporary_sibling(path: Path, kind: str = "tmp") -> Path:
    """A fresh hidden name beside ``path``: ``.<name>.<kind>-<pid>-<8 hex>``."""
    return path.with_name(f".{path.name}.{kind}-{os.getpid()}-{uuid.uuid4().hex[:8]}")


def _remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path, ignore_errors=True)
    else:
        path.unlink(missing_ok=True)


def _replace(tmp: Path, path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        old = temporary_sibling(path, "old")
        os.replace(path, old)
        os.replace(tmp, path)
        shutil.rmtree(old, ignore_errors=True)
    else:
        os.replace(tmp, path)


def unwritable_reason(path: str | Path) -> str | None:
    """Why ``path`` cannot be written here, or None: its temporary sibling and missing parent
    folders are made in its nearest existing folder, which must be a writable directory. A writer
    asks before it reads its inputs, so that a long read does not end in a refusal to write."""
    folder = Path(path).absolute().parent
    while not folder.exists():
        folder = folder.parent
    if not folder.is_dir():
        return f"{folder} is a file, not a directory"
    if not os.access(folder, os.W_OK | os.X_OK):
        return f"the folder {folder} is not writable"
    return None


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process
        return True
    return True


def remove_stale_temporaries(path: str | Path) -> list[Path]:
    """Remove the temporary siblings of ``path`` (:func:`temporary_sibling`) whose process is gone:
    what a writer killed mid-write (``kill -9``, a lost node) left, which no ``finally`` removed.
    A sibling of a running process, or of a pid this machine does not know to be dead, is kept.
    Returns the removed paths."""
    path = Path(path)
    prefix = f".{path.name}."
    removed = []
    if not path.parent.is_dir():
        return removed
    for sibling in path.parent.iterdir():
        rest = sibling.name[len(prefix):] if sibling.name.startswith(prefix) else ""
        kind, _, tail = rest.partition("-")
        pid, _, token = tail.partition("-")
        if kind in ("tmp", "old") and pid.isdigit() and len(token) == 8 and not _pid_alive(int(pid)):
            _remove(sibling)
            removed.append(sibling)
    return removed


def write_all(files: Mapping[str | Path, Writer]) -> list[Path]:
    """Write every ``{target: writer}`` through a temporary sibling, then rename them all: a
    failing writer changes no target. Parent folders are created. Returns the targets, in the mapping's order."""
    tmps: dict[Path, Path] = {}
    try:
        for target, writer in files.items():
            target = Path(target)
            target.parent.mkdir(parents=True, exist_ok=True)
            tmp = temporary_sibling(target)
            tmps[target] = tmp
            writer(tmp)
        for target, tmp in tmps.items():
            _replace(tmp, target)
    finally:
        for tmp in tmps.values():
            if tmp.exists():
                _remove(tmp)
    return list(tmps)


def write_atomic(path: str | Path, writer: Writer) -> Path:
    """Write one file or directory atomically: ``writer(tmp)``, then rename ``tmp`` over ``path``."""
    return write_all({path: writer})[0]


def write_text(path: str | Path, text: str) -> Path:
    """Write ``text`` (UTF-8) to ``path`` atomically."""
    return write_atomic(path, lambda tmp: tmp.write_text(text, encoding="utf-8"))
