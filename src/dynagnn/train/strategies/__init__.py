"""Training strategies: how a window's snapshots are fed and how the recurrence is run over them.

Each strategy is one module; :data:`STRATEGIES` maps the names the workflow uses to classes.
"""

from __future__ import annotations

from dynagnn.errors import ConfigError
from dynagnn.train.strategies.base import Strategy
from dynagnn.train.strategies.sequential import Sequential

STRATEGIES: dict[str, type[Strategy]] = {"sequential": Sequential}


def make_strategy(name: str, **options) -> Strategy:
    try:
        cls = STRATEGIES[name]
    except KeyError:
        import difflib
        close = difflib.get_close_matches(name, STRATEGIES, n=1)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        raise ConfigError(f"unknown strategy {name!r}{hint}: expected one of {', '.join(STRATEGIES)}") from None
    return cls(**options)
