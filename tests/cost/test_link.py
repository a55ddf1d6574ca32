"""The co-located channel's cost model: fit on synthetic timings with a known answer, the stored
form, and one real (tiny) profile of two gloo processes."""

import numpy as np
import pandas as pd
import pytest

from dynagnn.cost.link import LINK_COLUMNS, LinkCost, fit_link, profile_link
from dynagnn.cost.predictor import Predictor
from dynagnn.errors import CostError


def synthetic(handover=(2e-4, 3e-10), allreduce=(3e-4, 6e-10), sizes=(4096, 65536, 1 << 20, 4 << 20)):
    rows = [{"kind": kind, "bytes": n, "median_s": lat + per * n, "min_s": lat + per * n, "repeats": 3}
            for kind, (lat, per) in (("handover", handover), ("allreduce", allreduce)) for n in sizes]
    return pd.DataFrame(rows, columns=LINK_COLUMNS)


def test_fit_recovers_latency_and_per_byte():
    cost = fit_link(synthetic())
    np.testing.assert_allclose(cost.handover, (2e-4, 3e-10), rtol=1e-6)
    np.testing.assert_allclose(cost.allreduce, (3e-4, 6e-10), rtol=1e-6)
    assert cost.seconds("handover", 1 << 20) == pytest.approx(2e-4 + 3e-10 * (1 << 20))
    np.testing.assert_allclose(cost.seconds("allreduce", np.array([0, 1000])), [0.0, 3e-4 + 6e-7])  # 0 bytes: free
    # a pure latency (per byte 0) stays non-negative under noise that would make a plain fit negative
    noisy = synthetic(handover=(5e-4, 0.0))
    noisy.loc[noisy.kind == "handover", "median_s"] *= [1.02, 1.0, 0.99, 0.98]
    assert min(fit_link(noisy).handover) >= 0.0


def test_stored_in_the_predictor_meta():
    cost = LinkCost((1e-4, 2e-10), (3e-4, 4e-10))
    pred = Predictor("cpu", {}, {"link": cost.to_dict()})
    assert LinkCost.of(pred) == cost
    assert LinkCost.of(Predictor("cpu", {}, {})) is None
    with pytest.raises(CostError, match="meta.link"):
        LinkCost.of(Predictor("cpu", {}, {"link": {"handover": {"latency_s": 1e-4}}}))
    with pytest.raises(CostError, match="non-negative"):
        LinkCost.from_dict({"handover": {"latency_s": -1, "per_byte_s": 0}, "allreduce": {"latency_s": 0, "per_byte_s": 0}})
    with pytest.raises(CostError, match="at least two sizes"):
        fit_link(synthetic(sizes=(4096,)))


def test_profile_link_times_both_kinds_on_two_processes():
    df = profile_link(sizes=(4096, 65536), repeats=2, pause_s=0.001)
    assert list(df.columns) == LINK_COLUMNS
    assert sorted(zip(df.kind, df.bytes)) == [("allreduce", 4096), ("allreduce", 65536), ("handover", 4096),
                                               ("handover", 65536)]
    assert (df.min_s > 0).all() and (df.min_s <= df.median_s).all() and (df.repeats == 2).all()
