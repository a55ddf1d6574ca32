"""dynagnn.train.backward: torch.autograd.backward's gradients, bit for bit, without its shape solver's import."""

from __future__ import annotations


import pytest
import torch

from dynagnn.train.backward import backward
from tests.testing.fresh import fresh_python


def _grads(run) -> list[torch.Tensor]:
    torch.manual_seed(0)
    lin = torch.nn.Linear(5, 3)
    x = torch.randn(7, 5, requires_grad=True)
    a, b = torch.tanh(lin(x)), lin(x).sigmoid()
    ga, gb = torch.randn(7, 3), torch.randn(7, 3)
    run([a, b], [ga, gb])
    return [lin.weight.grad, lin.bias.grad, x.grad]


def test_equals_torch_backward_bit_for_bit():
    ours, torch_s = _grads(backward), _grads(torch.autograd.backward)
    for o, t in zip(ours, torch_s):
        assert torch.equal(o, t)


def test_one_tensor_and_accumulation():
    w = torch.ones(3, requires_grad=True)
    backward(w * 2, torch.tensor([1.0, 2.0, 3.0]))
    backward(w * 2, torch.tensor([1.0, 1.0, 1.0]))
    assert w.grad.tolist() == [4.0, 6.0, 8.0]


def test_a_mismatched_gradient_is_torchs_error():
    w = torch.ones(3, requires_grad=True)
    with pytest.raises(RuntimeError, match="Mismatch in shape"):
        backward(w * 2, torch.ones(4))


def test_no_shape_solver_import():
    code = ("import sys, torch\nfrom dynagnn.train.backward import backward\n"
            "w = torch.ones(3, requires_grad=True)\nbackward([w * 2], [torch.ones(3)])\n"
            "assert w.grad.tolist() == [2.0, 2.0, 2.0]\n"
            "print('sympy' in sys.modules, 'torch.fx.experimental.symbolic_shapes' in sys.modules)\n")
    assert fresh_python(code).split() == ["False", "False"]
