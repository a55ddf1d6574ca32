"""What a run learns and how it is scored, below the stages that need it.

The tasks sit below ``analysis``, ``cost``, ``schedule`` and ``train`` so that the schedule and cost
stages can ask which windows a run trains, or time a task's head, without importing the train stage.

- :mod:`~dynagnn.tasks.snapshot`: the snapshot tasks (link prediction of t+1, node classification,
  node regression), their heads and the chronological split of their windows;
- :mod:`~dynagnn.tasks.events`: the event models' task, link prediction of each batch's events
  against sampled negatives;
- :mod:`~dynagnn.tasks.metrics`: AP, AUC, MRR, accuracy, MSE, computed once for every task.
"""
