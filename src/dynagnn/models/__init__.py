"""Snapshot-based dynamic GNNs (one step per snapshot, see :mod:`.base`), their layers and heads.

``MODELS`` maps a registry key (the config's ``model`` value, each class's ``name``, or a user's
``package.module:Class`` once loaded) to its class; :func:`build_model` builds one by name
(:mod:`.registry`, the contract a user's model is checked against: :mod:`.contract`).
"""

from __future__ import annotations

from .base import DynamicGNN, StackedGNN, State
from .contract import Contract, check_contract
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

from ..config import provide
from .registry import ALL_MODELS, KINDS, MODELS, build_model, is_import_path, model_class, model_kind, register_model, resolve_model

# the built-in models, through the one registry a user's model goes through too (.registry): the
# snapshot models, the event models (models.tgnn), the sampled static GNNs (models.sage) and the
# baselines that train nothing (models.baselines: EdgeBank)
for _cls in (TGCN, EvolveGCNO, EvolveGCNH, WDGCN, MPNNLSTM, GCRN, CDGCN, TMGCN):
    register_model(_cls, "snapshot")
for _kind, _group in (("event", TGNN_MODELS), ("sampled", SAMPLED_MODELS), ("baseline", BASELINE_MODELS)):
    for _cls in _group.values():
        register_model(_cls, _kind)
BUILTIN_KINDS = dict(KINDS)   # the built-in models' kinds (tools/write_catalog.py copies them to the catalog)
provide("models", lambda: ALL_MODELS, resolve_model)   # the config schema's model names (x-registry)

__all__ = ["MODELS", "ALL_MODELS", "TGNN_MODELS", "BASELINE_MODELS", "SAMPLED_MODELS", "build_model", "model_class",
           "model_kind", "register_model", "resolve_model", "is_import_path", "check_contract", "Contract", "DynamicGNN", "StackedGNN", "State", "GCN", "GCNLayer", "find_gcn_layers",
           "TGCN", "EvolveGCNO", "EvolveGCNH", "WDGCN", "MPNNLSTM", "GCRN", "CDGCN", "TMGCN",
           "LinkPredictor", "NodeClassifier", "NodeRegressor"]
