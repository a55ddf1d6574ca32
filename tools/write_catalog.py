"""Write src/dynagnn/schemas/catalog.json anew from the classes: every strategy class of
dynagnn.train.strategies' modules and every built-in model (dynagnn.catalog says why the copy exists;
tests/test_registries.py fails when it drifts). Run it after adding or changing a strategy or model:

    python tools/write_catalog.py
"""

from __future__ import annotations

import importlib
import inspect
import json
import pkgutil
import sys
from pathlib import Path

CATALOG = Path(__file__).resolve().parents[1] / "src" / "dynagnn" / "schemas" / "catalog.json"


def strategy_classes() -> list[type]:
    """Every named strategy class defined in a module of dynagnn.train.strategies, in the catalog's order
    where it names them already (the registry's order: the CLI's flags, the errors' lists), new ones after."""
    import dynagnn.train.strategies as package
    from dynagnn.train.strategies.base import Strategy

    found = {}
    for info in pkgutil.iter_modules(package.__path__):
        module = importlib.import_module(f"{package.__name__}.{info.name}")
        for _, cls in inspect.getmembers(module, inspect.isclass):
            if issubclass(cls, Strategy) and cls.__module__ == module.__name__ and cls.name:
                found[cls.name] = cls
    order = list(json.loads(CATALOG.read_text())["strategies"]) if CATALOG.exists() else []
    return [found[n] for n in order if n in found] + [found[n] for n in sorted(found) if n not in order]


def build() -> dict:
    """The catalog the classes give: {"strategies": {name: facts}, "models": {name: kind}}."""
    from dynagnn.catalog import facts_of
    from dynagnn.models import BUILTIN_KINDS

    return {"strategies": {cls.name: facts_of(cls) for cls in strategy_classes()}, "models": dict(BUILTIN_KINDS)}


def main() -> int:
    CATALOG.write_text(json.dumps(build(), indent=1) + "\n")
    print(f"wrote {CATALOG}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
