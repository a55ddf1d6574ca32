"""The library's entry points above the stages: what needs more than one stage, and the Python API.

- :mod:`.run`: a training run from the top (:func:`train`): a request of the chooser resolved, a plan
  made at start where its strategy needs one (:mod:`.plan`), then the engine;
- :mod:`.seeds`: a run over seeds and the tables over them;
- :mod:`.runs`: the runs a config asks for (the workflow's rules read them);
- the Python API, re-exported at the package root (``import dynagnn; dynagnn.fit(...)``): :mod:`.fitting`
  (:func:`fit`, :class:`FitResult`), :mod:`.stores` (:func:`open_store`, :func:`ingest`) and
  :mod:`.pyg` (:func:`from_pyg`).

Each name below is loaded from its module on first use, so that ``import dynagnn.api`` imports no torch.
"""

from __future__ import annotations

import importlib

_WHERE = {
    "train": "run", "scoring_config": "run", "choose_strategy": "run",
    "run_costs": "plan", "plan_at_start": "plan", "with_plan": "plan",
    "seed_row": "seeds", "seed_summary": "seeds", "write_seed_tables": "seeds", "gather_seeds": "seeds",
    "negative_kind_of": "seeds", "train_seeds": "seeds",
    "FitResult": "fitting", "fit": "fitting", "load_trained": "fitting", "FIT_WHERE": "fitting",
    "open_store": "stores", "ingest": "stores",
    "from_pyg": "pyg",
}


def __getattr__(name: str):
    if name not in _WHERE:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{_WHERE[name]}"), name)


def __dir__():
    return sorted(set(globals()) | set(_WHERE))


__all__ = sorted(_WHERE)
