"""The Worker against a real server, on both transports: round trips, lease
extension, retries with backoff, dead letters, lost leases, concurrency."""
from __future__ import annotations

import threading
from concurrent.futures import Future
from typing import Any, Callable

import pytest
from conftest import PRODUCER_KEY, ServerProcess, counts, eventually

import sepp

TRANSPORTS = ["stream", "unary"]


class Events:
    """Collects a worker's events; `wait` blocks until enough of a kind arrived."""

    def __init__(self) -> None:
        self.all: list[sepp.WorkerEvent] = []
        self._lock = threading.Condition()

    def __call__(self, event: sepp.WorkerEvent) -> None:
        with self._lock:
            self.all.append(event)
            self._lock.notify_all()

    def of(self, kind: str) -> list[sepp.WorkerEvent]:
        with self._lock:
            return [e for e in self.all if e.kind == kind]

    def wait(self, kind: str, count: int = 1, timeout_s: float = 30.0) -> list[sepp.WorkerEvent]:
        with self._lock:
            if not self._lock.wait_for(lambda: len([e for e in self.all if e.kind == kind]) >= count, timeout_s):
                raise AssertionError(f"timed out waiting for {count} {kind} events; got {[e.kind for e in self.all]}")
        return self.of(kind)


def start(client: sepp.Client, queue: str, transport: str, **options: Any) -> tuple[sepp.Worker, Events]:
    events = Events()
    worker = client.worker([queue], transport=transport, on_event=events, **options)
    return worker.start(), events


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_producer_to_worker_round_trip(server: ServerProcess, client: sepp.Client, queue: str, transport: str) -> None:
    seen: list[tuple[str, Any]] = []
    with sepp.Client(server.address, api_key=PRODUCER_KEY, transport=transport) as producer:  # type: ignore[arg-type]
        ids = [producer.enqueue(queue, "greet", json={"name": name}).id for name in ("ada", "grace")]
        ids.append(producer.enqueue(queue, "raw", b"\x01").id)
    worker, events = start(client, queue, transport, concurrency=2, handlers={
        "greet": lambda job: seen.append((job.id, job.data["name"])),
        "raw": lambda job: seen.append((job.id, job.data)),
    })
    try:
        done = events.wait("completed", 3)
    finally:
        worker.close()
    assert sorted(seen) == sorted(zip(ids, ["ada", "grace", b"\x01"]))
    assert sorted(e.job.id for e in done if e.job) == sorted(ids)
    assert counts(client, queue) == sepp.StateCounts(0, 0, 0, 0, 0), "every job was acked"
    assert worker.state == "closed" and events.of("closed")


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_a_slow_handler_keeps_its_lease(client: sepp.Client, queue: str, transport: str) -> None:
    """The lease is 1.2 s; the handler runs until the worker has extended it twelve times
    (about 4.8 s, beyond the lease and the server's 1 s of expiry slack), and the job is
    still leased to it on its first attempt, then acked once."""
    calls: list[int] = []
    extended = threading.Semaphore(0)
    states: list[tuple[str, int]] = []

    def slow(job: sepp.WorkerJob) -> None:
        calls.append(job.attempt)
        for _ in range(12):
            assert extended.acquire(timeout=30), "the lease was not extended"
            assert not job.cancelled.is_set()
        info = client.get_job(job.id)
        states.append((info.state, info.attempt))

    client.enqueue(queue, "slow")

    def on_event(event: sepp.WorkerEvent) -> None:
        events(event)
        if event.kind == "extended":
            extended.release()

    events = Events()
    worker = client.worker([queue], transport=transport, concurrency=2, lease_ms=1200, handlers={"slow": slow},
                           on_event=on_event).start()
    try:
        events.wait("completed")
    finally:
        worker.close()
    assert calls == [1], "the job ran once: its lease never expired"
    assert states == [("leased", 1)]
    assert not events.of("lease_lost") and not events.of("failed")
    assert all(e.lease_deadline_ms for e in events.of("extended"))


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_a_failing_job_is_retried_with_backoff(client: sepp.Client, queue: str, transport: str) -> None:
    """The test server's backoff is 200 ms without jitter: the second attempt is due exactly
    200 ms (server clock) after the first failed. RetryAfter sets its own delay."""
    seen: list[tuple[int, str | None, int, int]] = []

    def flaky(job: sepp.WorkerJob) -> None:
        failed_at = client.get_job(job.id).errors[-1].at_ms if job.attempt > 1 else 0
        seen.append((job.attempt, job.last_error, job.run_at_ms, failed_at))
        if job.attempt == 1:
            raise ValueError("boom")
        if job.attempt == 2:
            raise sepp.RetryAfter(700, "rate limited")

    client.enqueue(queue, "flaky")
    worker, events = start(client, queue, transport, handlers={"flaky": flaky})
    try:
        events.wait("completed")
    finally:
        worker.close()
    failed = events.of("failed")
    assert [(e.nack.state if e.nack else None, type(e.error).__name__) for e in failed] == [
        ("scheduled", "ValueError"), ("scheduled", "RetryAfter")]
    assert [(a, err) for a, err, _, _ in seen] == [(1, None), (2, "ValueError: boom"), (3, "rate limited")]
    assert seen[1][2] - seen[1][3] == 200, "the queue's backoff after the first failure"
    assert seen[2][2] - seen[2][3] == 700, "RetryAfter's own delay"


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_dead_letters(client: sepp.Client, queue: str, transport: str) -> None:
    def reject(job: sepp.WorkerJob) -> None:
        raise sepp.DeadLetter(f"cannot use {job.data['to']}")

    def always(job: sepp.WorkerJob) -> None:
        raise RuntimeError("down")

    bad = client.enqueue(queue, "reject", json={"to": "nobody"}).id
    last = client.enqueue(queue, "always", max_attempts=1).id
    garbled = client.enqueue(queue, "reject", b"{not json", content_type="application/json").id
    worker, events = start(client, queue, transport, concurrency=3, handlers={"reject": reject, "always": always})
    try:
        events.wait("failed", 3)
    finally:
        worker.close()
    jobs = {j.id: j for j in client.dead_letters(queue)}
    assert (jobs[bad].dead_reason, jobs[bad].attempt, jobs[bad].last_error) == (
        "dead_lettered", 1, "cannot use nobody"), "DeadLetter dead-letters on the first of five attempts"
    assert (jobs[last].dead_reason, jobs[last].last_error) == ("attempts_exhausted", "RuntimeError: down")
    assert jobs[garbled].dead_reason == "dead_lettered" and "not valid JSON" in (jobs[garbled].last_error or "")
    assert all(e.nack and e.nack.state == "dead" for e in events.of("failed"))


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_unknown_types_are_retried_and_a_fallback_takes_them(client: sepp.Client, queue: str, transport: str) -> None:
    client.enqueue(queue, "mystery")
    worker, events = start(client, queue, transport, handlers={"known": lambda job: None})
    try:
        [failed] = events.wait("failed")
    finally:
        worker.close()
    assert failed.nack and failed.nack.state == "scheduled"
    assert 'no handler for job type "mystery"' in str(failed.error)
    taken: list[str] = []
    worker, events = start(client, queue, transport, fallback=lambda job: taken.append(job.type))
    try:
        events.wait("completed")
    finally:
        worker.close()
    assert taken == ["mystery"]


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_a_lost_lease_cancels_the_handler(client: sepp.Client, queue: str, transport: str) -> None:
    """While the handler runs, the job is nacked and leased again by someone else (as after
    an expiry): the worker's next extend finds its lease gone, sets `job.cancelled` with a
    LeaseLostError, and never settles the job."""
    running = threading.Event()
    reasons: list[BaseException | None] = []
    holder: list[sepp.WorkerJob] = []

    def long(job: sepp.WorkerJob) -> None:
        holder.append(job)
        running.set()
        job.cancelled.wait(60)
        reasons.append(job.cancel_reason)
        job.raise_if_cancelled()

    client.enqueue(queue, "long")
    worker, events = start(client, queue, transport, lease_ms=600, handlers={"long": long})
    try:
        assert running.wait(30)
        client.nack(holder[0], retry_after_ms=0)
        # `or None`: an empty answer (the nack not yet applied, under load) is "not yet".
        [taken] = eventually(lambda: client.reserve([queue], lease_ms=60_000) or None, "the job to be leased again")
        [lost] = events.wait("lease_lost")
        eventually(lambda: reasons, "the handler to stop")
    finally:
        worker.close()
    assert isinstance(lost.error, sepp.LeaseLostError) and isinstance(reasons[0], sepp.LeaseLostError)
    assert not events.of("completed") and not events.of("failed"), "a lost job is not settled"
    info = client.get_job(taken.id)
    assert (info.state, info.attempt) == ("leased", 2), "the other holder's lease is untouched"
    client.ack(taken)


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_never_more_jobs_than_slots(client: sepp.Client, queue: str, transport: str) -> None:
    """With `prefetch=0` (the default "auto" leases ahead once jobs prove short)."""
    lock = threading.Lock()
    running = peak = 0
    leased_peak = 0

    def work(job: sepp.WorkerJob) -> None:
        nonlocal running, peak, leased_peak
        with lock:
            running += 1
            peak = max(peak, running)
        leased = counts(client, queue)
        with lock:
            leased_peak = max(leased_peak, leased.leased if leased else 0)
            running -= 1

    client.enqueue_batch([sepp.JobSpec(queue, "w", json=i) for i in range(60)])
    worker, events = start(client, queue, transport, concurrency=3, prefetch=0, handlers={"w": work})
    try:
        # A hang guard, not a time limit: at load 30 the 60 jobs (a list_queues call each) took
        # over the default 30 s.
        events.wait("completed", 60, timeout_s=120)
    finally:
        worker.close()
    assert peak <= 3 and leased_peak <= 3, (peak, leased_peak)


@pytest.mark.parametrize("outcome", ["ack", "nack"])
@pytest.mark.parametrize("call", ["extend", "progress"])
@pytest.mark.parametrize("transport", TRANSPORTS)
def test_a_lease_call_answered_after_the_settlement_is_no_lost_lease(
    client: sepp.Client, queue: str, transport: str, call: str, outcome: str
) -> None:
    """The lease timer can send an extend while the handler returns, and a handler can return
    with a `job.progress()` report on its way (it does not wait); when the ack or nack reaches
    the server first, that call's answer is NOT_FOUND. The settlement's own answer says how the
    job ended: the late answer must not report a lost lease (an extend did under load: a
    `lease_lost` event and warning after `completed`). Here the call is held and answered
    between the settlement and the job's end, where the race puts it."""
    asked = threading.Event()
    held: list[tuple[tuple[Any, ...], Future[Any]]] = []

    def handler(job: sepp.WorkerJob) -> None:
        if call == "progress":
            job.progress(50, data={"step": "last"})
        assert asked.wait(30), f"no {call} within 30 s"
        if outcome == "nack":
            raise RuntimeError("boom")

    events = Events()
    # An extend every 200 ms for the extend's race; for the progress report's, none (30 s lease).
    lease_ms = 600 if call == "extend" else 30_000
    worker = client.worker([queue], transport=transport, lease_ms=lease_ms, handlers={"t": handler}, on_event=events)
    transport_of = worker._transport  # noqa: SLF001 - the race needs the call's answer held
    real_call: Callable[..., Future[Any]] = getattr(transport_of, call)
    real_settle: Callable[..., Any] = getattr(transport_of, outcome)

    def hold(*args: Any) -> Future[Any]:
        if held:
            return real_call(*args)
        answer: Future[Any] = Future()
        held.append((args, answer))
        asked.set()
        return answer

    def settle(*args: Any) -> Any:
        settled = real_settle(*args)
        args_, answer = held[0]
        try:
            answer.set_result(real_call(*args_).result(30))
        except BaseException as error:  # noqa: BLE001 - NOT_FOUND: the job is gone
            answer.set_exception(error)
        return settled

    setattr(transport_of, call, hold)  # noqa: B010 - replaced on this one object
    setattr(transport_of, outcome, settle)  # noqa: B010
    client.enqueue(queue, "t", max_attempts=1)
    worker.start()
    try:
        ended = events.wait("completed" if outcome == "ack" else "failed")
    finally:
        worker.close()
    error = held and held[0][1].exception()
    assert isinstance(error, sepp.LeaseLostError) and error.code == "not_found", \
        f"the held {call} was answered after the {outcome}: NOT_FOUND ({error!r})"
    assert not events.of("lease_lost") and not events.of("cancelled") and not events.of("error"), \
        [e.kind for e in events.all]
    assert ended[0].job is not None and not ended[0].job.cancelled.is_set()
    assert len(events.of("completed")) + len(events.of("failed")) == 1
