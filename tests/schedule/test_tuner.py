import numpy as np
import pytest

from dynagnn.errors import ConfigError
from dynagnn.schedule.tuner import SpeedupTable, traffic_speedup, tune_frames


def test_traffic_speedup():
    assert np.isclose(traffic_speedup(4, 1.0), 4.0)  # all shared: one read for 4 snapshots
    assert np.isclose(traffic_speedup(4, 0.0), 1.0)  # nothing shared
    assert np.isclose(traffic_speedup(1, 0.3), 1.0)


def test_memory_bound_and_speedup():
    overlap = np.array([[1.0, 0.9, 0.8, 0.7],
                        [1.0, 0.9, 0.8, 0.7],
                        [1.0, 0.1, 0.0, 0.0]])
    snap_bytes = np.array([1.0, 3.0, 1.0])
    plan = tune_frames(overlap, 8.0, snapshot_bytes=snap_bytes)
    assert plan.s_per.tolist() == [8, 2, 2]  # frame 1: 4*3 > 8; frame 2: overlap too low beyond 2
    assert plan.memory_ok[1].tolist() == [True, True, False, False]
    assert np.isclose(plan.speedup[0], traffic_speedup(8, 0.7))


def test_stall_rejection_and_fallback():
    overlap = np.full((2, 4), 0.9)
    overlap[:, 0] = 1.0
    compute = np.array([1.0, 1.0])
    sp = traffic_speedup(np.array([1, 2, 4, 8])[None, :], overlap)
    transfer = np.array([[0.1, 0.5, 1.0, 10.0],   # 8 stalls (10 > 8/sp)
                         [5.0, 5.0, 5.0, 5.0]])   # everything stalls
    plan = tune_frames(overlap, 1e9, snapshot_bytes=np.ones(2), transfer_time=transfer, compute_time=compute)
    assert plan.s_per[0] == 4 and plan.stall[0, 3] and not plan.fallback[0]
    assert plan.fallback[1]
    # fallback: least frame time ceil(16/s) * max(transfer, compute) -> s = 8
    assert plan.s_per[1] == 8
    assert sp.shape == (2, 4)


def test_speedup_table_and_roundtrip():
    rng = np.random.default_rng(0)
    s = np.repeat([1, 2, 4, 8], 50)
    o = rng.random(200)
    sp = traffic_speedup(s, o)
    table = SpeedupTable.from_measurements(s, o, sp, bins=20)
    assert np.allclose(table.lookup(4, [0.5]), traffic_speedup(4, 0.5), rtol=0.1)
    t2 = SpeedupTable.from_dict(table.to_dict())
    assert np.allclose(t2.lookup(8, o), table.lookup(8, o))
    plan = tune_frames(np.tile([1.0, 0.95, 0.9, 0.85], (3, 1)), 100.0, snapshot_bytes=np.ones(3), speedup=table)
    assert (plan.s_per == 8).all()


def test_errors():
    with pytest.raises(ConfigError, match="does not fit"):
        tune_frames(np.ones((1, 4)), 0.5, snapshot_bytes=np.ones(1))
    with pytest.raises(ConfigError):
        tune_frames(np.ones((1, 3)), 10.0, snapshot_bytes=np.ones(1))
    with pytest.raises(ConfigError):
        tune_frames(np.ones((1, 4)), 10.0)
    with pytest.raises(ConfigError):
        tune_frames(np.ones((1, 4)), 10.0, snapshot_bytes=np.ones(1), transfer_time=np.ones((1, 4)))
    with pytest.raises(ConfigError, match="S_per"):
        SpeedupTable.from_measurements([2, 2], [0.1, 0.9], [1.5, 1.9]).lookup(4, [0.5])
