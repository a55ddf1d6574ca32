"""Per-snapshot costs fitted from measured training times (schedule/measured.py)."""

import numpy as np
import pytest

from dynagnn.errors import ConfigError
from dynagnn.schedule.measured import measured_costs


def test_forward_is_the_median_per_snapshot_and_unseen_scale_with_the_rest():
    pf = np.array([1.0, 2.0, 4.0, 8.0])
    fwd, _ = measured_costs({0: [3.0, 2.0, 10.0], 1: [6.0], 2: [12.0, 12.0]}, [], pf, pf)
    # snapshot 3 was never timed: its prediction times the median measured/predicted ratio (3)
    np.testing.assert_allclose(fwd, [3.0, 6.0, 12.0, 24.0])


def test_backward_scale_is_the_least_squares_fit_over_parts():
    pb = np.array([1.0, 2.0, 3.0])
    parts = [([0, 1], 6.0), ([2], 6.0), ([0, 1, 2], 13.0)]
    _, bwd = measured_costs({}, parts, np.ones(3), pb)
    x = np.array([3.0, 3.0, 6.0])
    y = np.array([6.0, 6.0, 13.0])
    beta = (x @ y) / (x @ x)
    np.testing.assert_allclose(bwd, beta * pb)
    # exact data give back the scale exactly
    _, bwd = measured_costs({}, [([0], 2.5), ([1, 2], 12.5)], np.ones(3), pb)
    np.testing.assert_allclose(bwd, 2.5 * pb)


def test_no_measurement_keeps_the_prediction_and_bad_shapes_are_refused():
    pf, pb = np.array([1.0, 2.0]), np.array([0.5, 0.25])
    fwd, bwd = measured_costs({}, [], pf, pb)
    np.testing.assert_array_equal(fwd, pf)
    np.testing.assert_array_equal(bwd, pb)
    with pytest.raises(ConfigError, match="two \\[T\\] arrays"):
        measured_costs({}, [], pf, np.ones(3))
