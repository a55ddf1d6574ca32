"""The devices a test runs on: ``cpu`` always, ``cuda`` marked ``gpu`` where this torch has one."""

from __future__ import annotations

import pytest
import torch

HAS_CUDA = torch.cuda.is_available()
NO_CUDA = "no CUDA device: the cuda half of a device-parametrised test runs where one is (pytest -m gpu)"


#: The devices an equivalence test runs on, in the style of PyG's ``withCUDA``: ``cpu`` always, and
#: ``cuda`` marked ``gpu`` (``pytest -m gpu`` selects that half), skipped with one reason where this
#: torch has no CUDA device. Use as ``@pytest.mark.parametrize("device", DEVICES)``, or as the params
#: of a fixture that builds something per device (``device_param``).
DEVICES = ["cpu", pytest.param("cuda", marks=(pytest.mark.gpu, pytest.mark.skipif(not HAS_CUDA, reason=NO_CUDA)))]


def needs_gpu(test):
    """A test that needs a GPU and has no CPU half: marked ``gpu``, skipped with DEVICES' reason."""
    return pytest.mark.gpu(pytest.mark.skipif(not HAS_CUDA, reason=NO_CUDA)(test))

