"""The train stage: the epoch engine (:mod:`.engine`: epochs, evaluation, early stopping, outputs),
the strategies that split a step across workers (:mod:`.strategies`), the tasks and their metrics,
gradient checkpointing over time blocks (:mod:`.checkpoint`) and snapshot transfer (:mod:`.transfer`)."""
