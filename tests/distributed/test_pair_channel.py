"""The co-located pair's channel on 2 gloo processes: messages arrive exactly and in order through
shared memory, through gloo when a message finds no room in the ring or nothing is shared, and
nothing is left in the shared directory."""

import os

from dynagnn.distributed import DistError

import pytest
import torch

from dynagnn.distributed.pair_channel import HEADER, PairChannel, _shared_dir, message_bytes
from dynagnn.distributed.testing import run_on


def _message(k: int) -> list[torch.Tensor]:
    g = torch.Generator().manual_seed(k)
    return [torch.randn(1000 + k, generator=g), torch.randint(0, 10**12, (3, 7 + k), generator=g)]


def _pipeline(ctx, comm, depth, shared, capacity, rounds):
    """p1 sends ``depth`` messages ahead, then one per reply, as BLAD's p1 does at queue depth
    ``depth``; p2 answers each with its sums. Each side returns what it received, as lists."""
    first = ctx.rank == 0
    ch = PairChannel.open(comm, 1 - ctx.rank, first, capacity, shared=shared)
    got = []
    if first:
        replies = 0
        for k in range(rounds):
            if k >= depth:
                got.append([x.item() for x in ch.recv("back")])
                replies += 1
            ch.send(_message(k), "handoff")
        while replies < rounds:
            got.append([x.item() for x in ch.recv("back")])
            replies += 1
    else:
        for _ in range(rounds):
            x, i = ch.recv("handoff")
            got.append([x.tolist(), i.tolist()])
            ch.send([x.double().sum().reshape(1), i.sum().reshape(1)], "back")
    ch.flush()
    # p1 made the ring and the pipes, named after its pid
    leftovers = [f for f in os.listdir(_shared_dir()) if first and f.startswith(f"dynagnn-pair-{os.getpid()}-")]
    return got, ch.shared, ch.via_gloo, leftovers, dict(comm.take_counts())


def _biggest(rounds):
    return message_bytes((1000 + rounds, torch.float32), (3 * (7 + rounds), torch.int64))


@pytest.mark.parametrize("shared, room, gloo_messages", [
    (True, "depth", 0),  # the ring holds every message in flight
    (True, "one", None),  # room for one: some wait their turn over gloo
    (True, "none", 7),  # no message fits
    (False, "depth", 7),  # nothing shared
])
def test_messages_arrive_exactly_in_order(shared, room, gloo_messages):
    rounds, depth = 7, 3
    capacity = {"depth": (depth + 1) * _biggest(rounds), "one": _biggest(rounds), "none": 64}[room]
    p1, p2 = run_on(2, _pipeline, depth, shared, capacity, rounds)
    sent = [_message(k) for k in range(rounds)]
    assert [x for x, _ in p2[0]] == [m[0].tolist() for m in sent]
    assert [i for _, i in p2[0]] == [m[1].reshape(-1).tolist() for m in sent]
    assert p1[0] == [[m[0].double().sum().item(), m[1].sum().item()] for m in sent]
    assert p1[1] == p2[1] == shared
    if gloo_messages is None:
        assert 0 < p1[2] < rounds
    else:
        assert p1[2] == gloo_messages
    assert p1[3] == [] and p2[3] == []  # the file is gone once both ends mapped it
    # bytes at the sender: every part's payload and a doorbell per message, whichever way it went;
    # calls: a doorbell per message, and each part sent over gloo
    payload = sum(m[0].numel() * 4 + m[1].numel() * 8 for m in sent)
    assert p1[4]["handoff"] == (payload + rounds * HEADER * 8, rounds + 2 * p1[2])


def _lagging(ctx, comm, capacity, rounds):
    """p1 sends every message before p2 takes any: those the ring cannot hold go over gloo."""
    ch = PairChannel.open(comm, 1 - ctx.rank, ctx.rank == 0, capacity)
    if ctx.rank == 0:
        for k in range(rounds):
            ch.send(_message(k), "handoff")
        comm.barrier()
        ch.flush()
        return ch.via_gloo
    comm.barrier()
    return [[p.tolist() for p in ch.recv("handoff")] for _ in range(rounds)]


def test_a_lagging_partner_is_never_overwritten():
    rounds = 6
    via_gloo, got = run_on(2, _lagging, 2 * _biggest(rounds), rounds)
    assert via_gloo == rounds - 2
    assert got == [[m[0].tolist(), m[1].reshape(-1).tolist()] for m in map(_message, range(rounds))]


def test_message_bytes_align_each_part():
    assert message_bytes((1, torch.float32)) == 64
    assert message_bytes((16, torch.float32), (1, torch.int64)) == 128
    assert message_bytes((100, torch.float64)) == 832


def _partner_gone(ctx, comm, how):
    ch = PairChannel.open(comm, 1 - ctx.rank, ctx.rank == 0, 4096)
    ch.timeout = 0.5 if how == "silent" else 60.0
    if ctx.rank == 1:
        if how == "closes":
            ch.close()  # what its exit does to the pipe
        else:
            comm.barrier()  # alive, silent: rank 0 gives up after its timeout, then meets it here
        return "done"
    try:
        ch.recv("handoff")
    except DistError as exc:
        if how == "silent":
            comm.barrier()
        return str(exc)
    return "received"


@pytest.mark.parametrize("how, message", [("closes", "closed the pair channel"), ("silent", "no hand-over")])
def test_a_gone_or_silent_partner_ends_the_wait(how, message):
    got, done = run_on(2, _partner_gone, how, timeout=60)
    assert message in got and done == "done"


def _crash_while_partner_waits(ctx, comm):
    ch = PairChannel.open(comm, 1 - ctx.rank, ctx.rank == 0, 4096)
    if ctx.rank == 0:
        raise RuntimeError("boom in p1")  # its exit closes the pipe p2 waits on
    ch.recv("handoff")


def test_the_cause_is_reported_not_the_partner_that_saw_it_go():
    with pytest.raises(DistError, match="worker 0 failed: RuntimeError: boom in p1"):
        run_on(2, _crash_while_partner_waits, timeout=60)
