"""Back-propagation from given gradients, without torch's first-call import of its shape solver.

``torch.autograd.backward(outputs, grads)`` and ``h.backward(grad)`` check each gradient against its
output with ``torch.fx.experimental.symbolic_shapes``, whose first import loads sympy: 0.5 s of a
training process's first step (torch 2.13, 2 cores), for a comparison of two plain shapes. The
strategies back-propagate from the head's gradients (every window's, every step), so a short run paid
it. :func:`backward` checks the shapes and dtypes itself and hands the tensors to autograd's engine as
torch's own function does after its checks; anything else (a tensor subclass, a mismatch, a torch
without that engine entry) goes through torch's function, which raises its own error.
"""

from __future__ import annotations

from typing import Sequence

import torch

_run_backward = getattr(torch.autograd.graph, "_engine_run_backward", None)


def _plain(t) -> bool:
    return type(t) in (torch.Tensor, torch.nn.Parameter) and not t.is_nested


def backward(outputs: Sequence[torch.Tensor] | torch.Tensor, grads: Sequence[torch.Tensor] | torch.Tensor) -> None:
    """``torch.autograd.backward(outputs, grads)``: the gradients accumulated into the leaves' ``.grad``
    (the graph freed), the same values, bit for bit."""
    if isinstance(outputs, torch.Tensor):
        outputs, grads = [outputs], [grads]
    outputs, grads = tuple(outputs), tuple(grads)
    fast = (_run_backward is not None and len(outputs) == len(grads) and all(
        _plain(o) and _plain(g) and o.shape == g.shape and o.dtype == g.dtype and o.device == g.device
        for o, g in zip(outputs, grads)))
    if not fast:
        torch.autograd.backward(list(outputs), list(grads))
        return
    _run_backward(outputs, grads, False, False, (), allow_unreachable=True, accumulate_grad=True)
