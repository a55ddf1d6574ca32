"""What the workers' log filter drops: the teardown noise of a stage stopped by bad input, not a real failure."""

import logging

from distributed.comm.core import CommClosedError

from dynagnn.analysis.parallel import _InputErrorFilter


def _record(msg: str, exc: BaseException | None = None) -> logging.LogRecord:
    exc_info = (type(exc), exc, None) if exc is not None else None
    return logging.LogRecord("distributed.worker", logging.ERROR, __file__, 1, msg, (), exc_info)


def test_a_heartbeat_that_found_the_scheduler_gone_is_dropped_and_nothing_else():
    f = _InputErrorFilter()
    heartbeat = "Failed to communicate with scheduler during heartbeat."
    assert not f.filter(_record(heartbeat, CommClosedError("in <TCP (closed)>: Stream is closed")))
    assert f.filter(_record(heartbeat, OSError("connection refused")))   # another failure still shows
    assert f.filter(_record(heartbeat))
    assert f.filter(_record("Worker stream died", CommClosedError("closed")))
