"""TEMPORARY: moved to :mod:`dynagnn.sortedkeys` (below data/, which uses it too).

Only graph/diff.py and train/transfer.py still import this path; they are being edited elsewhere and
switch to ``dynagnn.sortedkeys`` next, and then this file goes. Nothing new may import it.
"""

from dynagnn.sortedkeys import isin_sorted  # noqa: F401
