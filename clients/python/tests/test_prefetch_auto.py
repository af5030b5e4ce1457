"""`prefetch="auto"`, a Worker's default: the rule as a pure function, and against a real server on
both transports a worker of short jobs leasing ahead by itself, one of long jobs never holding one.
Handler run times come from a fake clock the handlers move, never from sleeping."""
from __future__ import annotations

import threading
import time
from typing import Any

import pytest
from conftest import ADMIN_KEY, ServerProcess, counts, eventually, reconfigured
from test_worker import TRANSPORTS, Events

import sepp
from sepp._prefetch import Prefetch, auto_held_limit


class FakeClock:
    """The worker's run clock (seconds); handlers move it to say how long they ran."""

    def __init__(self) -> None:
        self.now_s = 1000.0

    def __call__(self) -> float:
        return self.now_s

    def advance(self, ms: float) -> None:
        self.now_s += ms / 1000


def test_the_auto_limit_holds_about_a_second_of_the_slots_work() -> None:
    # min(500, 1000 - concurrency, floor(concurrency * min(1000, lease_ms / 10) / max(avg_run_ms, 0.05)))
    assert auto_held_limit(4, 30_000, 100) == 40, "4 slots finish 40 jobs of 100 ms in a second"
    assert auto_held_limit(4, 30_000, 30) == 133, "floored"
    assert auto_held_limit(4, 1_000, 100) == 4, "a tenth of a short lease is the budget"
    assert auto_held_limit(1, 30_000, 1_001) == 0, "jobs longer than the budget are never held"
    assert auto_held_limit(1, 1_000, 150) == 0
    assert auto_held_limit(1, 30_000, 1) == 500, "at most 500"
    assert auto_held_limit(1, 30_000, 0) == 500, "an instant handler counts as 0.05 ms: the cap"
    assert auto_held_limit(600, 30_000, 1) == 400, "slots plus held at most 1000"
    assert auto_held_limit(1000, 30_000, 1) == 0
    assert auto_held_limit(2, 20, 0.01) == 80, "a 20 ms lease: 2 ms of budget, runs of at least 0.05 ms"
    assert auto_held_limit(2, 30_000, 1, max_reserve_jobs=4) == 2, "slots plus held within the server's limit"
    assert auto_held_limit(4, 30_000, 1, max_reserve_jobs=4) == 0
    assert auto_held_limit(2, 30_000, 1, max_reserve_jobs=5000) == 500, "never above the rule's own cap"
    assert auto_held_limit(2, 30_000, 1, max_reserve_jobs=0) == 0, "nothing held while the server's limit is unknown"


def test_the_auto_limit_waits_for_the_first_runs_and_follows_a_moving_average() -> None:
    rule = Prefetch("auto", 2, 30_000)
    assert rule.limit == 0
    rule.ran(10)
    assert rule.limit == 0, "none until the first `concurrency` runs have finished"
    rule.ran(10)
    assert (rule.avg_run_ms, rule.limit) == (10, 200)
    rule.ran(110)  # moves the average by a tenth of the difference
    assert (rule.avg_run_ms, rule.limit) == (20, 100)
    for _ in range(60):
        rule.ran(5_000)
    assert rule.limit == 0, "jobs that became long stop being held"
    fixed = Prefetch(7, 2, 30_000)
    fixed.ran(5_000)
    assert (fixed.limit, fixed.avg_run_ms) == (7, None), "a fixed prefetch ignores run times"


def made(client: sepp.Client, queue: str, transport: str, clock: FakeClock,
         **options: Any) -> tuple[sepp.Worker, Events]:
    """A worker not started yet (its handler reads `worker`), timing runs by `clock`."""
    events = Events()
    worker = client.worker([queue], transport=transport, on_event=events, **options)
    assert worker.prefetch == "auto", "the default"
    worker._run_clock = clock  # noqa: SLF001 - run times from the test's clock
    return worker, events


def two_short_then_gated(client: sepp.Client, queue: str, transport: str,
                         gate: threading.Event) -> tuple[sepp.Worker, Events, dict[int, int]]:
    """A started worker of 2 slots whose jobs each run 1 ms by its fake clock; those whose `data` is
    2 or more then wait for `gate`. Also answers how many jobs were held as each job started."""
    clock = FakeClock()
    held_at_start: dict[int, int] = {}

    def work(job: sepp.WorkerJob) -> None:
        held_at_start[job.data] = worker.held
        clock.advance(1)
        if job.data >= 2:
            gate.wait(30)

    worker, events = made(client, queue, transport, clock, concurrency=2, fallback=work)
    return worker.start(), events, held_at_start


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_a_worker_of_short_jobs_leases_ahead_by_itself(client: sepp.Client, queue: str, transport: str) -> None:
    ids = [client.enqueue(queue, "j", json=i).id for i in range(20)]
    gate = threading.Event()
    worker, events, held_at_start = two_short_then_gated(client, queue, transport, gate)
    try:
        # The first two ran 1 ms each: two slots finish 2,000 of them a second, capped at 500.
        eventually(lambda: worker.held == 16 or None, "every other job leased ahead (2 running, 16 held)")
        assert worker.prefetch_limit == 500
        leased = counts(client, queue)
        assert leased is not None and (leased.leased, leased.ready) == (18, 0), leased
        assert (held_at_start[0], held_at_start[1]) == (0, 0), "nothing held before the first runs finished"
        gate.set()
        events.wait("completed", 20)
    finally:
        gate.set()
        worker.close()
    assert sorted(e.job.id for e in events.of("completed") if e.job) == sorted(ids)


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_a_worker_of_jobs_longer_than_its_budget_never_holds_one(client: sepp.Client, queue: str,
                                                                  transport: str) -> None:
    for i in range(4):
        client.enqueue(queue, "j", json=i)
    clock = FakeClock()
    seen: list[tuple[int, int | None]] = []

    def work(job: sepp.WorkerJob) -> None:
        leased = counts(client, queue)
        seen.append((worker.held, leased.leased if leased else None))
        clock.advance(150)  # longer than a tenth of its 1 s lease

    worker, events = made(client, queue, transport, clock, lease_ms=1_000, fallback=work)
    worker.start()
    try:
        events.wait("completed", 4)
    finally:
        worker.close()
    assert seen == [(0, 1)] * 4, "one job leased at a time, none held"
    assert worker.prefetch_limit == 0


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_auto_stays_under_a_lower_max_reserve_jobs(server: ServerProcess, queue: str, transport: str) -> None:
    """Asking for more than `limits.max_reserve_jobs` at once would stop the worker: auto asks for
    slots plus held jobs up to the server's limit, never past it."""
    gate = threading.Event()
    with reconfigured(server, "\n[limits]\nmax_reserve_jobs = 4\n"), \
            sepp.Client(server.address, api_key=ADMIN_KEY) as client:
        client.enqueue_batch([sepp.JobSpec(queue, "j", json=i) for i in range(10)])
        worker, events, _ = two_short_then_gated(client, queue, transport, gate)
        try:
            eventually(lambda: worker.held == 2 or None, "two held beside the two running")
            assert worker.prefetch_limit == 2 and worker.state == "running"
            gate.set()
            events.wait("completed", 10)
        finally:
            gate.set()
            worker.close()
        assert not events.of("error"), [e.error for e in events.of("error")]


def test_auto_asks_the_servers_limit_again_when_the_first_ask_failed(client: sepp.Client, queue: str) -> None:
    """A worker started while its server could not answer GetServerInfo (down, restarting) knows no
    `max_reserve_jobs`, so holds nothing; once the 30 s before asking again are over, a run asks
    again, and it leases ahead from then on."""
    conn = client.connection
    conn._bounds_known = False  # noqa: SLF001 - as after a first ask that failed just now
    conn.max_reserve_jobs = 0
    conn._bounds_again_at = time.monotonic() + 3600  # noqa: SLF001
    client.enqueue_batch([sepp.JobSpec(queue, "j", json=i) for i in range(20)])
    gate = threading.Event()
    worker, events, held_at_start = two_short_then_gated(client, queue, "stream", gate)
    try:
        eventually(lambda: len(held_at_start) == 4 or None, "two short runs, then two at the gate")
        assert (worker.prefetch_limit, worker.held) == (0, 0), "nothing held while the limit is unknown"
        conn._bounds_again_at = 0.0  # noqa: SLF001 - the 30 s are over
        gate.set()
        eventually(lambda: conn.max_reserve_jobs > 0 or None, "the server's limit asked again")
        events.wait("completed", 20)
        assert worker.prefetch_limit == 500
    finally:
        gate.set()
        worker.close()
