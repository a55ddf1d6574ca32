"""dynagnn: fast training of dynamic graph neural networks."""

__version__ = "0.1.0"
