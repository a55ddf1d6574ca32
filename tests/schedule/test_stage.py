"""The schedule stage's reading of the overlap table for PiPAD's tuner."""

import numpy as np
import pandas as pd
import pytest

from dynagnn.schedule.stage import overlap_options


def test_overlap_options_means_inside_each_big_frame():
    rows = []
    for size, rates in ((2, [0.9, 0.7, 0.5, 0.3]), (4, [0.6, 0.2])):
        for f, r in enumerate(rates):
            rows.append({"frame_size": size, "frame": f, "t0": f * size, "t1": (f + 1) * size, "overlap_rate": r})
    fs, options, rates, bounds = overlap_options(pd.DataFrame(rows), num_snapshots=8)
    assert fs == 4 and options == (1, 2, 4)
    np.testing.assert_allclose(rates, [[1.0, 0.8, 0.6], [1.0, 0.4, 0.2]])
    assert bounds.tolist() == [[0, 4], [4, 8]]
    assert overlap_options(pd.DataFrame(rows[:0], columns=["frame_size"]), 8) is None


def test_co_located_pairs_head_of_next_group_with_tail_of_this_one():
    from dynagnn.schedule.balance import BalancePlan
    from dynagnn.schedule.plan import co_located_pairs

    # groups of 4 ending at 3, 4, 5: members 0-3, 1-4, 2-5; p1 runs the first splits[i] of each
    proc = BalancePlan("dp", 4, [3, 4, 5], np.array([2, 1, 3]), 0.0, np.zeros(2))
    # p1's head of group 4 ([1]) beside p2's tail of group 3 ([2, 3]); head of 5 ([2, 3, 4]) beside tail of 4
    assert co_located_pairs([proc], 4).tolist() == [[1, 2], [2, 2], [3, 3], [4, 4]]
    assert co_located_pairs([BalancePlan("dp", 4, [3], np.array([2]), 0.0, np.zeros(2))], 4).shape == (0, 2)


@pytest.mark.parametrize("model", ["tgcn", "evolvegcn_o", "wdgcn", "mpnn_lstm", "gcrn"])
def test_layer_times_account_for_every_forward_call(model):
    from tests.cost.test_predictor import synthetic_profile

    from dynagnn.cost.models import model_calls
    from dynagnn.cost.predictor import fit
    from dynagnn.schedule.stage import layer_times

    pred = fit(synthetic_profile())
    calls = model_calls(model, 16, 8)
    stats = {"edges": np.array([100, 5000, 300])}
    agg, upd, rnn = layer_times(pred.breakdown(stats, calls, num_nodes=500), calls)
    fwd, _ = pred.predict(stats, calls, num_nodes=500)
    bd = pred.breakdown(stats, calls, num_nodes=500)
    ew = sum(bd[f"{c[1]}.forward"] for c in calls.calls() if c[0] in ("elementwise", "sigmoid", "tanh"))
    assert (ew > 0).all()
    np.testing.assert_allclose((agg + upd + rnn).sum(axis=1) + ew, fwd, rtol=1e-12)
    layers = {c[1].rsplit(".", 1)[0] for c in calls.calls() if c[0] in ("graph_op", "nn_op")}
    assert agg.shape == (3, len(layers))
    if model == "evolvegcn_o":  # layer1's weight step follows layer 0; layer0's wraps round to the end
        np.testing.assert_allclose(rnn[:, 0], bd["layer1.evolve.forward"])
        np.testing.assert_allclose(rnn[:, 1], bd["layer0.evolve.forward"])
