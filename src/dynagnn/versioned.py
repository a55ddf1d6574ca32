"""Reading versioned JSON artefacts: the one reader, as :mod:`dynagnn.atomic` is the one writer.

A stage hands the next one a JSON object that names what it is and which format it follows:
``{"kind": "dynagnn.schedule.plan", "version": 1, ...}`` (the schedule stage's plan, the profile
stage's predictor). :func:`read_versioned` reads such a file (or its text), refuses anything that
is not that kind at that version with one line that names the file and says what to re-run, and
returns the object; the caller then checks its own fields. Each artefact's module
(:mod:`dynagnn.schedule.plan`, :mod:`dynagnn.cost.predictor`) calls it with its kind, version,
the producing stage and its own exception class (InputError, CostError, ...), so that every
artefact is refused in the same words. It sits at the package root because stages of several
layers read such files; it imports nothing of dynagnn but the errors, so it stands in the layer
just above the leaves (``tests/test_layers.py``).
"""

from __future__ import annotations

import json
from pathlib import Path

from .errors import DynagnnError, InputError

_JSON_TYPES = {list: "an array", str: "a string", int: "a number", float: "a number", bool: "a boolean",
               type(None): "null"}


def read_versioned(source: str | Path, *, kind: str, version: int, what: str, producer: str,
                   text: str | None = None, error: type[DynagnnError] = InputError) -> dict:
    """The JSON object at ``source`` if it is of ``kind`` at ``version``, else ``error``.

    ``source``: the file to read, or, when ``text`` (the JSON itself) is given, the name of where
    it came from (only named in messages). ``what`` names the artefact in messages ("schedule
    plan"), ``producer`` the stage that writes it ("the schedule stage"). Every refusal is one line
    starting with ``source``: a missing file, an unreadable one, text that is not JSON (with the
    line number), JSON that is not an object, an object of another ``kind`` (or none), and one of
    another ``version`` (saying which version this dynagnn reads and what to re-run).
    ``error`` is the exception class raised: InputError gets ``source`` as its path; any other
    class gets the message prefixed with ``"<source>: "``.
    """

    def refuse(message: str):
        if issubclass(error, InputError):
            return error(message, source)
        return error(f"{source}: {message}")

    if text is None:
        path = Path(source)
        if not path.exists():
            raise refuse(f"{what} not found (run {producer} first)")
        try:
            text = path.read_text(encoding="utf-8")
        except OSError as exc:
            raise refuse(f"not a readable {what} JSON ({exc.strerror or exc})") from None
        except UnicodeDecodeError as exc:
            raise refuse(f"not a readable {what} JSON (not UTF-8 text: byte {exc.start})") from None
    try:
        d = json.loads(text)
    except json.JSONDecodeError as exc:
        raise refuse(f"not a readable {what} JSON (not valid JSON: {exc.msg}, line {exc.lineno})") from None
    if not isinstance(d, dict):
        raise refuse(f"not a {what} (expected a JSON object, got {_JSON_TYPES[type(d)]})")
    if d.get("kind") != kind:
        raise refuse(f"not a {what} (kind {d.get('kind')!r}, expected {kind!r})")
    if d.get("version") != version:
        raise refuse(f"{what} version {d.get('version')!r}, this dynagnn reads version {version}; "
                     f"re-run {producer}")
    return d
