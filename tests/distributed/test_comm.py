"""The collectives on 2 gloo processes: values against a plain computation, bytes against the
closed forms, gradients of the differentiable exchanges against a one-process computation."""

import os
import signal
import time

import numpy as np
import pytest
import torch

from dynagnn.analysis.commvolume import count_ring_allreduce
from dynagnn.distributed import DistError
from dynagnn.distributed.comm import Comm, HaloPlan, ring_share
from dynagnn.distributed.context import DistContext
from dynagnn.distributed.testing import run_on
from dynagnn.errors import ConfigError


def _all_reduce(ctx, comm, n):
    t = torch.arange(n, dtype=torch.float32) * (ctx.rank + 1)
    comm.all_reduce(t)
    return t.tolist(), comm.take_counts()


def test_all_reduce_sums_and_counts_ring_bytes():
    out = run_on(2, _all_reduce, 7)
    expect = (np.arange(7) * 3.0).tolist()
    assert out[0][0] == expect and out[1][0] == expect
    sent = sum(o[1]["all_reduce"][0] for o in out)
    assert sent == 4 * count_ring_allreduce(7, 2)
    assert [o[1]["all_reduce"][1] for o in out] == [1, 1]


def test_ring_share_sums_to_ring_volume():
    for world in (1, 2, 3, 5):
        for w in (0, 1, 7, 100):
            assert sum(ring_share(w, world, r) for r in range(world)) == count_ring_allreduce(w, world)


def _uneven(ctx, comm):
    # rank 0 sends 2 rows to itself, 3 to rank 1; rank 1 sends 1 to rank 0, 4 to itself
    send = [2, 3] if ctx.rank == 0 else [1, 4]
    recv = [2, 1] if ctx.rank == 0 else [3, 4]
    x = (torch.arange(5 * 3, dtype=torch.float32).view(5, 3) + 100 * ctx.rank).requires_grad_()
    y = comm.exchange(x, send, recv, "redistribute")
    (y * torch.arange(1, y.shape[0] + 1, dtype=torch.float32)[:, None]).sum().backward()
    return y.detach(), x.grad, comm.take_counts()


def test_uneven_all_to_all_values_gradients_and_bytes():
    (y0, g0, c0), (y1, g1, c1) = run_on(2, _uneven)
    x0 = torch.arange(15.).view(5, 3)
    x1 = x0 + 100
    assert torch.equal(y0, torch.cat([x0[:2], x1[:1]]))
    assert torch.equal(y1, torch.cat([x0[2:], x1[1:]]))
    # d/dx of sum(w_i * y_i): each sent row gets the weight of its position at the receiver
    assert torch.equal(g0[:, 0], torch.tensor([1., 2., 1., 2., 3.]))
    assert torch.equal(g1[:, 0], torch.tensor([3., 4., 5., 6., 7.]))
    assert c0["redistribute"] == (3 * 3 * 4, 1) and c1["redistribute"] == (1 * 3 * 4, 1)
    assert c0["redistribute.backward"] == (1 * 3 * 4, 1) and c1["redistribute.backward"] == (3 * 3 * 4, 1)


def _nothing_to_send(ctx, comm):
    # rank 1 holds no rows (a worker without items of a short step): it only receives
    x = torch.arange(6, dtype=torch.float32).view(3, 2) if ctx.rank == 0 else torch.zeros(0, 2)
    send = [1, 2] if ctx.rank == 0 else [0, 0]
    recv = [1, 0] if ctx.rank == 0 else [2, 0]
    return comm.all_to_all(x, send, recv, "r"), comm.take_counts()


def test_a_worker_with_no_rows_takes_part():
    (y0, c0), (y1, c1) = run_on(2, _nothing_to_send)
    assert torch.equal(y0, torch.tensor([[0.0, 1.0]]))
    assert torch.equal(y1, torch.tensor([[2.0, 3.0], [4.0, 5.0]]))
    assert c0["r"] == (2 * 2 * 4, 1) and c1["r"] == (0, 1)


def _halo(ctx, comm):
    # global rows 0..5, rank 0 owns [0, 2, 4], rank 1 owns [1, 3, 5]
    own = [0, 2, 4] if ctx.rank == 0 else [1, 3, 5]
    x = torch.tensor([[float(v), 10.0 * v] for v in own], requires_grad=True)
    if ctx.rank == 0:   # rank 1 needs global 2 and 4 (local 1, 2); rank 0 needs global 5 from rank 1
        plan = HaloPlan(torch.tensor([1, 2]), [0, 2], [0, 1])
    else:
        plan = HaloPlan(torch.tensor([2]), [1, 0], [2, 0])
    h = comm.halo(x, plan)
    (h * h).sum().backward()
    return h.detach(), x.grad, comm.take_counts()


def test_halo_exchange_rows_gradients_and_bytes():
    (h0, g0, c0), (h1, g1, c1) = run_on(2, _halo)
    assert torch.equal(h0, torch.tensor([[5.0, 50.0]]))
    assert torch.equal(h1, torch.tensor([[2.0, 20.0], [4.0, 40.0]]))
    # d(h^2)/dx = 2x at the owner, for the rows that were sent
    assert torch.equal(g0, torch.tensor([[0.0, 0.0], [4.0, 40.0], [8.0, 80.0]]))
    assert torch.equal(g1, torch.tensor([[0.0, 0.0], [0.0, 0.0], [10.0, 100.0]]))
    assert c0["halo"] == (2 * 2 * 4, 1) and c1["halo"] == (1 * 2 * 4, 1)
    assert c0["halo.backward"] == (1 * 2 * 4, 1) and c1["halo.backward"] == (2 * 2 * 4, 1)


def _gather(ctx, comm):
    counts = [3, 2]
    x = torch.full((counts[ctx.rank], 2), float(ctx.rank + 1), requires_grad=True)
    y = comm.gather_rows(x, counts)
    w = torch.arange(10, dtype=torch.float32).view(5, 2)
    (y * w).sum().backward()
    return y.detach(), x.grad


def test_gather_rows_and_its_reduce_scatter_backward():
    (y0, g0), (y1, g1) = run_on(2, _gather)
    expect = torch.tensor([[1., 1.]] * 3 + [[2., 2.]] * 2)
    assert torch.equal(y0, expect) and torch.equal(y1, expect)
    w = torch.arange(10, dtype=torch.float32).view(5, 2)
    assert torch.equal(g0, 2 * w[:3]) and torch.equal(g1, 2 * w[3:])


def test_one_process_collectives_are_the_identity():
    comm = Comm(DistContext.single())
    x = torch.randn(4, 3, requires_grad=True)
    y = comm.exchange(x, [4], [4], "r")
    assert torch.equal(y, x)
    assert torch.equal(comm.gather_rows(x, [4]), x)
    assert comm.take_counts() == {}


def _die(ctx, comm):
    for i in range(100):
        comm.all_reduce(torch.ones(3))
        if ctx.rank == 1 and i == 3:
            os.kill(os.getpid(), signal.SIGKILL)
        time.sleep(0.01)
    return "finished"


def test_a_killed_worker_stops_the_others_with_one_error():
    start = time.monotonic()
    with pytest.raises(DistError, match=r"worker 1 was killed by SIGKILL"):
        run_on(2, _die, timeout=60)
    assert time.monotonic() - start < 45   # before the 60 s timeout: the death was seen, not waited out


def _user_error(ctx, comm):
    if ctx.rank == 1:
        raise ConfigError("bad option on rank 1")
    comm.barrier()


def test_a_user_error_in_a_worker_is_raised_as_itself():
    with pytest.raises(ConfigError, match="bad option on rank 1"):
        run_on(2, _user_error, timeout=30)


def _grads(ctx, comm):
    a, b, c = (torch.nn.Parameter(torch.zeros(3)) for _ in range(3))
    if ctx.rank == 0:
        a.grad = torch.tensor([1.0, 2.0, 3.0])
    c.grad = torch.full((3,), float(ctx.rank + 1))
    comm.all_reduce_grads([a, b, c])
    return [None if p.grad is None else p.grad.tolist() for p in (a, b, c)]


def test_all_reduce_grads_sums_and_leaves_none_where_no_worker_has_one():
    """A gradient one worker lacks counts as zero; a parameter no worker has a gradient for keeps
    none on every worker (Adam then skips it, as one process would)."""
    for got in run_on(2, _grads):
        assert got == [[1.0, 2.0, 3.0], None, [3.0, 3.0, 3.0]]


@pytest.mark.parametrize("device,ppw,local,gpus,expect", [
    ("cpu", 1, 2, 0, "gloo"), ("cuda:0", 1, 2, 2, "nccl"), ("cuda:0", 1, 1, 1, "nccl"),
    ("cuda:0", 1, 2, 1, "gloo"),   # two workers on one GPU: nccl refuses two ranks on one device
    ("cuda:0", 2, 2, 4, "gloo"),   # BLAD's co-located pair shares a GPU
])
def test_nccl_only_where_every_local_worker_has_its_own_gpu(monkeypatch, device, ppw, local, gpus, expect):
    from dynagnn.distributed.launch import backend_on

    monkeypatch.setattr(torch.cuda, "device_count", lambda: gpus)
    assert backend_on(torch.device(device), ppw, local) == expect


def _rank_and_sum(ctx, comm):
    t = torch.ones(2)
    comm.all_reduce(t)
    return ctx.rank, t.tolist()


@pytest.mark.parametrize("taken", [1, 3])
def test_a_rendezvous_port_taken_first_is_tried_again_on_another(monkeypatch, taken):
    """The launcher picks a free port, then rank 0 listens on it; another process may take it between
    the two (a flaky EADDRINUSE under parallel tests). Nothing has run then, so the workers start again
    on a fresh port, up to PORT_TRIES starts; past them, one line."""
    import socket

    from dynagnn.distributed import launch as L

    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as held:
        held.bind(("0.0.0.0", 0))
        held.listen()
        port, real, picks = held.getsockname()[1], L._free_port, []

        def pick():
            picks.append(port if len(picks) < taken else real())
            return picks[-1]
        monkeypatch.setattr(L, "_free_port", pick)
        if taken < L.PORT_TRIES:
            assert run_on(2, _rank_and_sum, timeout=60) == [(0, [2.0, 2.0]), (1, [2.0, 2.0])]
            assert picks[0] == port and picks[-1] != port and len(picks) == taken + 1
        else:
            with pytest.raises(DistError, match=f"could not open the rendezvous on 127.0.0.1 in {L.PORT_TRIES} "
                                                "tries") as err:
                run_on(2, _rank_and_sum, timeout=60)
            assert "\n" not in str(err.value) and picks == [port] * L.PORT_TRIES
