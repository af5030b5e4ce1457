"""Flow control from Python: a job's group on enqueue and on delivery, the
queue's limits as list_queues reports them, and group_max_leased holding for a
Worker on both transports (docs/flow-control.md)."""
from __future__ import annotations

import threading

import pytest
from conftest import ADMIN_KEY, PRODUCER_KEY, ServerProcess, eventually

import sepp

QUEUE = "py-tenants"
"""Declared in conftest.SERVER_TOML: max_leased 3, group_max_leased 1, 1000 leases/s."""


def drain(client: sepp.Client) -> None:
    while jobs := client.reserve([QUEUE], max_jobs=100):
        client.ack_batch(jobs)


def test_group_on_enqueue_delivery_and_get_job(server: ServerProcess, client: sepp.Client) -> None:
    drain(client)
    with sepp.Client(server.address, api_key=PRODUCER_KEY) as producer:
        first = producer.enqueue(QUEUE, "t", json=1, group="acme")
        producer.enqueue_batch([sepp.JobSpec(QUEUE, "t", json=2, group="acme"),
                                sepp.JobSpec(QUEUE, "t", json=3, group="globex"),
                                sepp.JobSpec(QUEUE, "t", json=4)])
    assert client.get_job(first.id).group == "acme"
    leased = client.reserve([QUEUE], max_jobs=10)
    # One per group (group_max_leased = 1); the job without a group takes its turn too.
    assert sorted((j.group or "-") for j in leased) == ["-", "acme", "globex"]
    [info] = [q for q in client.list_queues() if q.name == QUEUE]
    assert info.ready_groups == 1 and not info.ready_groups_capped
    assert info.settings.max_leased == 3 and info.settings.group_max_leased == 1
    assert info.settings.rate_limit == sepp.RateLimit(1000, 1000, 1000)
    assert info.settings.group_rate_limit is None
    client.ack_batch(leased)
    drain(client)


def test_a_bad_group_is_rejected(client: sepp.Client) -> None:
    with pytest.raises(sepp.JobRejectedError) as rejected:
        client.enqueue(QUEUE, "t", group="no spaces")
    assert rejected.value.reason == "invalid_name" and "group" in str(rejected.value)


@pytest.mark.parametrize("transport", ["stream", "unary"])
def test_worker_holds_one_lease_per_group(server: ServerProcess, client: sepp.Client, transport: str) -> None:
    drain(client)
    for group in ("a", "b"):
        client.enqueue_batch([sepp.JobSpec(QUEUE, "t", json=i, group=group) for i in range(4)])
    lock = threading.Lock()
    running: dict[str, int] = {}
    worst = 0
    release = threading.Event()

    def handle(job: sepp.WorkerJob) -> None:
        nonlocal worst
        with lock:
            running[job.group or "-"] = running.get(job.group or "-", 0) + 1
            worst = max(worst, *running.values())
        release.wait(30)
        with lock:
            running[job.group or "-"] -= 1

    with sepp.Client(server.address, api_key=ADMIN_KEY, transport=transport) as worker_client:  # type: ignore[arg-type]
        worker = worker_client.worker([QUEUE], concurrency=5, transport=transport, fallback=handle).start()
        try:
            eventually(lambda: sum(running.values()) == 2 or None, "one job of each group running")
            [info] = [q for q in client.list_queues() if q.name == QUEUE]
            assert info.counts.leased == 2, "group_max_leased = 1 holds with 5 free slots"
            release.set()
            eventually(lambda: all(q.counts.ready + q.counts.leased == 0 for q in client.list_queues()
                                   if q.name == QUEUE) or None, "the queue drained")
        finally:
            release.set()
            worker.close()
    assert worst == 1


def test_a_waiting_job_changes_group_and_bulk_actions_take_a_group(client: sepp.Client) -> None:
    """update_job(group=…) moves a waiting job to another group and group_max_leased follows
    it at once; a leased job's group cannot change; cancel_jobs and update_jobs with `group`
    touch only that group's jobs (docs/flow-control.md, "Changing a job's group")."""
    drain(client)
    first = client.enqueue(QUEUE, "t", group="py-acme")
    second = client.enqueue(QUEUE, "t", group="py-acme")
    [leased] = client.reserve([QUEUE], max_jobs=10)
    assert leased.id == first.id, "py-acme is at its limit (group_max_leased = 1)"
    assert client.reserve([QUEUE], max_jobs=10) == []
    moved = client.update_job(second.id, group="py-globex")
    assert (moved.group, moved.state) == ("py-globex", "ready")
    [next_one] = client.reserve([QUEUE], max_jobs=10)
    assert (next_one.id, next_one.group) == (second.id, "py-globex")
    with pytest.raises(sepp.SeppError) as refused:
        client.update_job(first.id, group="py-globex")
    assert refused.value.code == "failed_precondition"
    client.ack_batch([leased, next_one])
    assert client.update_job(client.enqueue(QUEUE, "t", group="g").id, group="").group is None

    later = [client.enqueue(QUEUE, "t", group=g, delay_ms=3_600_000) for g in ("py-a", "py-a", "py-b")]
    assert client.update_jobs(QUEUE, group="py-a", run_now=True) == 2
    assert [client.get_job(j.id).state for j in later] == ["ready", "ready", "scheduled"]
    assert client.cancel_jobs(QUEUE, group="py-b", dry_run=True).matched == 1
    cancelled = client.cancel_jobs(QUEUE, group="py-b")
    assert (cancelled.cancelled, cancelled.cancel_requested, cancelled.matched) == (1, 0, 1)
    assert [client.get_job(j.id).state for j in later] == ["ready", "ready", "cancelled"]
    [entry] = client.list_audit_entries(action="jobs.cancel", target=f"queue:{QUEUE}", page_size=1).entries
    assert entry.details["group"] == "py-b"
    drain(client)
