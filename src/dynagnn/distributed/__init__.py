"""The torch.distributed runtime every multi-worker strategy stands on (DESIGN.md, "Training on many
workers"): :mod:`.context` (who am I), :mod:`.launch` (start P local processes or join torchrun's
group), :mod:`.comm` (collectives that count their bytes and time themselves), :mod:`.testing` (run a
test body on P gloo processes).

This package sits below ``graph/``, ``models/`` and the stages: it imports only torch, numpy,
:mod:`dynagnn.timing` and :mod:`dynagnn.errors`.
"""

from dynagnn.distributed.context import DistContext, DistError

__all__ = ["DistContext", "DistError"]
