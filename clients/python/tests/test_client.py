"""The Client against a real server: enqueue in every form, leases, inspection,
dead letters, and the errors each failure becomes."""
from __future__ import annotations

import asyncio
import datetime
import socket
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
from conftest import ADMIN_KEY, PRODUCER_KEY, UNKNOWN_KEY, ServerProcess, counts, eventually, stand_in_server

import sepp
from sepp.v1 import admin_pb2, queue_service_pb2_grpc


@pytest.mark.parametrize("transport", ["stream", "unary"])
def test_enqueue_options_reach_the_worker(server: ServerProcess, queue: str, transport: str) -> None:
    with sepp.Client(server.address, api_key=PRODUCER_KEY, transport=transport) as producer:  # type: ignore[arg-type]
        text = producer.enqueue(queue, "text", "héllo", priority=7, metadata={"tenant": "a"}, max_attempts=3)
        data = producer.enqueue(queue, "json", json={"n": 1, "s": "ü"}, idempotency_key="k1")
        again = producer.enqueue(queue, "json", json={"n": 2}, idempotency_key="k1")
        raw = producer.enqueue(queue, "raw", b"\x00\xff", content_type="application/x-thing", delay_ms=-5)
        later = producer.enqueue(queue, "later", run_at=datetime.datetime.now(datetime.timezone.utc)
                                 + datetime.timedelta(days=1))
    assert again == sepp.Enqueued(data.id, True), "an idempotency key seen before returns the first job"
    assert not data.deduplicated
    with sepp.Client(server.address, api_key=ADMIN_KEY) as admin:
        jobs = {j.type: j for j in admin.reserve([queue], max_jobs=10)}
        assert set(jobs) == {"text", "json", "raw"}, "the job scheduled a day ahead is not due"
        assert jobs["text"].text() == "héllo" and jobs["text"].content_type == "text/plain; charset=utf-8"
        assert jobs["text"].priority == 7 and jobs["text"].metadata == {"tenant": "a"}
        assert jobs["text"].max_attempts == 3 and jobs["text"].attempt == 1
        assert jobs["json"].json() == {"n": 1, "s": "ü"} and jobs["json"].idempotency_key == "k1"
        assert jobs["raw"].payload == b"\x00\xff" and jobs["raw"].content_type == "application/x-thing"
        assert admin.get_job(later.id).state == "scheduled"
        assert admin.cancel_job(later.id) == sepp.CancelResult("scheduled", "cancelled")
        results = admin.ack_batch([jobs["text"], jobs["json"]])
        assert [r.outcome for r in results] == ["ok", "ok"]
        admin.ack(jobs["raw"])


def test_enqueues_from_one_thread_without_waiting_share_messages(server: ServerProcess, queue: str) -> None:
    with sepp.Client(server.address, api_key=PRODUCER_KEY) as producer:
        futures = [producer.enqueue_future(sepp.JobSpec(queue, "t", json=i)) for i in range(200)]
        ids = [f.result(30).id for f in futures]
        stats = producer.stats()
    assert len(set(ids)) == 200
    assert stats.enqueued_jobs == 200
    # Each batch takes everything enqueued while the previous one was sent: far fewer than 200.
    assert stats.produce_messages < 50, stats


def test_enqueues_from_many_threads_share_messages(server: ServerProcess, queue: str) -> None:
    """Twenty threads each enqueue ten jobs one at a time, waiting for each: while messages are
    on their way to the disk, the others' jobs gather for the next one: more than two a
    message on average (without the limit on messages in flight, 1.6 to 2 here)."""
    with sepp.Client(server.address, api_key=PRODUCER_KEY) as producer:
        with ThreadPoolExecutor(max_workers=20) as pool:
            ids = list(pool.map(lambda i: [producer.enqueue(queue, "t", json=[i, j]).id for j in range(10)], range(20)))
        stats = producer.stats()
    assert len({id for batch in ids for id in batch}) == 200
    assert stats.enqueued_jobs == 200 and stats.produce_messages < 100, stats


def test_enqueue_future_from_asyncio(server: ServerProcess, queue: str) -> None:
    async def main(client: sepp.Client) -> list[sepp.Enqueued]:
        jobs = [sepp.JobSpec(queue, "t", "x") for _ in range(5)]
        return await asyncio.gather(*(asyncio.wrap_future(client.enqueue_future(job)) for job in jobs))

    with sepp.Client(server.address, api_key=PRODUCER_KEY) as producer:
        assert len({e.id for e in asyncio.run(main(producer))}) == 5


@pytest.mark.parametrize("transport", ["stream", "unary"])
def test_batch_and_atomic(client: sepp.Client, server: ServerProcess, queue: str, transport: str) -> None:
    with sepp.Client(server.address, api_key=PRODUCER_KEY, transport=transport) as producer:  # type: ignore[arg-type]
        outcomes = producer.enqueue_batch([
            sepp.JobSpec(queue, "a", json={"i": 1}),
            sepp.JobSpec(queue, "bad type!"),
            sepp.JobSpec(queue, "c", payload="x"),
        ])
        assert [o.ok for o in outcomes] == [True, False, True]
        assert outcomes[1].reason == "invalid_name" and "type" in outcomes[1].message
        with pytest.raises(sepp.JobRejectedError) as refused:
            producer.enqueue_atomic([sepp.JobSpec(queue, "a"), sepp.JobSpec("bad queue", "b"), sepp.JobSpec(queue, "")])
        assert [(r.index, r.reason) for r in refused.value.rejections] == [(1, "invalid_name"), (2, "invalid_name")]
        stored = producer.enqueue_atomic([sepp.JobSpec(queue, "a"), sepp.JobSpec(queue, "b")])
        assert len(stored) == 2
    assert counts(client, queue) == sepp.StateCounts(0, 4, 0, 0, 0), "nothing of the refused atomic batch"


def test_rejections_are_typed(server: ServerProcess, client: sepp.Client) -> None:
    client.enqueue("py-full", "t")
    try:
        with pytest.raises(sepp.QueueFullError) as full:
            client.enqueue("py-full", "t")
        assert full.value.reason == "queue_full" and full.value.code == "resource_exhausted"
        assert isinstance(full.value, sepp.JobRejectedError)
        with pytest.raises(sepp.JobRejectedError) as bad:
            client.enqueue("py-q", "t", priority=12)
        assert bad.value.reason == "invalid_job" and "priority" in str(bad.value)
        with pytest.raises(sepp.SeppError) as both:
            client.enqueue("py-q", "t", "x", json=1)
        assert both.value.code == "invalid_argument"
    finally:
        for job in client.reserve(["py-full"]):
            client.ack(job)


def test_leases_and_lost_leases(client: sepp.Client, queue: str) -> None:
    client.enqueue(queue, "t")
    [job] = client.reserve([queue], lease_ms=60_000, worker_id="py-test")
    info = client.get_job(job.id)
    assert (info.state, info.worker_id, info.attempt) == ("leased", "py-test", 1)
    assert client.extend(job, 120_000) >= job.lease_deadline_ms
    result = client.nack(job, error=ValueError("nope"), retry_after_ms=0)
    assert result == sepp.NackResult("ready", result.run_at_ms)
    with pytest.raises(sepp.LeaseLostError) as lost:
        client.ack(job)
    assert lost.value.code == "not_found", "the job is no longer leased"
    [again] = client.reserve([queue])
    assert again.attempt == 2 and again.last_error == "ValueError: nope"
    with pytest.raises(sepp.LeaseLostError) as stale:
        client.extend(job, 1000)
    assert stale.value.code == "lease_lost", "attempt 1 is stale once attempt 2 is out"
    assert client.nack(sepp.Lease(again.id, again.attempt), dead_letter=True, error="give up").state == "dead"


def test_a_lease_given_back_counts_no_attempt(client: sepp.Client, queue: str) -> None:
    job_id = client.enqueue(queue, "t", max_attempts=1).id
    [job] = client.reserve([queue], worker_id="py-test")
    result = client.nack(job, give_back=True, error="ignored", dead_letter=True)
    assert result.state == "ready", "give_back wins over dead_letter: not dead, though on its last attempt"
    info = client.get_job(job_id)
    assert (info.state, info.attempt, info.max_attempts, info.last_error, info.worker_id) == \
        ("ready", 1, 2, None, None), "its attempt kept (never leased again), its budget one larger"
    with pytest.raises(sepp.LeaseLostError):
        client.nack(job, give_back=True)
    [again] = client.reserve([queue])
    assert (again.id, again.attempt, again.max_attempts) == (job_id, 2, 2), "the next attempt, its last"
    with pytest.raises(sepp.LeaseLostError):
        client.ack(job)  # The given-back lease is stale: its attempt is not the live one.
    client.ack(again)


def test_dead_letters_inspect_requeue_delete(client: sepp.Client, queue: str) -> None:
    ids = [client.enqueue(queue, "t", str(i), max_attempts=1).id for i in range(3)]
    for job in client.reserve([queue], max_jobs=3):
        assert client.nack(job, error="boom").state == "dead", "the last attempt failed"
    client.enqueue(queue, "t", "disk")
    [disk] = client.reserve([queue])
    client.nack(disk, error="Disk full", dead_letter=True)
    page = client.list_dead_letters(queue, page_size=2)
    assert len(page.jobs) == 2 and page.next_page_token is not None
    dead = list(client.dead_letters(queue, reason="attempts_exhausted"))
    assert sorted(j.id for j in dead) == sorted(ids)
    assert all(j.dead_reason == "attempts_exhausted" and j.last_error == "boom" for j in dead)
    assert client.get_job(ids[0]).errors[0].error == "boom"
    assert client.requeue_dead_letters(queue, [ids[0]]) == 1
    assert client.dlq.delete(queue, "all", error_text="DISK") == 1, "error_text narrows all, in any case"
    assert client.dlq.requeue(queue, "all", reason="lease_expired") == 0, "reason narrows all"
    with pytest.raises(sepp.SeppError, match="chosen job_ids are taken as they are") as with_ids:
        client.dlq.requeue(queue, [ids[1]], reason="expired")
    with pytest.raises(sepp.SeppError, match="unknown dead reason") as unknown:
        client.dlq.delete(queue, "all", reason="old")  # type: ignore[call-overload]
    assert with_ids.value.code == unknown.value.code == "invalid_argument"
    assert client.delete_dead_letters(queue, "all", reason="attempts_exhausted", error_text="boom") == 2
    assert counts(client, queue) == sepp.StateCounts(0, 1, 0, 0, 0)


def test_queues_and_server_info(client: sepp.Client, queue: str) -> None:
    client.enqueue(queue, "t")
    client.pause_queue(queue)
    assert client.reserve([queue]) == [], "a paused queue hands out nothing"
    [info] = [q for q in client.list_queues() if q.name == queue]
    assert info.paused and info.counts.ready == 1 and info.settings.backoff.base_ms == 200
    client.resume_queue(queue)
    assert len(client.reserve([queue])) == 1
    server = client.get_server_info()
    assert server.durability == "full" and server.limits.max_batch_jobs == 1000
    assert (server.limits.max_connections, server.limits.max_streams_per_connection) == (4096, 1000)
    assert (server.limits.handshake_timeout_ms, server.limits.idle_timeout_ms) == (10_000, 300_000)
    assert server.limits.first_message_timeout_ms == 10_000
    assert (server.limits.keepalive_ms, server.limits.keepalive_timeout_ms) == (30_000, 20_000)
    workflow_limits = (server.limits.max_dependencies_per_job, server.limits.max_flow_jobs,
                       server.limits.max_flow_depth, server.limits.max_dependency_results_bytes,
                       server.limits.max_open_batches_per_key, server.limits.max_dependents_per_job)
    assert workflow_limits == (100, 1000, 100, 256 * 1024, 1000, 10_000)
    assert server.store == sepp.StoreInfo("sqlite"), "no host, database or replication for SQLite"
    assert server.queue_defaults.max_attempts == 5


class Configured(queue_service_pb2_grpc.QueueServiceServicer):
    """Answers GetServerInfo as a server configured off the defaults does: keepalive 45 s and 7 s
    (a real one: tests/rpc/connection-limits.test.ts, and after a reload tests/rpc/reload.test.ts)."""

    def GetServerInfo(self, request: Any, context: Any) -> Any:  # noqa: N802 - gRPC's method names
        limits = admin_pb2.ServerLimits(keepalive_ms=45_000, keepalive_timeout_ms=7_000, max_dependencies_per_job=7,
                                        max_flow_jobs=11, max_flow_depth=5, max_dependency_results_bytes=3072,
                                        max_open_batches_per_key=13, max_dependents_per_job=17)
        return admin_pb2.GetServerInfoResponse(version="0.1.0", limits=limits)


def test_server_info_reports_the_limits_it_started_with() -> None:
    """The server's own keepalive settings, for a client that picks its keepalive_ms from them;
    and the workflow limits, each its own value so that no two can be read in each other's place.
    A stand-in answers: a server of its own would cost 2 s of CPU for what the conversion does."""
    with stand_in_server(Configured()) as address, sepp.Client(address) as client:
        limits = client.get_server_info().limits
    assert (limits.keepalive_ms, limits.keepalive_timeout_ms) == (45_000, 7_000)
    assert (limits.max_dependencies_per_job, limits.max_flow_jobs, limits.max_flow_depth,
            limits.max_dependency_results_bytes, limits.max_open_batches_per_key,
            limits.max_dependents_per_job) == (7, 11, 5, 3072, 13, 17)


class OnPostgres(queue_service_pb2_grpc.QueueServiceServicer):
    """Answers GetServerInfo as a server on PostgreSQL does (docs/postgres.md), where a real one
    would need a database cluster of its own."""

    def GetServerInfo(self, request: Any, context: Any) -> Any:  # noqa: N802 - gRPC's method names
        store = admin_pb2.StoreInfo(kind="postgres", host="db.internal:5432", database="jobs", schema="sepp",
                                    signals_connected=True, replication="synchronous", standbys=1,
                                    pool_size=10, max_waiting_reads=1000, max_waiting_reads_per_key=100,
                                    statement_timeout_ms=30_000)
        identity = admin_pb2.ServerIdentity(host_name="web-1", instance_id="0190a4c2-0000-7000-8000-00000000beef",
                                            pid=4242, grpc_address="0.0.0.0:7400", admin_address="127.0.0.1:7401")
        return admin_pb2.GetServerInfoResponse(version="0.1.0", store=store, identity=identity)


def test_server_info_names_a_postgres_store() -> None:
    with stand_in_server(OnPostgres()) as address, sepp.Client(address) as client:
        info = client.get_server_info()
        store = info.store
    # Which process answered; the HTTP API is off there.
    assert info.identity == sepp.ServerIdentity("web-1", "0190a4c2-0000-7000-8000-00000000beef", 4242,
                                                "0.0.0.0:7400", "127.0.0.1:7401", None)
    assert store == sepp.StoreInfo("postgres", "db.internal:5432", "jobs", "sepp", True, "synchronous", 1,
                                   10, 1000, 100, 30_000)


class Older(queue_service_pb2_grpc.QueueServiceServicer):
    """Answers GetServerInfo as a server that predates the keepalive fields: limits without them."""

    def GetServerInfo(self, request: Any, context: Any) -> Any:  # noqa: N802 - gRPC's method names
        return admin_pb2.GetServerInfoResponse(version="0.0.9", limits=admin_pb2.ServerLimits(idle_timeout_ms=300_000))


def test_a_server_that_predates_the_keepalive_fields_reads_0() -> None:
    """0, as docs/python.md says, and no keepalive_ms to connect with."""
    with stand_in_server(Older()) as address, sepp.Client(address) as client:
        limits = client.get_server_info().limits
        assert (limits.idle_timeout_ms, limits.keepalive_ms, limits.keepalive_timeout_ms) == (300_000, 0, 0)
        with pytest.raises(ValueError, match="keepalive_ms"):
            sepp.Client(address, keepalive_ms=limits.keepalive_ms)


def test_queue_settings_at_run_time_and_reload(client: sepp.Client, queue: str) -> None:
    client.enqueue(queue, "t")
    info = client.set_queue_settings(queue, {"max_attempts": 3, "backoff_base_ms": "2s", "allowed_types": ["t"]})
    values = {s.key: s for s in info.setting_values}
    assert values["max_attempts"] == sepp.SettingValue("max_attempts", 3, "override", 5)
    assert values["backoff_base_ms"] == sepp.SettingValue("backoff_base_ms", 2000, "override", 200)
    assert values["backoff_jitter"].source == "queue_defaults"
    assert info.settings.max_attempts == 3 and info.settings.allowed_types == ("t",)
    assert client.get_job(client.enqueue(queue, "t").id).max_attempts == 3, "the next job has it"
    with pytest.raises(sepp.SeppError) as bad:
        client.set_queue_settings(queue, {"max_attempts": 0})
    assert bad.value.code == "invalid_argument"
    assert f"queues.{queue}.max_attempts: 0 is below the minimum 1" in str(bad.value)
    info = client.reset_queue_settings(queue, ["max_attempts"])
    assert {s.key: s.source for s in info.setting_values}["max_attempts"] == "default"
    info = client.reset_queue_settings(queue, "all")
    assert all(s.source != "override" for s in info.setting_values)
    report = client.reload_config(dry_run=True)
    assert report.applied is False and report.problems == () and report.changed == ()
    allowed = client.reload_config(dry_run=True, allow_security_downgrade=True)
    assert allowed.applied is False and allowed.problems == ()
    assert report.config_file is not None and report.config_file.endswith(".toml")


def test_a_reload_report_gives_each_setting_with_its_values(server: ServerProcess) -> None:
    original = server.config.read_text()
    # A dry run of a file that changes a limit, one sized into the message limits, and a key.
    changed = original.replace(f'key = "{PRODUCER_KEY}"', f'key = "{PRODUCER_KEY}-rotated"')
    server.config.write_text(changed + '[limits]\nmax_page_size = 7\nmax_result_bytes = "1KiB"\n')
    try:
        with sepp.Client(server.address, api_key=ADMIN_KEY) as admin:
            report = admin.reload_config(dry_run=True)
    finally:
        server.config.write_text(original)
    assert report.changes == (
        sepp.SettingChange("limits.max_page_size", "1000", "7", None, False),
        sepp.SettingChange("grpc.api_keys", None, None, "changed producer", False),
        sepp.SettingChange("limits.max_result_bytes", "64KiB", "1KiB", None, True),
    )
    assert report.changed == ("limits.max_page_size", "grpc.api_keys (changed producer)")
    assert report.restart_required == ("limits.max_result_bytes",)
    assert report.security_downgrades == ()


def test_a_reload_report_names_what_it_would_lower_security_by(server: ServerProcess) -> None:
    original = server.config.read_text()
    # The producer key raised to admin: a dry run tells, with the flag or without it (refused).
    raised = original.replace('name = "producer"\nrole = "producer"', 'name = "producer"\nrole = "admin"')
    assert raised != original
    server.config.write_text(raised)
    try:
        with sepp.Client(server.address, api_key=ADMIN_KEY) as admin:
            refused = admin.reload_config(dry_run=True)
            allowed = admin.reload_config(dry_run=True, allow_security_downgrade=True)
    finally:
        server.config.write_text(original)
    lowered = ("grpc.api_keys (producer: its role goes from producer to admin)",)
    assert [key for key, _ in refused.problems] == ["grpc.api_keys"]
    assert refused.security_downgrades == lowered
    assert (allowed.applied, allowed.problems, allowed.security_downgrades) == (False, (), lowered)


def test_list_workers(client: sepp.Client, queue: str) -> None:
    job_id = client.enqueue(queue, "t").id
    [job] = client.reserve([queue], worker_id=f"py-{queue}")
    assert job.id == job_id
    [worker] = [w for w in client.list_workers() if w.worker_id == f"py-{queue}"]
    assert worker.transport == "reserve" and worker.queues == (queue,)
    assert worker.jobs_held == 1 and worker.oldest_lease_at_ms is not None
    assert worker.address != "" and worker.last_seen_at_ms >= worker.connected_at_ms
    assert (worker.completed_recent, worker.failed_recent, worker.recent_window_ms) == (0, 0, 900_000)
    client.ack(job)
    [after] = [w for w in client.list_workers() if w.worker_id == f"py-{queue}"]
    assert (after.completed_recent, after.failed_recent) == (1, 0), "its ack counted over the last 15 minutes"


def test_list_workers_page_counts_the_reserves_waiting(client: sepp.Client, queue: str) -> None:
    before = client.list_workers_page().waiting_reserves
    stop = threading.Event()

    def long_poll() -> None:
        with sepp.Client(client.address, api_key=ADMIN_KEY) as other:
            while not stop.is_set():
                other.reserve([f"{queue}-idle"], wait_ms=200)

    def waiting(n: int) -> sepp.WorkerPage | None:
        page = client.list_workers_page(page_size=10)
        return page if page.waiting_reserves == n else None

    waiter = threading.Thread(target=long_poll)
    waiter.start()
    try:
        page = eventually(lambda: waiting(before + 1), "the long-poll to wait")
    finally:
        stop.set()
        waiter.join()
    assert isinstance(page.workers, list) and len(page.workers) <= 10
    eventually(lambda: waiting(before), "the long-poll to end")


def test_queues_nobody_used(client: sepp.Client, queue: str) -> None:
    typo = f"{queue}-typo"
    with pytest.raises(sepp.SeppError) as missing:
        client.pause_queue(typo)
    assert missing.value.code == "not_found"
    assert typo not in [q.name for q in client.list_queues()], "a typo creates no queue"
    client.pause_queue(typo, allow_missing=True)
    assert [q.paused for q in client.list_queues() if q.name == typo] == [True]
    client.delete_queue(typo)
    assert typo not in [q.name for q in client.list_queues()]
    client.enqueue(queue, "t")
    with pytest.raises(sepp.SeppError) as busy:
        client.delete_queue(queue)
    assert busy.value.code == "failed_precondition"


def test_call_errors(server: ServerProcess, client: sepp.Client) -> None:
    with pytest.raises(sepp.SeppError) as missing:
        client.get_job("01234567-89ab-7def-8123-456789abcdef")
    assert missing.value.code == "not_found"
    with sepp.Client(server.address, api_key=PRODUCER_KEY) as producer:
        with pytest.raises(sepp.SeppError) as denied:
            producer.reserve(["x"])
        assert denied.value.code == "permission_denied"
    with sepp.Client(server.address, api_key=UNKNOWN_KEY) as stranger:
        with pytest.raises(sepp.SeppError) as unknown:
            stranger.enqueue("x", "t")
        assert unknown.value.code == "unauthenticated"
        # The client's option and variable, not the gRPC metadata the server asks for.
        assert "check api_key= of sepp.Client(), or SEPP_API_KEY" in str(unknown.value)
    with sepp.Client(server.address) as keyless:
        with pytest.raises(sepp.SeppError) as none:
            keyless.list_queues()
        assert none.value.code == "unauthenticated"
        assert str(none.value).startswith("the server needs an API key: pass api_key= to sepp.Client()")
        assert "authorization" not in str(none.value)
    closed = sepp.Client(server.address)
    closed.close()
    with pytest.raises(sepp.SeppError, match="closed"):
        closed.enqueue("x", "t")


def test_an_unreachable_server_is_unavailable() -> None:
    with socket.socket() as probe:  # A port nothing listens on.
        probe.bind(("127.0.0.1", 0))
        address = f"127.0.0.1:{probe.getsockname()[1]}"
    with sepp.Client(address, default_deadline_ms=2000) as nowhere:
        with pytest.raises(sepp.UnavailableError) as on_stream:
            nowhere.enqueue("x", "t")
        assert on_stream.value.retryable
        with pytest.raises(sepp.UnavailableError):
            nowhere.list_queues()
        with pytest.raises(sepp.UnavailableError):
            nowhere.ready(200)


def test_the_server_and_key_come_from_the_environment(server: ServerProcess,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """What `sepp admin new-api-key` tells users: the client reads SEPP_SERVER and SEPP_API_KEY."""
    monkeypatch.setenv("SEPP_SERVER", server.address)
    monkeypatch.setenv("SEPP_API_KEY", PRODUCER_KEY)
    with sepp.Client() as from_env:
        assert from_env.address == server.address
        assert from_env.enqueue("from-env", "t").id


def test_calls_grouped_by_what_they_act_on(client: sepp.Client) -> None:
    """client.jobs, .queues, .dlq and .audit, and the flat methods that are their aliases."""
    queue = "grouped"
    job = client.enqueue(queue, "t")
    assert client.jobs.get(job.id).id == client.get_job(job.id).id == job.id
    client.queues.pause(queue)
    assert [q.paused for q in client.queues.list() if q.name == queue] == [True]
    client.resume_queue(queue)
    assert [q.paused for q in client.list_queues() if q.name == queue] == [False]
    assert client.jobs.cancel_matching(queue, dry_run=True).matched == 1
    assert client.jobs.cancel(job.id).state == "cancelled"
    assert client.dlq.list(queue).jobs == [] and list(client.dlq.all(queue)) == []
    assert [e.action for e in client.audit.entries(target=f"job:{job.id}")] == ["job.cancel"]
    assert client.audit.list(target=f"queue:{queue}").entries[0].action == "queue.resume"
