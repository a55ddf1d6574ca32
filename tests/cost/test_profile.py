"""The operator profiler: the grid, the random graphs, the quick profile's rows, the Parquet file."""

import numpy as np
import pandas as pd
import pytest
import torch

from dynagnn.cost.fit import fit
from dynagnn.cost.profile import (COLD_OPERATORS, COLUMNS, DIRECTIONS, OPERATORS, Evictor, Grid, _Timer, build_grid,
                                  measure, profile_operators, quick_grid, random_adjacency, read_profile,
                                  write_profile)
from dynagnn.errors import ConfigError, CostError
from tests.testing.devices import needs_gpu


@pytest.fixture(scope="module")
def quick_profile():
    return profile_operators(quick_grid(), "cpu", warmup=1, repeats=3, min_sample_s=5e-4, progress=False, threads=1)


def test_quick_profile_rows(quick_profile):
    df = quick_profile
    assert list(df.columns) == COLUMNS
    pts = quick_grid().points()
    assert len(df) == 2 * len(pts)
    assert set(df.operator) == set(OPERATORS) and set(df.direction) == set(DIRECTIONS)
    assert (df.device == "cpu").all() and (df.threads == 1).all() and (df.repeats == 3).all()
    assert (df.median_s > 0).all() and (df.min_s > 0).all() and (df.min_s <= df.median_s).all()
    assert (df.number >= 1).all()
    assert (df.cold == df.operator.isin(COLD_OPERATORS)).all() and COLD_OPERATORS == ("graph_op",)
    # one row per key, a backward row for every forward row
    key = ["operator", "direction", "device", "N", "nnz", "in_width", "out_width"]
    assert not df.duplicated(key).any()
    fwd = df[df.direction == "forward"].drop(columns="direction")[key[:1] + key[2:]]
    bwd = df[df.direction == "backward"].drop(columns="direction")[key[:1] + key[2:]]
    pd.testing.assert_frame_equal(fwd.reset_index(drop=True), bwd.reset_index(drop=True))
    # shape columns an operator does not use are 0; graph nnz is that of Â (edges + N self-loops)
    g = df[df.operator == "graph_op"]
    assert (g.nnz >= g.N).all() and (g.in_width == g.out_width).all()
    assert set(zip(g.N, g.nnz)) == {(64, 128), (64, 512), (512, 1024), (512, 4096)}
    assert (df[df.operator.isin(["nn_op", "gru", "lstm"])].nnz == 0).all()
    ev = df[df.operator == "evolve"]
    assert (ev.N == 0).all() and (ev.nnz == 0).all()
    assert torch.get_num_threads() >= 1  # restored after the run


def test_quick_profile_fits_every_operator(quick_profile):
    pred = fit(quick_profile)
    assert set(pred.models) == {(op, d) for op in OPERATORS for d in DIRECTIONS}
    for m in pred.models.values():
        assert (m.coef >= 0).all() and m.n_train >= 3


def test_random_adjacency_exact_and_seeded():
    a = random_adjacency(300, 2000, seed=5)
    assert a.num_nodes == 300 and a.num_edges == 2000
    b = random_adjacency(300, 2000, seed=5)
    assert torch.equal(a.matrix.col_indices(), b.matrix.col_indices())
    assert not torch.equal(a.matrix.col_indices(), random_adjacency(300, 2000, seed=6).matrix.col_indices())
    full = random_adjacency(10, 100, seed=0)  # dense: every off-diagonal entry
    assert full.num_edges == 100
    assert random_adjacency(50, 10, seed=0).num_edges == 50  # never fewer than the self-loops


def test_build_grid_spans_the_datasets():
    shapes = [(1_000, 5_000), (20_000, 400_000), (3_000, 3_000)]
    g = build_grid(shapes, widths=[16, 32, 128], vertex_levels=4, degree_levels=3, width_levels=3)
    assert g.vertices[0] == 1_000 and g.vertices[-1] == 20_000 and len(g.vertices) == 4
    assert g.degrees[0] == pytest.approx(1.0) and g.degrees[-1] == pytest.approx(20.0)
    assert g.widths == [16, 45, 128]
    ratios = np.diff(np.log(g.vertices))
    assert np.allclose(ratios, ratios[0], rtol=0.01)  # log-spaced
    wide = build_grid(shapes, widths=[16], margin=2.0)
    assert wide.vertices[0] == 500 and wide.vertices[-1] == 40_000 and wide.widths == [16]
    pts = g.points()
    assert {p.operator for p in pts} == set(OPERATORS)
    assert sum(p.operator == "graph_op" for p in pts) == 4 * 3 * 3
    assert sum(p.operator == "gru" for p in pts) == 4 * 3 * 3
    assert sum(p.operator == "evolve" for p in pts) == 3 * 3
    with pytest.raises(ConfigError):
        build_grid([], widths=[8])
    with pytest.raises(ConfigError):
        build_grid(shapes, widths=[0])
    with pytest.raises(ConfigError, match="unknown operator"):
        Grid([10], [2.0], [4], operators=("attention",)).points()


def test_parquet_round_trip(tmp_path, quick_profile):
    path = write_profile(quick_profile, tmp_path / "cost" / "cpu" / "profile.parquet")
    back = read_profile(path)
    pd.testing.assert_frame_equal(back, quick_profile)
    assert not list(path.parent.glob(".*tmp*"))
    with pytest.raises(CostError, match="not found"):
        read_profile(tmp_path / "nope.parquet")
    quick_profile.drop(columns=["median_s"]).to_parquet(tmp_path / "bad.parquet")
    with pytest.raises(CostError, match="median_s"):
        read_profile(tmp_path / "bad.parquet")


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the CPU-only error")
def test_cuda_on_a_cpu_machine_is_a_clear_error():
    with pytest.raises(ConfigError, match="no CUDA device"):
        profile_operators(quick_grid(), "cuda", progress=False)
    with pytest.raises(ConfigError, match="'cpu' or 'cuda'"):
        profile_operators(quick_grid(), "meta", progress=False)


@needs_gpu
def test_profile_on_cuda_when_present():
    df = profile_operators(Grid([256], [4.0], [8]), "cuda", warmup=1, repeats=3, progress=False)
    assert (df.device == "cuda").all() and (df.median_s > 0).all() and len(df) == 2 * len(OPERATORS)


def test_cold_timing_evicts_before_every_timed_call():
    """With ``before``, every timed call follows its own eviction, and the eviction is not timed."""
    import time

    log = []
    slow_evict = lambda: (log.append("evict"), time.sleep(0.01))  # noqa: E731
    call = lambda: log.append("call")  # noqa: E731
    per_call = _Timer(torch.device("cpu"))(call, 4, slow_evict)
    assert log == ["evict", "call"] * 4
    assert per_call < 0.005  # the 10 ms evictions are outside the timed calls
    log.clear()
    _, _, number = measure(call, _Timer(torch.device("cpu")), warmup=1, repeats=2, min_sample_s=0.0, before=slow_evict)
    assert number == 1 and log == ["call"] + ["evict", "call"] * 2  # warm-up, then 2 one-call samples
    ev = Evictor(torch.device("cpu"), nbytes=4096)
    ev()
    ev()
    assert ev.buffer.numel() == 1024 and float(ev.buffer[0]) == 2.0  # it writes the whole buffer
