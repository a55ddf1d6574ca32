"""Per-snapshot costs from times measured in training, for re-planning BLAD's split.

BLAD plans once, from its operator predictors (linear regressions over offline profiles). The
predictors see the operators alone; a training process also pays what they leave out (autograd's
bookkeeping, allocation, a backward that is a multiple of the forward the profile did not capture,
the other process competing for memory bandwidth). The group strategy therefore measures, in its
second epoch (the first warms caches and the allocator; the first when only two are run), what
each process really spent, and re-plans from it:

- forward: each snapshot's own forward step is timed (by whichever process ran it); a snapshot's
  cost is the median over the groups it ran in;
- backward: a process runs one backward per group part (several snapshots at once), so the
  per-snapshot backward cannot be timed alone. The cost model's backward predictions give its shape
  over snapshots and the measurement its scale: the least-squares β of
  ``seconds(part) ≈ β · Σ_{s in part} predicted_bwd(s)``;
- the tail: each group's measured loss and head (forward and backward).

A snapshot no group measured (none, when every training window ran) keeps its prediction scaled
by the median ratio of measured to predicted forward times.
"""

from __future__ import annotations

from typing import Iterable, Sequence

import numpy as np

from ..errors import ConfigError


def measured_costs(forward: dict[int, Sequence[float]], backward: Iterable[tuple[Sequence[int], float]],
                   predicted_fwd, predicted_bwd) -> tuple[np.ndarray, np.ndarray]:
    """(fwd, bwd) float64 [T] per-snapshot seconds from measurements (module docstring).

    forward: {snapshot: forward seconds, one per group it ran in}; backward: (snapshots of a
    group part, seconds of that part's backward) pairs; predicted_fwd, predicted_bwd: the cost
    model's [T] seconds, the fallback and the backward's shape.
    """
    pf = np.asarray(predicted_fwd, dtype=np.float64)
    pb = np.asarray(predicted_bwd, dtype=np.float64)
    if pf.shape != pb.shape or pf.ndim != 1:
        raise ConfigError(f"predicted costs: expected two [T] arrays, got {pf.shape} and {pb.shape}")
    fwd = pf.copy()
    seen = np.zeros(pf.shape[0], dtype=bool)
    for s, times in forward.items():
        if times:
            fwd[int(s)] = float(np.median(np.asarray(times, dtype=np.float64)))
            seen[int(s)] = True
    ratio = fwd[seen & (pf > 0)] / pf[seen & (pf > 0)]
    if ratio.size and (~seen).any():
        fwd[~seen] = pf[~seen] * float(np.median(ratio))
    x, y = [], []
    for part, seconds in backward:
        idx = np.asarray(list(part), dtype=np.int64)
        if idx.size:
            x.append(float(pb[idx].sum()))
            y.append(float(seconds))
    x, y = np.asarray(x), np.asarray(y)
    beta = float(x @ y / (x @ x)) if x.size and float(x @ x) > 0 else 1.0
    bwd = pb * max(beta, 0.0)
    return fwd, bwd
