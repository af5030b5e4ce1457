"""Job control against a real server: cancelling a running job through the real
Worker (on both transports), what a cancelled lease's ack, nack and extend
answer, bulk cancel, updates of waiting jobs, purge, expiry, unique-while-active
keys, and the audit log of every change."""
from __future__ import annotations

import datetime
import pathlib
import threading
import time

import pytest
from conftest import PRODUCER_KEY, ServerProcess, counts, eventually
from test_worker import TRANSPORTS, start

import sepp


def in_state(client: sepp.Client, id: str, state: sepp.JobState) -> sepp.Job | None:
    job = client.get_job(id)
    return job if job.state == state else None


def ended(client: sepp.Client, op_id: str) -> sepp.BulkOperation | None:
    op = client.jobs.bulk_operation(op_id)
    return op if op.state != "running" else None


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_a_running_job_is_cancelled_through_the_worker(client: sepp.Client, queue: str, transport: str) -> None:
    """The handler sees `job.cancelled` with a JobCancelledError and returns normally; the
    worker sends no ack and no retry follows: the job ends `cancelled`. On the stream the
    worker is told at once (its lease would not be extended within the wait); over unary calls
    it learns at its next extend."""
    running = threading.Event()
    reasons: list[BaseException | None] = []

    def long(job: sepp.WorkerJob) -> str:
        running.set()
        job.cancelled.wait(60)
        reasons.append(job.cancel_reason)
        return "ignored the cancel"

    enqueued = client.enqueue(queue, "long")
    lease_ms = 120_000 if transport == "stream" else 600
    worker, events = start(client, queue, transport, lease_ms=lease_ms, handlers={"long": long})
    try:
        assert running.wait(30)
        result = client.cancel_job(enqueued.id)
        assert result == sepp.CancelResult("leased", "leased"), "a leased job stays leased until its worker stops"
        [cancelled] = events.wait("cancelled")
        eventually(lambda: reasons, "the handler to stop")
        job = eventually(lambda: in_state(client, enqueued.id, "cancelled"), "the job cancelled")
    finally:
        worker.close()
    assert isinstance(cancelled.error, sepp.JobCancelledError) and cancelled.error.code == "job_cancelled"
    assert isinstance(reasons[0], sepp.JobCancelledError)
    assert not events.of("completed") and not events.of("failed") and not events.of("lease_lost")
    assert job.attempt == 1 and job.cancelled_by == "key:admin" and job.cancelled_at_ms is not None
    assert client.cancel_job(enqueued.id) == sepp.CancelResult("cancelled", "cancelled"), "a repeat changes nothing"


def test_a_cancelled_lease_cannot_be_acked_or_extended(client: sepp.Client, queue: str) -> None:
    first, second, third = (client.enqueue(queue, "t", json=i) for i in range(3))
    leases = {j.id: j for j in client.reserve([queue], max_jobs=3, lease_ms=60_000)}
    for enqueued in (first, second, third):
        assert client.cancel_job(enqueued.id).previous_state == "leased"

    with pytest.raises(sepp.JobCancelledError):
        client.extend(leases[first.id], 60_000)
    with pytest.raises(sepp.JobCancelledError) as acked:
        client.ack(leases[first.id])
    assert acked.value.code == "job_cancelled"
    with pytest.raises(sepp.LeaseLostError):
        client.extend(leases[first.id], 60_000)  # The refused ack ended the lease: the job is cancelled.
    [outcome] = client.ack_batch([leases[second.id]])
    assert outcome.outcome == "cancelled"
    assert client.nack(leases[third.id], error="stopped").state == "cancelled"
    for enqueued in (first, second, third):
        assert client.get_job(enqueued.id).state == "cancelled"


def test_bulk_cancel_updates_purge_and_their_audit_entries(server: ServerProcess, client: sepp.Client,
                                                           queue: str) -> None:
    later = [client.enqueue(queue, "report", delay_ms=3_600_000) for _ in range(3)]
    ready = [client.enqueue(queue, "email") for _ in range(2)]
    [leased] = client.reserve([queue], max_jobs=1, lease_ms=60_000)
    assert leased.id == ready[0].id

    with pytest.raises(sepp.SeppError) as refused:
        client.update_job(leased.id, priority=9)
    assert refused.value.code == "failed_precondition"
    moved = client.update_job(later[0].id, priority=8, run_now=True)
    assert (moved.state, moved.priority) == ("ready", 8)
    with pytest.raises(sepp.SeppError) as both:
        client.update_job(later[1].id, run_now=True, delay_ms=5)
    assert both.value.code == "invalid_argument"
    assert client.update_jobs(queue, type="report", run_now=True) == 2
    assert client.get_job(later[2].id).state == "ready"

    dry = client.cancel_jobs(queue, type="report", dry_run=True)
    assert dry == sepp.CancelJobsResult(0, 0, 3), "a dry run changes nothing"
    cancelled = client.cancel_jobs(queue, type="report")
    assert (cancelled.cancelled, cancelled.cancel_requested, cancelled.matched) == (3, 0, 3)
    assert cancelled.operation is not None, "a cancel is a bulk operation, answered with it"
    op = cancelled.operation
    assert (op.action, op.state, op.matched, op.changed, op.cancel_requested, op.actor) == (
        "cancel", "done", 3, 3, 0, "key:admin")
    assert op.examined >= 3, op
    stopped = client.cancel_jobs(queue, states=["leased"])
    assert (stopped.cancelled, stopped.cancel_requested, stopped.matched) == (0, 1, 1)
    assert stopped.operation is not None and stopped.operation.cancel_requested == 1
    with pytest.raises(sepp.SeppError) as bad_state:
        client.cancel_jobs(queue, states=["waiting"])
    assert bad_state.value.code == "invalid_argument"

    client.enqueue(queue, "email", delay_ms=3_600_000)
    assert client.purge_queue(queue) == 2, "the ready email and the scheduled one"
    with sepp.Client(server.address, api_key=PRODUCER_KEY) as producer:
        with pytest.raises(sepp.SeppError) as denied:
            producer.purge_queue(queue)
        assert denied.value.code == "permission_denied"

    actions = [e.action for e in client.audit_entries(target=f"queue:{queue}", page_size=2)]
    assert actions == ["queue.purge", "jobs.cancel", "jobs.cancel", "jobs.update"], actions
    [purge] = client.list_audit_entries(action="queue.purge", target=f"queue:{queue}").entries
    assert purge.actor == "key:admin" and purge.details["via"] == "grpc" and purge.details["changed"] == 2
    [update] = client.list_audit_entries(target=f"job:{later[0].id}").entries
    assert update.action == "job.update"


def test_expiry_and_unique_while_active(client: sepp.Client, queue: str) -> None:
    with pytest.raises(sepp.SeppError) as both:
        client.enqueue(queue, "t", ttl_ms=1000, expires_at=time.time() * 1000 + 10_000)
    assert both.value.code == "invalid_argument"
    short = client.enqueue(queue, "t", ttl_ms=50)
    expired = eventually(lambda: in_state(client, short.id, "dead"), "the job to expire")
    assert expired.dead_reason == "expired" and expired.attempt == 0
    assert client.reserve([queue], wait_ms=0) == [], "an expired job is not handed out"
    kept = client.enqueue(queue, "t", expires_at=time.time() * 1000 + 3_600_000)
    assert client.get_job(kept.id).expires_at_ms is not None
    client.cancel_job(kept.id)

    first = client.enqueue(queue, "once", idempotency_key="k", unique_while_active=True)
    assert client.enqueue(queue, "once", idempotency_key="k", unique_while_active=True) == sepp.Enqueued(first.id, True)
    client.cancel_job(first.id)
    second = client.enqueue(queue, "once", idempotency_key="k", unique_while_active=True)
    assert not second.deduplicated, "a cancel releases the key"
    [lease] = client.reserve([queue])
    client.ack(lease)
    third = client.enqueue(queue, "once", idempotency_key="k", unique_while_active=True)
    assert not third.deduplicated and third.id != second.id, "a finished job no longer holds the key"


def test_the_job_control_example_in_the_docs_runs(client: sepp.Client, capsys: pytest.CaptureFixture[str]) -> None:
    docs = (pathlib.Path(__file__).resolve().parents[3] / "docs" / "python.md").read_text()
    section = docs.split("### Job control", 1)[1]
    example = section.split("```python\n", 1)[1].split("```", 1)[0]
    client.enqueue("emails", "newsletter")
    reset = client.enqueue("emails", "password-reset", delay_ms=3_600_000)
    exec(example, {"client": client})  # noqa: S102 - the documented example, as written
    printed = capsys.readouterr().out
    assert printed.startswith("would cancel 1 newsletter jobs\n"), printed
    assert "key:admin jobs.update" in printed
    assert client.get_job(reset.id).state == "ready"


def test_requeue_and_delete_everything_a_filter_matches_across_queues(client: sepp.Client, queue: str) -> None:
    """One server-side operation per call, counted first; dead letters found by error text in
    every queue; a background delete followed to its end by its id."""
    other = f"{queue}-b"
    for q, error in ((queue, "SMTP timeout"), (queue, "mailbox full"), (other, "smtp TIMEOUT")):
        client.enqueue(q, "mail")
        [lease] = client.reserve([q], max_jobs=1)
        client.nack(lease, error=error, dead_letter=True)
    counted = client.jobs.requeue_matching(all_queues=True, error_text="smtp timeout", dry_run=True)
    assert (counted.matched, counted.matched_at_least, counted.operation) == (2, False, None)
    done = client.jobs.requeue_matching(all_queues=True, error_text="smtp timeout")
    assert done.changed == 2 and done.operation is not None and done.operation.state == "done"
    started = client.jobs.delete_matching(queue, states=["dead"], background=True)
    assert started.operation is not None
    op_id = started.operation.id
    op = eventually(lambda: ended(client, op_id), "the delete to end")
    assert (op.state, op.changed) == ("done", 1)
    assert any(o.id == op.id for o in client.jobs.bulk_operations())
    with pytest.raises(sepp.SeppError):
        client.jobs.delete_matching()


def test_every_bulk_call_takes_the_whole_filter(client: sepp.Client, queue: str) -> None:
    """cancel_matching and update_matching take the filter requeue_matching takes, and each field
    narrows what matches (counted with count_matching, which counts for any action); a bulk
    cancel and start_bulk run in the background. Arguments the server would refuse anyway
    are refused before anything is sent."""
    other = f"{queue}-b"
    tag = ("test", queue)
    retry = client.enqueue(queue, "mail", metadata=dict([tag]))
    [lease] = client.reserve([queue])
    client.nack(lease, error="Flaky upstream", retry_after_ms=3_600_000)
    client.enqueue(queue, "mail", max_attempts=1, metadata=dict([tag]))
    [last] = client.reserve([queue])
    assert client.nack(last, error="gave up").state == "dead"
    daily = client.enqueue(queue, "report.daily", delay_ms=3_600_000, metadata={"tenant": "acme", **dict([tag])})
    weekly = client.enqueue(queue, "report.weekly", metadata={"tenant": "zeta", **dict([tag])})
    client.enqueue(other, "mail", metadata=dict([tag]))
    first_ms = client.get_job(retry.id).enqueued_at_ms

    count = client.jobs.count_matching
    assert count("cancel", queue) == sepp.MatchCount(3), "the retry, the daily and the weekly report"
    assert count("cancel", all_queues=True, metadata=tag).matched == 4, "and the other queue's job"
    assert count("cancel", queue, type_prefix="report.").matched == 2
    assert count("cancel", queue, error_text="FLAKY").matched == 1
    assert count("cancel", queue, enqueued_before=first_ms).matched == 0
    from_first = datetime.datetime.fromtimestamp(first_ms / 1000, datetime.timezone.utc)
    assert count("cancel", queue, enqueued_from=from_first).matched == 3
    assert count("cancel", queue, enqueued_from=first_ms + 3_600_000).matched == 0
    assert count("update", queue).matched == 2, "run_now (the default change) moves scheduled jobs only"
    assert count("update", queue, priority=5).matched == 3
    assert count("update", queue, priority=5, retries_only=True).matched == 1
    assert count("requeue", queue, dead_reason="attempts_exhausted").matched == 1
    assert count("requeue", queue, dead_reason="expired").matched == 0

    assert client.update_jobs(queue, metadata=("tenant", "zeta"), priority=7) == 1
    assert (client.get_job(weekly.id).priority, client.get_job(daily.id).priority) == (7, 0)

    started = client.cancel_jobs(queue, type_prefix="report.", enqueued_from=first_ms, background=True)
    assert started.operation is not None and started.operation.action == "cancel"
    cancel_id = started.operation.id
    cancel = eventually(lambda: ended(client, cancel_id), "the cancel to end")
    assert (cancel.state, cancel.changed) == ("done", 2) and client.get_job(daily.id).state == "cancelled"
    update = client.jobs.start_bulk("update", all_queues=True, metadata=tag, type="mail", run_now=True)
    assert update.action == "update"
    assert eventually(lambda: ended(client, update.id), "the update to end").changed == 1
    assert client.get_job(retry.id).state == "ready", "the only scheduled mail"

    # Refused as the TypeScript SDK refuses them: SeppError `invalid_argument`, nothing sent.
    with pytest.raises(sepp.SeppError, match="changes of an update") as stray:
        client.jobs.start_bulk("cancel", queue, priority=1)
    assert stray.value.code == "invalid_argument"
    with pytest.raises(sepp.SeppError, match="not a bulk action") as unknown_action:
        count("archive", queue)  # type: ignore[arg-type]
    assert unknown_action.value.code == "invalid_argument"
    with pytest.raises(TypeError, match="metadata"):
        client.jobs.cancel_matching(queue, metadata=("test",))  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="error_group"):
        client.jobs.delete_matching(queue, error_group="Timeout")  # type: ignore[arg-type]
    with pytest.raises(sepp.SeppError, match="unknown dead reason 'old'") as unknown:
        client.jobs.cancel_matching(queue, dead_reason="old")  # type: ignore[arg-type]
    with pytest.raises(sepp.SeppError, match="give a priority or run_now") as no_change:
        client.jobs.start_bulk("update", queue)
    with pytest.raises(sepp.SeppError, match="only dead letters have one") as not_dead:
        client.jobs.cancel_matching(queue, dead_reason="expired")
    assert {e.value.code for e in (unknown, no_change, not_dead)} == {"invalid_argument"}


def test_background_on_dead_letters_and_a_purge(client: sepp.Client, queue: str) -> None:
    """With background=True the dead-letter calls on "all" and a purge return a BulkResult as the
    operation began, to follow by its id; without, a count. A bulk cancel's result has `changed`."""
    def kill_all() -> None:
        for lease in client.reserve([queue], max_jobs=3):
            client.nack(lease, error="boom", dead_letter=True)

    for _ in range(3):
        client.enqueue(queue, "mail")
    kill_all()
    requeued = client.dlq.requeue(queue, "all", background=True)
    assert isinstance(requeued, sepp.BulkResult) and requeued.operation is not None
    op = requeued.operation
    assert (requeued.changed, requeued.matched, op.action, op.state, op.changed) == (0, 3, "requeue", "running", 0)
    assert eventually(lambda: ended(client, op.id), "the requeue to end").changed == 3

    kill_all()
    [first, *_] = client.dlq.list(queue).jobs
    by_id = client.delete_dead_letters(queue, [first.id], background=True)
    assert (by_id.changed, by_id.operation) == (1, None), "chosen ids change at once"
    deleted = client.dlq.delete(queue, "all", error_text="BOOM", background=True)
    assert deleted.operation is not None and (deleted.matched, deleted.operation.action) == (2, "delete")
    deleted_id = deleted.operation.id
    assert eventually(lambda: ended(client, deleted_id), "the delete to end").changed == 2

    client.enqueue(queue, "mail")
    client.enqueue(queue, "mail", delay_ms=3_600_000)
    purge = client.purge_queue(queue, background=True)
    assert purge.operation is not None and (purge.changed, purge.matched, purge.operation.state) == (0, 2, "running")
    purge_id = purge.operation.id
    assert eventually(lambda: ended(client, purge_id), "the purge to end").changed == 2
    assert counts(client, queue) == sepp.StateCounts(0, 0, 0, 0, 0)
    assert client.queues.purge(queue) == 0, "without background: a count"
    # A flag known only at run time type-checks too (the overload of a plain bool): a count here.
    in_background: bool = len(queue) < 0
    assert client.purge_queue(queue, background=in_background) == 0
    assert client.dlq.requeue(queue, "all", background=in_background) == 0

    client.enqueue(queue, "mail")
    cancelled = client.jobs.cancel_matching(queue)
    assert (cancelled.cancelled, cancelled.changed) == (1, 1)
    assert client.cancel_jobs(queue, dry_run=True).changed == 0


def test_update_matching_takes_dry_run_and_background(client: sepp.Client, queue: str) -> None:
    """With dry_run=True update_matching returns a BulkResult that counts and changes nothing; with
    background=True one as the operation began, followed to its end; without either, a count."""
    ready = client.enqueue(queue, "mail")
    later = [client.enqueue(queue, "mail", delay_ms=3_600_000) for _ in range(2)]
    # The annotations check the overloads (mypy runs on the tests): a BulkResult or a count.
    dry: sepp.BulkResult = client.jobs.update_matching(queue, run_now=True, dry_run=True)
    assert dry == sepp.BulkResult(0, 2, False, None), "run_now moves the scheduled jobs"
    assert client.update_jobs(queue, priority=9, dry_run=True).matched == 3, "a priority: every waiting job"
    assert counts(client, queue) == sepp.StateCounts(2, 1, 0, 0, 0), "a dry run changes nothing"

    begun: sepp.BulkResult = client.update_jobs(queue, priority=9, background=True)
    assert begun.operation is not None
    op = begun.operation
    assert (begun.changed, begun.matched, op.action, op.state) == (0, 3, "update", "running")
    assert eventually(lambda: ended(client, op.id), "the update to end").changed == 3
    assert [client.get_job(j.id).priority for j in (ready, *later)] == [9, 9, 9]
    ran_now: int = client.jobs.update_matching(queue, run_now=True)
    assert ran_now == 2
