"""Snapshot-based dynamic GNNs (one step per snapshot, see :mod:`.base`), their layers and heads.

``MODELS`` maps a registry key (the config's ``model`` value, each class's ``name``) to its class;
:func:`build_model` builds one by name.
"""

from __future__ import annotations

from dynagnn.errors import ConfigError, did_you_mean

from .base import DynamicGNN, StackedGNN, State
from .baselines import BASELINE_MODELS
from .cdgcn import CDGCN
from .evolvegcn import EvolveGCNH, EvolveGCNO
from .gcrn import GCRN
from .heads import LinkPredictor, NodeClassifier, NodeRegressor
from .layers import GCN, GCNLayer, find_gcn_layers
from .mpnn_lstm import MPNNLSTM
from .tgcn import TGCN
from .tmgcn import TMGCN
from .wdgcn import WDGCN
from .sage import SAMPLED_MODELS
from .tgnn import TGNN_MODELS

MODELS: dict[str, type[DynamicGNN]] = {cls.name: cls for cls in (TGCN, EvolveGCNO, EvolveGCNH, WDGCN, MPNNLSTM, GCRN,
                                                                  CDGCN, TMGCN)}
# every name the config's model key takes: the snapshot models, the event models (models.tgnn), the
# sampled static GNNs (models.sage) and the baselines that train nothing (models.baselines: EdgeBank)
ALL_MODELS: dict[str, type] = {**MODELS, **TGNN_MODELS, **SAMPLED_MODELS, **BASELINE_MODELS}


def model_class(name: str) -> type[DynamicGNN]:
    """The class registered as ``name``; ConfigError naming the known models otherwise."""
    cls = MODELS.get(name)
    if cls is None and name in TGNN_MODELS:
        raise ConfigError(f"model: {name!r} is an event model (TGN, JODIE, APAN), not a snapshot model: train it "
                          "with the events strategy (--strategy events, or strategies: [events] in a run)")
    if cls is None:
        raise ConfigError(f"model: unknown model {name!r}{did_you_mean(name, MODELS)}; known: {', '.join(MODELS)}")
    return cls


def build_model(name: str, in_dim: int, hidden_dim: int, **kw) -> DynamicGNN:
    """The model registered as ``name``, built with (in_dim, hidden_dim) and its own keyword options."""
    return model_class(name)(in_dim, hidden_dim, **kw)


__all__ = ["MODELS", "ALL_MODELS", "TGNN_MODELS", "BASELINE_MODELS", "build_model", "model_class", "DynamicGNN", "StackedGNN", "State", "GCN", "GCNLayer", "find_gcn_layers",
           "TGCN", "EvolveGCNO", "EvolveGCNH", "WDGCN", "MPNNLSTM", "GCRN", "CDGCN", "TMGCN",
           "LinkPredictor", "NodeClassifier", "NodeRegressor"]
