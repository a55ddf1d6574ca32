"""A model defined in a test file, named by import path, trains under every strategy its contract
allows with sequential's loss and gradients, and is refused by name under the others."""

import numpy as np
import pytest

from dynagnn.data.store import open_store
from dynagnn.distributed.testing import run_on
from dynagnn.errors import ConfigError
from dynagnn.schedule.plan import build_plan
from dynagnn.tasks.snapshot import training_ends
from dynagnn.train.engine import Trainer, check_run

from tests.testing.stores import small_store
from tests.testing.steps import assert_same_loss_and_grads, assert_same_step, group_config, group_step, group_steps
from tests.testing.steps import one_step, strategy_steps
from tests.testing.steps import strategy_config as config
from tests.testing.limits import PROCESS_HANG_S

pytestmark = pytest.mark.usefixtures("clean_model_registry")

PLAIN, STACKED = "tests.models.plugin_cells:GRUCell", "tests.models.plugin_cells:StackedCell"
MIXING = "tests.models.plugin_cells:GlobalMeanCell"


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    return small_store(tmp_path_factory.mktemp("plugin") / "link.zarr", num_snapshots=12)


def test_vertex_and_snapshot_split_equal_sequential(store):
    ref = {m: one_step(store, config(m, "sequential", 1)) for m in (PLAIN, STACKED)}
    for strategy, models in (("vertex", [PLAIN, STACKED]), ("snapshot", [STACKED])):
        r0, r1 = run_on(2, strategy_steps, store, models, strategy, {}, timeout=PROCESS_HANG_S)
        for m in models:
            assert_same_step(r0[m], ref[m])
            assert_same_step(r1[m], ref[m][:2] + (None, None))


def test_frames_equal_sequential(store):
    for m in (PLAIN, STACKED):
        ref = one_step(store, config(m, "sequential", 1))
        assert_same_step(one_step(store, config(m, "frames", 1, frame_size=2, pipeline="off")), ref)


def test_group_equals_sequential(store, tmp_path):
    """BLAD's pair on one worker, by a plan of uneven per-snapshot times (a model of no GCNLayer has no
    operator order to set: the plan's order lists no layer)."""
    st = open_store(store)
    T = st.num_snapshots
    ends = training_ends(st, 3)
    rng = np.random.default_rng(0)
    fwd = rng.uniform(1, 10, T)
    cases = {}
    for m in (PLAIN, STACKED):
        path = tmp_path / f"{m.rsplit(':', 1)[1]}.json"
        build_plan(fwd, 2 * fwd, group_len=3, num_workers=1, dataset=st.attrs["name"], model=m,
                   layer_times=tuple(np.zeros((T, 0)) for _ in range(3)), store_checksum=st.checksum,
                   groups=ends).save(path)
        cases[(m, "group")] = (m, "group", str(path), ends)
    results = run_on(1, group_steps, store, cases, procs_per_worker=2, timeout=PROCESS_HANG_S)
    for (m, _), case in cases.items():
        ref = group_step(store, group_config(m, "sequential", 1), ends)
        for res in results:
            assert_same_loss_and_grads(res[(m, "group")], ref)


@pytest.mark.parametrize("model,strategy,message", [
    (PLAIN, "snapshot", "the snapshot strategy cannot train model tests.models.plugin_cells:GRUCell: it is a "
                        "DynamicGNN with one step per snapshot, not a StackedGNN"),
    (MIXING, "vertex", "the vertex strategy cannot train model tests.models.plugin_cells:GlobalMeanCell: its step "
                       "mixes vertices outside adj.spmm"),
    ("evolvegcn_h", "vertex", "the vertex strategy cannot train model evolvegcn_h: its step mixes vertices"),
])
def test_refused_by_name_with_the_strategies_that_can(store, model, strategy, message):
    cfg = config(model, strategy, 2)
    with pytest.raises(ConfigError) as e:
        check_run(cfg.strategy_cls(cfg), open_store(store), 2)
    assert str(e.value).startswith(message) and "strategies that can: sequential" in str(e.value)
    assert "\n" not in str(e.value)


def test_group_without_a_plan_plans_from_the_models_own_steps(store, tmp_path):
    """No operator list for a user's model: the plan made at start times its step on every snapshot;
    the epoch's losses equal sequential training's."""
    from dynagnn import api
    from dynagnn.cost.step_times import model_step_times
    from dynagnn.train.run_config import TrainConfig

    fwd, bwd = model_step_times(open_store(store), PLAIN, 5)
    assert fwd.shape == bwd.shape == (open_store(store).num_snapshots,) and (fwd > 0).all() and (bwd > 0).all()
    runs = {}
    for strategy in ("sequential", "group"):
        cfg = TrainConfig.of(model=PLAIN, strategy=strategy, hidden=5, window=3, epochs=2, patience=2)
        runs[strategy], _ = api.train(store, tmp_path / strategy, cfg, progress=False)
    assert runs["group"]["loss"].to_numpy() == pytest.approx(runs["sequential"]["loss"].to_numpy(), rel=1e-5)


def test_the_plan_at_start_is_built_from_the_measured_steps(store, tmp_path, monkeypatch):
    """Injected step times (front-heavy, then back-heavy groups) decide the plan's split: the plan made at
    start splits each group where the planner splits those times."""
    from dynagnn import api
    from dynagnn.cost import step_times
    from dynagnn.schedule.plan import SchedulePlan
    from dynagnn.train.run_config import TrainConfig

    T = open_store(store).num_snapshots
    splits = []
    for heavy in (np.linspace(10, 1, T), np.linspace(1, 10, T)):
        monkeypatch.setattr(step_times, "model_step_times", lambda *a, _h=heavy, **k: (_h, 2 * _h))
        cfg = TrainConfig.of(model=PLAIN, strategy="group", hidden=5, window=3)
        path = api.plan_at_start(store, cfg, 1, 1, tmp_path / "plan.json")
        plan = SchedulePlan.load(path)
        assert plan.meta["predictor"] == "measured steps at start"
        assert plan.meta["snapshot_forward_s"] == pytest.approx(heavy.tolist())
        splits.append(np.concatenate([p.splits for p in plan.processes]))
    assert not np.array_equal(splits[0], splits[1])   # the times, not a default, placed the split
