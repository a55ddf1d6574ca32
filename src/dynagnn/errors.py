"""Errors a user can act on: bad input, bad config, a store of another version.

Every one carries a message that names the file, row or key and says what was expected; the CLI
prints it on one line and exits non-zero, without a traceback.
"""

from __future__ import annotations

from pathlib import Path


class DynagnnError(Exception):
    """Base of every error that is the input's fault, not the program's."""


class InputError(DynagnnError):
    """A source file is missing, unreadable or malformed."""

    def __init__(self, message: str, path: str | Path | None = None, line: int | None = None):
        where = ""
        if path is not None:
            where = f"{path}"
            if line is not None:
                where += f", line {line}"
            where += ": "
        super().__init__(where + message)
        self.path = None if path is None else Path(path)
        self.line = line


class ConfigError(DynagnnError):
    """A config key is unknown, missing or has a value of the wrong kind."""


class StoreError(DynagnnError):
    """A snapshot store is missing, incomplete or of another schema version."""


class CostError(DynagnnError):
    """A profile table or a fitted cost model is missing, incomplete or of another version."""


def did_you_mean(name: object, choices) -> str:
    """`` (did you mean 'x'?)`` naming the closest of ``choices`` to ``name``, or "" if none is close:
    the hint every "unknown name" message of dynagnn ends its name with."""
    import difflib

    close = difflib.get_close_matches(str(name), [str(c) for c in choices], n=1)
    return f" (did you mean {close[0]!r}?)" if close else ""


def one_line(exc: BaseException) -> str:
    """An exception's message on one line (the CLI prints exactly one)."""
    return " ".join(str(exc).split()) or type(exc).__name__
