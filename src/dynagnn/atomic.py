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

Three rules hold for every writer (issue 34, "Data loss"):

- **An output replaces only its own kind** (:func:`replace_refusal`). A folder is replaced only by a
  folder, and only when it is a dynagnn store (a Zarr group whose attributes carry ``schema_version``)
  or empty; a file only by a file. A stage that writes known files into a folder of its own (a
  training run's out-dir) refuses a folder that holds anything else (:func:`folder_refusal`).
  Anything else is refused (:class:`ReplaceRefused`), naming what is there: ``ingest --out
  results/mygraph`` can no longer delete the models under ``results/mygraph``.
- **A full disk is named** (:class:`NoSpaceError`): "no space left on device", with the path, whatever
  the writer said (OSError ENOSPC/EDQUOT, pyarrow's text, torch's ``enforce fail``); the targets are
  left as they were.
- **Temporaries of dead writers are removed** (:func:`remove_stale_temporaries`,
  :func:`remove_stale_temporaries_in`): what a writer killed mid-write (``kill -9``, a lost node) left,
  which no ``finally`` removed. :func:`write_all` removes its targets' before it writes, and every stage
  calls one of them on its outputs when it starts.
"""

from __future__ import annotations

import errno
import json
import os
import re
import shutil
import uuid
from collections.abc import Callable, Collection, Mapping
from pathlib import Path

Writer = Callable[[Path], object]

# .<name>.<kind>-<pid>-<8 hex>: what temporary_sibling makes
_TEMPORARY = re.compile(r"^\.(?P<name>.+)\.(?P<kind>tmp|old)-(?P<pid>\d+)-(?P<token>[0-9a-f]{8})$")
_NO_SPACE_ERRNOS = (errno.ENOSPC, errno.EDQUOT)
_NO_SPACE_TEXTS = ("no space left on device", "disk quota exceeded")
# torch.save's own words when a write fails ("[enforce fail at inline_container.cc:...] . unexpected
# pos ...", "PytorchStreamWriter failed writing file ...: file write failed"): no errno, so the disk is asked
_TORCH_WRITE_TEXTS = ("enforce fail", "file write failed", "failed writing file")
LOW_SPACE_BYTES = 1 << 20  # a disk with less free is full, for a writer that did not say why it failed


class ReplaceRefused(FileExistsError):
    """An output would replace something that is not of its kind (a folder that is not a store)."""


class NoSpaceError(OSError):
    """The disk (or the quota) filled while an output was written; the targets were left as they were.
    ``path``: the target being written."""

    def __init__(self, message: str, path: Path | None = None):
        super().__init__(message)
        self.errno = errno.ENOSPC
        self.path = path


def temporary_sibling(path: Path, kind: str = "tmp") -> Path:
    """A fresh hidden name beside ``path``: ``.<name>.<kind>-<pid>-<8 hex>``."""
    return path.with_name(f".{path.name}.{kind}-{os.getpid()}-{uuid.uuid4().hex[:8]}")


def _named(path: str | Path) -> Path:
    """``path``, absolute where it has no name of its own (``.``, ``..``, ``/``), so that its
    temporary sibling lands beside it and a message names the folder meant."""
    path = Path(path)
    return Path(os.path.abspath(path)) if path.name in ("", ".", "..") else path


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


# ---------------------------------------------------------------------------------- what is there


def is_dynagnn_store(path: str | Path) -> bool:
    """Whether ``path`` is a folder holding a dynagnn store: a Zarr (v3) group whose attributes carry
    ``schema_version`` (any version: an old store is still ours to replace)."""
    meta = Path(path) / "zarr.json"
    try:
        doc = json.loads(meta.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return (isinstance(doc, dict) and doc.get("node_type") == "group"
            and isinstance(doc.get("attributes"), dict) and "schema_version" in doc["attributes"])


def _entries(folder: Path) -> list[str]:
    try:
        return sorted(p.name for p in folder.iterdir())
    except OSError:
        return []


def _listing(names: list[str], most: int = 5) -> str:
    shown = ", ".join(names[:most])
    return shown + (f" and {len(names) - most} more" if len(names) > most else "")


def describe(path: str | Path) -> str:
    """What is at ``path``, in a few words: ``a folder holding 3 entries (a, b, c)``, ``a file of 12
    bytes``."""
    path = Path(path)
    if path.is_symlink() and not path.exists():
        return "a dangling symbolic link"
    if path.is_dir():
        names = _entries(path)
        if not names:
            return "an empty folder"
        return f"a folder holding {len(names)} entr{'y' if len(names) == 1 else 'ies'} ({_listing(names)})"
    try:
        return f"a file of {path.stat().st_size} bytes"
    except OSError:
        return "something unreadable"


def replace_refusal(path: str | Path, kind: str = "file") -> str | None:
    """Why an output of ``kind`` may not replace what is at ``path``, or None (nothing there, or its
    own kind). ``kind``: ``"store"`` (a folder output: it replaces an empty folder or a dynagnn store,
    never a file or another folder) or ``"file"`` (it replaces a file, never a folder)."""
    path = _named(path)
    if not os.path.lexists(path):
        return None
    is_dir = path.is_dir() and not path.is_symlink()
    if kind == "store":
        if not is_dir:
            return f"{path}: a file is in the way of the store (a directory)"
        if not _entries(path) or is_dynagnn_store(path):
            return None
        return (f"{path}: {describe(path)} is there, not a dynagnn store (a Zarr group whose attributes "
                f"carry schema_version), and only a store is replaced; nothing was changed: give the store a "
                f"path of its own, such as {path / 'store.zarr'}, or remove the folder first")
    if kind == "file":
        if is_dir:
            return (f"{path}: {describe(path)} is in the way of the file; nothing was changed: give another "
                    "path, or remove the folder first")
        return None
    raise ValueError(f"kind {kind!r}: expected 'store' or 'file'")


def folder_refusal(folder: str | Path, known: Collection[str], what: str = "output") -> str | None:
    """Why a stage that writes the files ``known`` into ``folder`` may not use it, or None: it may be
    absent, empty, or hold only those files (and hidden entries: temporaries, a file system's own);
    a file there, or a folder holding anything else, is refused, naming what is there. ``what``: the
    folder's kind in the message (``a training run's out-dir``)."""
    folder = _named(folder)
    if not os.path.lexists(folder):
        return None
    if not folder.is_dir():
        return f"{folder}: a file is in the way of the {what} (a directory)"
    foreign = [n for n in _entries(folder) if not n.startswith(".") and n not in known]
    if not foreign:
        return None
    return (f"{folder}: not {what}: it holds {len(foreign)} other entr{'y' if len(foreign) == 1 else 'ies'} "
            f"({_listing(foreign)}) besides the files it would hold ({', '.join(sorted(known))}); nothing was "
            "changed: give a new or empty folder")


def check_replaceable(path: str | Path, kind: str = "file") -> None:
    """Raise :class:`ReplaceRefused` where :func:`replace_refusal` gives a reason."""
    reason = replace_refusal(path, kind)
    if reason:
        raise ReplaceRefused(reason)


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


# ---------------------------------------------------------------------------------- stale temporaries


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process
        return True
    return True


def _remove_stale(folder: Path, names: Collection[str] | None) -> list[Path]:
    removed = []
    if not folder.is_dir():
        return removed
    for entry in _entries(folder):
        m = _TEMPORARY.match(entry)
        if m is None or (names is not None and m["name"] not in names) or _pid_alive(int(m["pid"])):
            continue
        _remove(folder / entry)
        removed.append(folder / entry)
    return removed


def remove_stale_temporaries(path: str | Path) -> list[Path]:
    """Remove the temporary siblings of ``path`` (:func:`temporary_sibling`: ``.<name>.tmp-<pid>-*``
    and ``.<name>.old-<pid>-*``) whose process is gone: what a writer killed mid-write (``kill -9``, a
    lost node) left, which no ``finally`` removed. A sibling of a running process, or of a pid this
    machine does not know to be dead, is kept. Returns the removed paths."""
    path = _named(path)
    return _remove_stale(path.parent, {path.name})


def remove_stale_temporaries_in(folder: str | Path) -> list[Path]:
    """:func:`remove_stale_temporaries` for every target in ``folder`` (a stage's out-dir, whose
    file names vary with its options): any ``.<name>.tmp-<pid>-<8 hex>`` or ``.old-`` entry of a dead
    process. Returns the removed paths."""
    return _remove_stale(_named(folder), None)


# ---------------------------------------------------------------------------------- full disks


def free_bytes(folder: str | Path) -> int | None:
    """Bytes an unprivileged writer may still use on ``folder``'s file system (None: unknown)."""
    try:
        st = os.statvfs(folder)
    except (OSError, AttributeError):
        return None
    return st.f_bavail * st.f_frsize


def is_no_space(exc: BaseException, folder: str | Path | None = None) -> bool:
    """Whether ``exc`` says the disk or the quota is full: an OSError with ENOSPC/EDQUOT, a text that
    says so (pyarrow's), or torch.save's write failure (``enforce fail``, ``file write failed``)
    while ``folder``'s disk has less than :data:`LOW_SPACE_BYTES` free."""
    seen: set[int] = set()
    while exc is not None and id(exc) not in seen:  # the cause may be wrapped
        seen.add(id(exc))
        if isinstance(exc, OSError) and exc.errno in _NO_SPACE_ERRNOS:
            return True
        text = str(exc).lower()
        if any(t in text for t in _NO_SPACE_TEXTS):
            return True
        if folder is not None and any(t in text for t in _TORCH_WRITE_TEXTS):
            free = free_bytes(folder)
            if free is not None and free < LOW_SPACE_BYTES:
                return True
        exc = exc.__cause__ or exc.__context__
    return False


def _no_space(target: Path, folder: Path) -> NoSpaceError:
    free = free_bytes(folder)
    left = "" if free is None else f" ({free / 2**20:.1f} MiB free there)"
    return NoSpaceError(f"no space left on device writing {target}{left}; {target} was left as it was", target)


# ---------------------------------------------------------------------------------- writing


def write_all(files: Mapping[str | Path, Writer]) -> list[Path]:
    """Write every ``{target: writer}`` through a temporary sibling, then rename them all: a
    failing writer changes no target. Parent folders are created. Returns the targets, in the mapping's order.

    Refused before any writer runs (:class:`ReplaceRefused`): a target that is a folder other than a
    dynagnn store or an empty one; after they ran, before any rename: a folder output onto a file or a
    file output onto a folder. A full disk raises :class:`NoSpaceError` naming the target. The stale
    temporaries of each target are removed first (:func:`remove_stale_temporaries`)."""
    jobs = [(Path(t), _named(t), writer) for t, writer in files.items()]
    for _, target, _ in jobs:
        if target.is_dir() and not target.is_symlink():
            check_replaceable(target, "store")
    tmps: list[Path] = []
    try:
        for shown, target, writer in jobs:
            remove_stale_temporaries(target)
            target.parent.mkdir(parents=True, exist_ok=True)
            tmp = temporary_sibling(target)
            tmps.append(tmp)
            try:
                writer(tmp)
            except Exception as exc:
                if is_no_space(exc, target.parent):
                    raise _no_space(shown, target.parent) from exc
                raise
        for (_, target, _), tmp in zip(jobs, tmps):  # each output onto its own kind, before any rename
            check_replaceable(target, "store" if tmp.is_dir() and not tmp.is_symlink() else "file")
        for (shown, target, _), tmp in zip(jobs, tmps):
            try:
                _replace(tmp, target)
            except OSError as exc:
                if is_no_space(exc, target.parent):
                    raise _no_space(shown, target.parent) from exc
                raise
    finally:
        for tmp in tmps:
            if os.path.lexists(tmp):
                _remove(tmp)
    return [shown for shown, _, _ in jobs]


def write_atomic(path: str | Path, writer: Writer) -> Path:
    """Write one file or directory atomically: ``writer(tmp)``, then rename ``tmp`` over ``path``."""
    return write_all({path: writer})[0]


def write_text(path: str | Path, text: str) -> Path:
    """Write ``text`` (UTF-8) to ``path`` atomically."""
    return write_atomic(path, lambda tmp: tmp.write_text(text, encoding="utf-8"))
