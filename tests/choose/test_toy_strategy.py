"""The chooser asks the strategies (issue 54): a strategy defined here, with its own facts (a speed option
declared by its field's metadata, its rank in the tie-break, its traffic per step), is enumerated,
predicted, trialled and chosen where it is the fastest, with nothing under ``dynagnn.choose`` told of it."""

import dataclasses

import pytest

from dynagnn.choose.candidates import Candidate, candidates
from dynagnn.choose.predict import STEP_SYNC_SECONDS, Base, LinkCost, communication
from dynagnn.choose.request import Request
from dynagnn.train.options import Speed, WindowOptions, option
from dynagnn.train.strategies import STRATEGIES
from dynagnn.train.strategies.sequential import Sequential

from tests.testing.stores import small_store

TINY = dict(model="tgcn", hidden=6, window=3, epochs=2, seed=3)


@dataclasses.dataclass(frozen=True)
class ToyOptions(WindowOptions):
    toy_chunks: int = option(1, "toy: pieces a window is stepped in (the step is the same)", Speed((1, 3)),
                             type="integer", minimum=1)


class Toy(Sequential):
    """The sequential loop under another name, with its own facts: it computes what sequential computes."""

    name = "toy"
    Options = ToyOptions
    simplicity = 1_000
    plain = False
    fixed = {"checkpoint_blocks": 1}   # its one speed option the only one tried
    sent = 123.0

    @classmethod
    def step_traffic(cls, workers, shape):
        return [("handover", cls.sent * shape.num_nodes, 3)]


@pytest.fixture
def toy(monkeypatch):
    monkeypatch.setitem(STRATEGIES, "toy", Toy)
    return Toy


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    return small_store(tmp_path_factory.mktemp("toy") / "link.zarr", num_snapshots=12)


def test_its_speed_option_and_rank_come_from_the_class(toy):
    cands = [c for c in candidates("snapshot", cores=2, window=4) if c.strategy == "toy"]
    # each split of the 2 cores, at each of the option's values (1, its default, left unset)
    assert {(c.workers, c.threads, c.options) for c in cands} == {
        (w, t, o) for w, t in ((1, 2), (1, 1), (2, 1)) for o in ((), (("toy_chunks", 3),))}
    assert all(c.reason is None for c in cands)
    # a tie goes to sequential: the toy ranks after every built-in strategy
    assert Candidate("sequential").simplicity() < Candidate("toy").simplicity() < (2, 0, 0)
    # its traffic is the class's: 3 handovers of sent x N bytes a step, on top of the gradients' all-reduce
    link = LinkCost(handover=(0.5, 1e-3), allreduce=(0.0, 0.0))
    base = Base(seconds={1: 1.0}, steps=4, params=10, num_nodes=7)
    got = communication(Candidate("toy", workers=2), base, link)
    assert got == pytest.approx(4 * (STEP_SYNC_SECONDS + 3 * (0.5 + 1e-3 * 123.0 * 7)))


def test_it_is_predicted_trialled_and_chosen_where_it_is_the_fastest(toy, store, monkeypatch, tmp_path):
    from dynagnn.choose import trials
    from dynagnn.api.plan import with_plan
    from dynagnn.choose import resolve as auto
    from dynagnn.choose.resolve import resolve

    real = trials.Trials.measure

    def measure(self, key, config, peak=0.0):   # its steps take a tenth of what they took: the fastest
        got = real(self, key, config, peak)
        if key.strategy != "toy":
            return got
        return dataclasses.replace(got, step_seconds=tuple(s / 10 for s in got.step_seconds))
    monkeypatch.setattr(trials.Trials, "measure", measure)
    monkeypatch.setattr(auto, "full_choice_seconds", lambda base: 0.0)   # measured and trialled, however short
    choice = resolve(store, Request.of(cores=2, trial_share=1000.0, **TINY), planned=lambda c: with_plan(store, c, tmp_path))
    rows = [r for r in choice.report["candidates"] if r["strategy"] == "toy"]
    assert {tuple(r["options"].items()) for r in rows} == {(), (("toy_chunks", 3),)}
    # its own check (sequential's) refuses 2 workers; each of one process is predicted, and timed
    one = [r for r in rows if r["workers"] == 1]
    assert all("runs on 1 worker" in r["reason"] for r in rows if r["workers"] == 2) and len(one) == 4
    assert all(r["predicted_seconds"] > 0 and r["predicted_peak_bytes"] > 0 for r in one)
    assert all(r["trial_seconds"] is not None for r in one)
    assert choice.report["chosen_by"] == "trials" and choice.config.strategy == "toy"
    assert choice.config.strategy_cls is Toy
