"""Remembered choices (issue 54): the second run of the same job pays nothing for choosing.

A choice is stored as one JSON file per key in the choices folder (:func:`folder`:
``$DYNAGNN_CHOICES``, else ``$XDG_CACHE_HOME/dynagnn/choices``, else ``~/.cache/dynagnn/choices``).
The key is a SHA-256 of what determines the choice (:func:`what`): the store's content (its
checksum and the digests of its arrays, not its path), the request's keys less those that change no epoch's speed (the seed, the
learning rate, the patience), the chooser's options, and the machine: the cores the candidates may
fill, the device (a GPU by its name), torch's and dynagnn's versions. The file holds that ``what``
beside the chosen candidate, so an entry whose content is not the key's (a hash collision, an edit)
is stale; one that does not parse, names a strategy no longer registered or is refused by the run
now is ignored with a log line, never trusted. ``choose_again`` (``--choose-again``) chooses anew and
replaces the entry. Entries are written atomically; deleting the folder forgets every choice.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
from pathlib import Path

from dynagnn.atomic import write_text
from dynagnn.data.integrity import DIGESTS
from dynagnn.errors import DynagnnError

log = logging.getLogger("dynagnn")

ENV = "DYNAGNN_CHOICES"
#: keys that change what a run learns, not how fast an epoch runs or which candidate can run it
SPEED_FREE = ("seed", "lr", "weight_decay", "patience", "warmup_epochs", "choose_again")
FORMAT = 1


def folder() -> Path:
    """The choices folder (module docstring)."""
    if os.environ.get(ENV):
        return Path(os.environ[ENV])
    cache = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(cache) / "dynagnn" / "choices"


def what(store, request, cores: int) -> dict:
    """What determines the choice of ``request`` on ``store`` with ``cores`` cores (module docstring)."""
    import torch

    from dynagnn import __version__

    device = str(request.device)
    if device.startswith("cuda") and torch.cuda.is_available():
        device = f"{device} {torch.cuda.get_device_name(torch.device(device))} x{torch.cuda.device_count()}"
    keys = {k: v for k, v in request.as_dict().items() if k not in SPEED_FREE}
    # the checksum keys the source and the spec; the arrays' digests recorded at ingest, the data written
    # (a store written from memory has no source file to checksum)
    data = json.dumps([str(store.checksum), store.attrs.get(DIGESTS)], sort_keys=True, default=str)
    return {"format": FORMAT, "store": hashlib.sha256(data.encode()).hexdigest(), "request": keys, "cores": int(cores), "device": device,
            "torch": torch.__version__, "dynagnn": __version__}


def path_of(key: dict) -> Path:
    digest = hashlib.sha256(json.dumps(key, sort_keys=True, default=str).encode()).hexdigest()
    return folder() / f"{digest[:32]}.json"


def recall(key: dict) -> dict | None:
    """The remembered entry of ``key`` ({"what", "chosen": a candidate's row, "report"}), or None: none
    stored, or one stale or damaged (ignored, with a log line)."""
    path = path_of(key)
    if not path.is_file():
        return None
    try:
        entry = json.loads(path.read_text())
        stored, row = entry["what"], entry["chosen"]
        for field in ("strategy", "workers", "threads", "options", "processes_per_worker"):
            row[field]
    except (OSError, ValueError, KeyError, TypeError) as exc:
        log.warning("auto: remembered choice %s is damaged (%s): ignored, choosing anew", path, type(exc).__name__)
        return None
    if json.loads(json.dumps(key, default=str)) != stored:
        log.warning("auto: remembered choice %s is stale (made for another store, run or machine): ignored, "
                    "choosing anew", path)
        return None
    return entry


def remember(key: dict, row: dict, report: dict) -> Path | None:
    """Store the chosen candidate's ``row`` of ``report`` under ``key``; None (logged) where the folder
    cannot be written: a choice not remembered costs the next run its choosing, nothing else."""
    path = path_of(key)
    entry = {"what": key, "chosen": row, "report": report}
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        write_text(path, json.dumps(entry, indent=1, default=str))
    except (OSError, DynagnnError) as exc:
        log.warning("auto: the choice is not remembered (%s: %s)", path, exc)
        return None
    return path
