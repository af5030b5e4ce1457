"""`prefetch="auto"` on queues with flow limits: once a job says its queue has one (`flow_limited`:
`max_leased`, a rate limit, their per-group forms), the worker holds no job ahead for the rest of
its life, and says so once. The same rule as the TypeScript Worker's
(tests/client/worker-prefetch-settings.test.ts)."""
from __future__ import annotations

import logging
import threading

import pytest
from conftest import counts, eventually
from test_prefetch_auto import two_short_then_gated
from test_worker import TRANSPORTS

import sepp
from sepp._prefetch import Prefetch


def test_a_flow_limited_job_stops_auto_for_good_and_leaves_a_number_alone() -> None:
    rule = Prefetch("auto", 2, 30_000)
    assert rule.flow_limited("capped") is True
    assert rule.flow_limited("capped") is False, "said once"
    for _ in range(5):
        rule.ran(1)
    assert (rule.limit, rule.stopped_by) == (0, "capped"), "short runs no longer raise it"
    fixed = Prefetch(7, 2, 30_000)
    assert fixed.flow_limited("capped") is False
    assert fixed.limit == 7, "a number is taken as given"


@pytest.mark.parametrize("transport", TRANSPORTS)
@pytest.mark.parametrize("limit", [{"max_leased": "10"}, {"rate_limit_leases": "1000"}])
def test_auto_holds_nothing_on_a_queue_with_flow_limits(client: sepp.Client, queue: str, transport: str,
                                                        limit: dict[str, str],
                                                        caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="sepp.worker")
    client.enqueue_batch([sepp.JobSpec(queue, "j", json=i) for i in range(20)])
    client.set_queue_settings(queue, limit)
    gate = threading.Event()
    # Without the limit this worker holds 16 (test_prefetch_auto.py's first worker test).
    worker, events, held_at_start = two_short_then_gated(client, queue, transport, gate)
    try:
        eventually(lambda: (len(held_at_start) == 4 and worker.running == 2) or None, "two gated jobs running")
        assert (worker.prefetch_limit, worker.held) == (0, 0)
        eventually(lambda: ((c := counts(client, queue)) is not None and c.leased == 2) or None,
                   "the two running jobs are the only ones leased")
        assert worker.held == 0
        gate.set()
        events.wait("completed", 20)
    finally:
        gate.set()
        worker.close()
    assert set(held_at_start.values()) == {0}, "no job was held at any start"
    said = [r.getMessage() for r in caplog.records if "holds no jobs ahead" in r.getMessage()]
    assert len(said) == 1 and f"queue {queue} has flow limits" in said[0], said
