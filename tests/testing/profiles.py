"""A profile table of the cost model with known coefficients: what the predictor's fit must recover."""

from __future__ import annotations

import numpy as np
import pandas as pd

from dynagnn.cost.predictor import FEATURES, design_matrix
from dynagnn.cost.profile import COLUMNS, DIRECTIONS, OPERATORS, Grid


# known coefficients per (operator, direction), in the order of FEATURES[op]
TRUE = {
    ("graph_op", "forward"): [5e-6, 2e-9, 1e-9, 3e-10],
    ("graph_op", "backward"): [3e-5, 4e-9, 5e-9, 1e-9],
    ("nn_op", "forward"): [2e-6, 1e-10, 2e-10, 4e-11],
    ("nn_op", "backward"): [1e-5, 3e-10, 3e-10, 8e-11],
    ("gru", "forward"): [2e-5, 1e-9, 2e-9, 3e-11],
    ("gru", "backward"): [6e-5, 2e-9, 3e-9, 6e-11],
    ("lstm", "forward"): [2.5e-5, 1e-9, 3e-9, 4e-11],
    ("lstm", "backward"): [7e-5, 2e-9, 4e-9, 8e-11],
    ("evolve", "forward"): [2e-5, 1e-9, 3e-9, 5e-11],
    ("evolve", "backward"): [5e-5, 2e-9, 5e-9, 1e-10],
    ("elementwise", "forward"): [3e-6, 4e-10],
    ("elementwise", "backward"): [6e-6, 9e-10],
    ("sigmoid", "forward"): [3e-6, 1.5e-9],
    ("sigmoid", "backward"): [5e-6, 1e-9],
    ("tanh", "forward"): [3e-6, 2.5e-9],
    ("tanh", "backward"): [5e-6, 1e-9],
}


GRID = Grid(vertices=[100, 400, 1600, 6400], degrees=[2.0, 8.0, 24.0], widths=[4, 8, 16, 32, 64])


def synthetic_profile(noise: float = 0.0, seed: int = 0, copies: int = 1, operators=OPERATORS) -> pd.DataFrame:
    """A profile table whose times are exactly features · TRUE (times multiplicative noise)."""
    rng = np.random.default_rng(seed)
    rows = []
    for pt in GRID.points():
        if pt.operator not in operators:
            continue
        for d in DIRECTIONS:
            for _ in range(copies):
                x = design_matrix(FEATURES[pt.operator], pt.N, pt.nnz, pt.in_width, pt.out_width)
                t = float(x @ np.array(TRUE[(pt.operator, d)]))
                t *= float(np.exp(rng.normal(0, noise))) if noise else 1.0
                rows.append({"operator": pt.operator, "direction": d, "device": "cpu", "N": pt.N, "nnz": pt.nnz,
                             "in_width": pt.in_width, "out_width": pt.out_width, "median_s": t, "min_s": t,
                             "repeats": 5, "number": 1, "threads": 1})
    return pd.DataFrame(rows, columns=COLUMNS)
