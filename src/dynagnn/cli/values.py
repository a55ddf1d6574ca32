"""Flag values that no config key's schema checks: the argparse types of such flags (a positive
number, a count or a word) and the check that a CUDA device named by a flag is on this machine."""

from __future__ import annotations

import argparse

from ..errors import ConfigError


def _positive(kind):
    """An argparse type: a ``kind`` (int, float) above 0, for flags that no config key stands for."""
    def parse(text: str):
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"invalid {kind.__name__} value: {text!r}") from None
        if not value > 0:
            raise argparse.ArgumentTypeError(f"{text}: must be greater than 0")
        return value

    parse.__name__ = f"positive {kind.__name__}"
    return parse


def _count_or_word(text: str) -> int | str:
    """A flag's value as an int when it is one (``--micro-batches 2``), else the word (``adaptive``)."""
    try:
        return int(text)
    except ValueError:
        return text


def check_device(device: str, name: str = "--device") -> None:
    """A CUDA device that this machine has (the schema checked the spelling: cpu, cuda or cuda:N);
    else torch fails later with a traceback, or after the store was read."""
    if not device.startswith("cuda"):
        return
    import torch

    count = torch.cuda.device_count() if torch.cuda.is_available() else 0
    index = int(device.partition(":")[2] or 0)
    if index >= count:
        sees = f"{count} CUDA device(s)" if count else f"no CUDA device (torch {torch.__version__}); use cpu"
        raise ConfigError(f"{name} {device}: this machine has {sees}")


def _flag(dest: str) -> str:
    """The flag of an argparse dest (a config key): ``frame_size`` is ``--frame-size``."""
    return "--" + dest.replace("_", "-")
