"""Baselines that are model names but train nothing: EdgeBank in its two variants.

A run of one (``--model edgebank`` or ``edgebank_window``, ``models: [edgebank]`` in a config) writes
the outputs of a training run, of one epoch that trains nothing: EdgeBank scored on the run's
validation and test negatives by :mod:`dynagnn.tasks.edgebank` (:mod:`dynagnn.train.edgebank_run`).
They are registered here, beside the trained models, so that the config's ``model`` key and the
CLI's ``--model`` accept them and a leaderboard's table sets them beside the models.
"""

from __future__ import annotations


class EdgeBank:
    """EdgeBank with unlimited memory: an edge seen before scores 1, any other 0."""

    name = "edgebank"
    memory = "unlimited"


class EdgeBankWindow(EdgeBank):
    """EdgeBank remembering the edges of the last test span only."""

    name = "edgebank_window"
    memory = "window"


BASELINE_MODELS: dict[str, type[EdgeBank]] = {cls.name: cls for cls in (EdgeBank, EdgeBankWindow)}
