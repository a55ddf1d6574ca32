import numpy as np
import pytest

from dynagnn.analysis.redundancy import batch_redundancy, fit_reciprocal, per_batch_redundancy
from dynagnn.data.types import EventStream


def random_stream(seed, e=230, n=30):
    rng = np.random.default_rng(seed)
    return EventStream(src=rng.integers(0, n, e), dst=rng.integers(0, n, e),
                       t=np.sort(rng.integers(0, e // 3, e)))


def brute_eta(ev, bs, k, drop_last=True):
    src, dst, t = ev.src.tolist(), ev.dst.tolist(), ev.t.tolist()
    e = len(t)
    nb = e // bs if drop_last else -(-e // bs)
    out = []
    for b in range(nb):
        occ, sampled = [], []
        for i in range(b * bs, min((b + 1) * bs, e)):
            for v in (src[i], dst[i]):
                occ.append(v)
                hist = [dst[j] if src[j] == v else src[j]
                        for j in range(e) if t[j] < t[i] for _ in range((src[j] == v) + (dst[j] == v))]
                sampled += hist[::-1][:k]
        sampled += occ
        out.append((1 - len(set(sampled)) / len(sampled), 1 - len(set(occ)) / len(occ),
                    len(sampled), len(occ)))
    return out


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("bs,k,drop_last", [(40, 3, True), (70, 5, False), (25, 0, True)])
def test_per_batch_matches_sets(seed, bs, k, drop_last):
    ev = random_stream(seed)
    d = per_batch_redundancy(ev, 30, bs, k, drop_last=drop_last)
    want = brute_eta(ev, bs, k, drop_last)
    assert len(d) == len(want)
    np.testing.assert_allclose(d["eta1"], [w[0] for w in want])
    np.testing.assert_allclose(d["eta2"], [w[1] for w in want])
    assert d["sampled"].tolist() == [w[2] for w in want]
    assert d["original"].tolist() == [w[3] for w in want]


def test_fit_reciprocal_recovers_known():
    bs = np.array([200, 500, 1000, 2000, 4000])
    a, b = fit_reciprocal(bs, 0.9 - 30.0 / bs)
    assert a == pytest.approx(0.9) and b == pytest.approx(-30.0)


def test_batch_redundancy_table():
    ev = random_stream(5, e=400)
    d = batch_redundancy(ev, 30, batch_sizes=(20, 50, 100), k=4)
    assert d["batch_size"].tolist() == [20, 50, 100]
    assert d["batches"].tolist() == [20, 8, 4]
    p = per_batch_redundancy(ev, 30, 50, 4)
    assert d.loc[1, "mean_eta1"] == pytest.approx(p["eta1"].mean())
    assert d.loc[1, "mean_eta2"] == pytest.approx(p["eta2"].mean())
    assert set(d.attrs["fit"]) == {"eta1", "eta2"}
    # redundancy rises with batch size on a small vertex set
    assert d["mean_eta2"].is_monotonic_increasing
