"""The schedule stage's reading of the overlap table for PiPAD's tuner."""

import numpy as np
import pandas as pd

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
