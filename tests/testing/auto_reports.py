"""An auto.json's candidates, as the chooser writes them, for the tests of what reads them."""

from __future__ import annotations

ROWS = [  # an auto.json's candidates: three it predicted (they could run and fit), one over the budget
    {"label": "sequential 1x1x2t", "strategy": "sequential", "workers": 1, "threads": 2, "options": {},
     "processes_per_worker": 1, "predicted_seconds": 1.0, "predicted_peak_bytes": 10.0, "trial_seconds": 0.5,
     "chosen": True, "reason": None},
    {"label": "frames 1x1x2t (frame_size=4)", "strategy": "frames", "workers": 1, "threads": 2,
     "options": {"frame_size": 4}, "processes_per_worker": 1, "predicted_seconds": 2.0, "predicted_peak_bytes": 12.0,
     "trial_seconds": None, "chosen": False, "reason": "predicted 2 s/epoch, not among the best predicted"},
    {"label": "group 1x2x1t", "strategy": "group", "workers": 1, "threads": 1, "options": {},
     "processes_per_worker": 2, "predicted_seconds": 3.0, "predicted_peak_bytes": 11.0, "trial_seconds": 0.7,
     "chosen": False, "reason": "0.7 s/epoch, 1.40x the chosen"},
    {"label": "vertex 2x1x1t (checkpoint_blocks=2)", "strategy": "vertex", "workers": 2, "threads": 1,
     "options": {"checkpoint_blocks": 2}, "processes_per_worker": 1, "predicted_seconds": None,
     "predicted_peak_bytes": 99.0, "trial_seconds": None, "chosen": False, "reason": "predicted peak over the budget"},
]
