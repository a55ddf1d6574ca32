"""Loading a pickle of plain data that may come from anyone: containers, numbers, numpy arrays.

``pickle.load`` calls whatever the file names (a pickled ``os.system`` runs a command as it loads);
Python's pickle documentation warns never to unpickle data from an untrusted source, and gives the
remedy this module follows ("Restricting Globals"): an Unpickler whose ``find_class`` allows a fixed
list of globals. The list: the builtins dict, tuple, list, int and float; what numpy's own pickles of
arrays, dtypes and scalars name (``numpy.core`` of numpy 1 and ``numpy._core`` of numpy 2); and
``_codecs.encode``, with which protocol 2 writes bytes. Any other global is refused before anything
is called: an InputError, in one line naming the file and the global.
"""

from __future__ import annotations

import importlib
import pickle
from pathlib import Path
from typing import Any

import numpy as np

from dynagnn.errors import InputError, one_line

_CORE = ("numpy.core", "numpy._core")
ALLOWED = {
    *(("builtins", name) for name in ("dict", "tuple", "list", "int", "float")),
    ("numpy", "ndarray"), ("numpy", "dtype"), ("_codecs", "encode"),
    *((f"{core}.multiarray", name) for core in _CORE for name in ("_reconstruct", "scalar")),
    *((f"{core}.numeric", "_frombuffer") for core in _CORE),
}
# numpy 2 keeps numpy.core only as a deprecated alias of numpy._core: import the real module
_THIS_CORE = "numpy._core" if hasattr(np, "_core") else "numpy.core"


class _Refused(Exception):
    pass


class _PlainUnpickler(pickle.Unpickler):
    def find_class(self, module: str, name: str) -> Any:
        if (module, name) not in ALLOWED:
            raise _Refused(f"{module}.{name}")
        for core in _CORE:
            if module.startswith(core + "."):
                module = _THIS_CORE + module[len(core):]
        return getattr(importlib.import_module(module), name)


def load_plain_pickle(path: str | Path, what: str) -> Any:
    """The object pickled in ``path`` (``what`` it should hold, for messages), built from the allowed
    globals only; InputError in one line naming the file for a refused global or a file that is not
    a pickle."""
    path = Path(path)
    try:
        with open(path, "rb") as f:
            return _PlainUnpickler(f).load()
    except _Refused as exc:
        raise InputError(f"refused: the pickle would call {exc}, and only dicts, lists, tuples, numbers and numpy "
                         f"arrays load ({what} holds nothing else); nothing was run: replace the file with the "
                         "dataset's own", path) from None
    except OSError as exc:
        raise InputError(f"cannot read the file: {exc.strerror or one_line(exc)}", path) from None
    except (pickle.UnpicklingError, EOFError, ValueError, TypeError, AttributeError, IndexError, KeyError,
            MemoryError, OverflowError, RecursionError, UnicodeDecodeError) as exc:
        raise InputError(f"not a pickle of {what} ({type(exc).__name__}: {one_line(exc)[:120]})", path) from None
