"""The trainer's optimiser: torch's fused Adam, without importing torch's compiler stack.

``torch.optim.Adam`` imports ``torch._dynamo`` the first time a process builds or steps one: its
``add_param_group``, ``zero_grad`` and state-dict methods are wrapped by ``torch._disable_dynamo``,
which imports it on the first call, and ``step`` by ``_use_grad_for_differentiable``, which imports
it on every call to insert graph breaks. That import was 1.6-2.0 s of every training process's start
on this 2-core machine (issue 48), a second or more than a 1-epoch run's epochs. Those wrappers only
matter under ``torch.compile``; eagerly they call the wrapped function (with gradients off, for
``step``). :class:`Adam` calls the wrapped functions directly (each wrapper keeps its function as
``__wrapped__``), and defers to torch's own wrappers wherever ``torch._dynamo`` is loaded already
(a user's compiled model): the same update, the same state, the same ``state_dict``.
"""

from __future__ import annotations

import inspect
import sys

import torch

_Optimizer = torch.optim.Optimizer


def _unwrapped(method):
    """The function torch's decorators wrap, through every layer (``functools.wraps`` keeps each as
    ``__wrapped__``; a ``torch.optim.Adam`` built in this process adds the step's profiling hook on
    top)."""
    return inspect.unwrap(method)


def _compiling_loaded() -> bool:
    return "torch._dynamo" in sys.modules


class Adam(torch.optim.Adam):
    """``torch.optim.Adam`` (the module docstring): its fused kernel by default, its update, state and
    ``state_dict`` unchanged."""

    def __init__(self, params, lr: float = 1e-3, weight_decay: float = 0.0, fused: bool = True, **kwargs):
        super().__init__(params, lr=lr, weight_decay=weight_decay, fused=fused, **kwargs)

    def add_param_group(self, param_group: dict) -> None:
        if _compiling_loaded():
            return super().add_param_group(param_group)
        return _unwrapped(_Optimizer.add_param_group)(self, param_group)

    def zero_grad(self, set_to_none: bool = True) -> None:
        if _compiling_loaded():
            return super().zero_grad(set_to_none)
        return _unwrapped(_Optimizer.zero_grad)(self, set_to_none)

    def state_dict(self):
        if _compiling_loaded():
            return super().state_dict()
        return _unwrapped(_Optimizer.state_dict)(self)

    def load_state_dict(self, state_dict) -> None:
        if _compiling_loaded():
            return super().load_state_dict(state_dict)
        return _unwrapped(_Optimizer.load_state_dict)(self, state_dict)

    def step(self, closure=None):
        if _compiling_loaded() or self.defaults.get("differentiable"):
            # torch's own step, less the profiling hook this class's step already carries (a
            # torch.optim.Adam built in this process hooks torch's: its hooks would run twice)
            step = torch.optim.Adam.step
            return (step.__wrapped__ if getattr(step, "hooked", False) else step)(self, closure)
        with torch.no_grad():   # what torch's wrapper does outside compilation: gradients off
            return _unwrapped(torch.optim.Adam.step)(self, closure)
