"""What a volume is (:class:`Volume`: ``units`` rows of ``width`` elements of ``dtype_size`` bytes) and
the shapes of the model whose volumes are counted (the package docstring has the conventions)."""

from __future__ import annotations

from dataclasses import dataclass

from ...errors import InputError

CELLS = {"lstm": 4, "gru": 3, "rnn": 1}


@dataclass(frozen=True)
class Volume:
    """``units`` rows of ``width`` elements of ``dtype_size`` bytes each."""

    units: float
    width: int = 1
    dtype_size: int = 4

    @property
    def elements(self) -> float:
        return self.units * self.width

    @property
    def bytes(self) -> float:
        return self.elements * self.dtype_size


# ----------------------------------------------------------------------------- shapes and checks

def gnn_params(features: int, hidden: int, layers: int) -> int:
    """GCN weights and biases of L layers: (F·h + h) + (L−1)·(h·h + h)."""
    _check_model(features, hidden, layers)
    return features * hidden + hidden + (layers - 1) * (hidden * hidden + hidden)


def rnn_params(hidden: int, layers: int, cell: str = "lstm") -> int:
    """Per-vertex RNN weights of L layers (PyTorch layout): L·gates·(h·h + h·h + 2h)."""
    _check_model(1, hidden, layers)
    if cell not in CELLS:
        raise InputError(f"unknown RNN cell {cell!r}: expected one of {sorted(CELLS)}")
    return layers * CELLS[cell] * (2 * hidden * hidden + 2 * hidden)


def layer_widths(features: int, hidden: int, layers: int) -> list[int]:
    """Width of the rows a vertex-partitioned GCN exchanges at each layer: F, then h."""
    _check_model(features, hidden, layers)
    return [features] + [hidden] * (layers - 1)


def _check_model(features, hidden, layers) -> None:
    if min(int(features), int(hidden), int(layers)) < 1:
        raise InputError(f"features, hidden width and layers must be >= 1, got {features}, {hidden}, {layers}")
