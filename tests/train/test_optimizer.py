"""The trainer's Adam (:mod:`dynagnn.train.optimizer`): torch's fused Adam's update and state, step
for step, without torch's compiler stack."""

import copy

import pytest
import torch

from dynagnn.train import optimizer
from dynagnn.train.optimizer import Adam
from tests.testing.fresh import fresh_python


@pytest.fixture
def unwrapped(monkeypatch):
    """Our path, as a process without torch._dynamo takes it: building torch's Adam (the reference)
    loads it, after which ours would defer to torch's own methods."""
    monkeypatch.setattr(optimizer, "_compiling_loaded", lambda: False)


def _params(seed=0):
    g = torch.Generator().manual_seed(seed)
    return [torch.nn.Parameter(torch.randn(6, 3, generator=g)), torch.nn.Parameter(torch.randn(3, generator=g))]


def _steps(opt, params, n, start=0):
    for i in range(start, start + n):
        opt.zero_grad()
        loss = sum(((p - 0.1 * i) ** 2).sum() * (k + 1) for k, p in enumerate(params))
        loss.backward()
        opt.step()


def test_the_same_update_and_state_as_torchs_fused_adam(unwrapped):
    ours, theirs = _params(), _params()
    a = Adam(ours, lr=0.05, weight_decay=0.01)
    b = torch.optim.Adam(theirs, lr=0.05, weight_decay=0.01, fused=True)
    _steps(a, ours, 7)
    _steps(b, theirs, 7)
    assert all(torch.equal(x, y) for x, y in zip(ours, theirs))
    sa, sb = a.state_dict(), b.state_dict()
    assert sa["param_groups"] == sb["param_groups"]
    assert sa["state"].keys() == sb["state"].keys()
    assert all(torch.equal(sa["state"][k][n], sb["state"][k][n]) for k in sb["state"] for n in sb["state"][k])


def test_a_state_loaded_continues_as_the_run_it_came_from(unwrapped):
    whole, resumed = _params(1), _params(1)
    a = Adam(whole, lr=0.05)
    _steps(a, whole, 3)
    saved = {k: v.detach().clone() for k, v in enumerate(whole)}, copy.deepcopy(a.state_dict())
    _steps(a, whole, 4, start=3)
    for p, k in zip(resumed, saved[0]):
        p.data.copy_(saved[0][k])
    b = Adam(resumed, lr=0.05)
    b.load_state_dict(saved[1])
    _steps(b, resumed, 4, start=3)
    assert all(torch.equal(x, y) for x, y in zip(whole, resumed))


def test_building_and_stepping_it_leaves_the_compiler_stack_unloaded():
    code = ("import sys, torch; from dynagnn.train.optimizer import Adam; w = torch.nn.Parameter(torch.ones(3)); "
            "o = Adam([w]); w.grad = torch.ones(3); o.step(); o.zero_grad(); o.load_state_dict(o.state_dict()); "
            "print('torch._dynamo' in sys.modules)")
    assert fresh_python(code).strip() == "False"


@pytest.mark.parametrize("loaded", [False, True])
def test_step_hooks_run_once_whether_or_not_the_compiler_stack_is_loaded(monkeypatch, loaded):
    torch.optim.Adam([torch.nn.Parameter(torch.ones(2))])   # hooks torch's own step, as any build in the process
    monkeypatch.setattr(optimizer, "_compiling_loaded", lambda: loaded)
    w = torch.nn.Parameter(torch.ones(3))
    o, seen = Adam([w]), []
    o.register_step_pre_hook(lambda *a: seen.append("pre"))
    o.register_step_post_hook(lambda *a: seen.append("post"))
    w.grad = torch.ones(3)
    o.step()
    assert seen == ["pre", "post"]
