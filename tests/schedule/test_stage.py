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


def test_process_snapshots_and_mean_layer_times():
    from dynagnn.schedule.balance import BalancePlan
    from dynagnn.schedule.plan import process_layer_times, process_snapshots

    # groups of 4 ending at 3, 4, 5: members 0-3, 1-4, 2-5; p1 runs the first splits[i] of each
    proc = BalancePlan("dp", 4, [3, 4, 5], np.array([2, 1, 4]), 0.0, np.zeros(2))
    heads, tails = process_snapshots(proc, 4)
    assert heads.tolist() == [0, 1, 1, 2, 3, 4, 5] and tails.tolist() == [2, 3, 2, 3, 4]
    rng = np.random.default_rng(0)
    agg, upd = rng.random((6, 2)), rng.random((6, 2))
    lone = BalancePlan("dp", 4, [3], np.array([4]), 0.0, np.zeros(2))  # p2 runs nothing
    a, u, r = process_layer_times([proc, lone], 4, (agg, upd))
    assert a.shape == u.shape == r.shape == (2, 2, 2) and not r.any()
    np.testing.assert_allclose(a[0, 0], agg[heads].mean(axis=0))
    np.testing.assert_allclose(u[0, 1], upd[tails].mean(axis=0))
    np.testing.assert_allclose(a[1, 0], agg[:4].mean(axis=0))
    assert not a[1, 1].any()


def test_plan_with_one_group_per_worker_orders_every_worker():
    from dynagnn.schedule import build_plan

    rng = np.random.default_rng(1)
    T, L = 5, 2  # groups of 4: two groups, one per worker
    fwd = rng.random(T) + 1
    times = (rng.random((T, L)), rng.random((T, L)), rng.random((T, L)))
    plan = build_plan(fwd, 2 * fwd, group_len=4, num_workers=2, dataset="d", model="tgcn", layer_times=times)
    assert plan.operators.update_first.shape == (2, 2, L)
    assert 0 <= plan.operators.overlap_fraction <= 1
    assert plan.operators.overlap_fraction >= plan.operators.default_overlap_fraction


@pytest.mark.parametrize("model", ["tgcn", "evolvegcn_o", "wdgcn", "mpnn_lstm", "gcrn"])
def test_layer_times_account_for_every_forward_call(model):
    from tests.testing.profiles import synthetic_profile

    from dynagnn.cost.models import model_calls
    from dynagnn.cost.fit import fit
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
