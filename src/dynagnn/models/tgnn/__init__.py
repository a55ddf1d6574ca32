"""Memory-based temporal GNNs on event streams (Sven's models): TGN, JODIE and APAN.

- :mod:`.memory`: the node memory and mailbox (buffers owned by the training loop);
- :mod:`.time_encoding`: Φ(Δt) = cos(ωΔt + φ);
- :mod:`.updaters`: GRU (TGN), RNN (JODIE), mailbox attention (APAN);
- :mod:`.embedding`: temporal attention (TGN), time projection (JODIE);
- :mod:`.batch`: an event batch, its sampled neighbours and the unique node ids it reads;
- :mod:`.models`: the three models and the order of work of one batch.

:data:`TGNN_MODELS` maps the config's ``model`` names to classes; :func:`build_tgnn` builds one.
"""

from __future__ import annotations

from dynagnn.errors import ConfigError, did_you_mean

from .batch import EventBatch, make_batch
from .memory import MemoryRows, NodeMemory, latest_per_node
from .models import APAN, JODIE, TGN, BatchOutput, TGNNModel, Writes, apply_writes

TGNN_MODELS: dict[str, type[TGNNModel]] = {cls.name: cls for cls in (TGN, JODIE, APAN)}


def tgnn_class(name: str) -> type[TGNNModel]:
    cls = TGNN_MODELS.get(name)
    if cls is None:
        raise ConfigError(f"model: unknown event model {name!r}{did_you_mean(name, TGNN_MODELS)}; known: "
                          f"{', '.join(TGNN_MODELS)}")
    return cls


def build_tgnn(name: str, num_nodes: int, edge_dim: int = 0, memory_dim: int = 100, time_dim: int = 100,
               neighbors: int = 10, **kw) -> TGNNModel:
    """The event model ``name`` for ``num_nodes`` nodes and events with ``edge_dim`` features."""
    return tgnn_class(name)(num_nodes, edge_dim, memory_dim, time_dim, neighbors, **kw)


__all__ = ["TGNN_MODELS", "tgnn_class", "build_tgnn", "TGNNModel", "TGN", "JODIE", "APAN", "NodeMemory",
           "MemoryRows", "EventBatch", "make_batch", "BatchOutput", "Writes", "apply_writes", "latest_per_node"]
