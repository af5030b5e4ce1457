"""Workflows against a real server (docs/workflows.md): depends_on and the waiting state,
a flow built with sepp.Flow, dependency_results at lease, GetJob's links, batches with their
completion job, a flow and a batch cancelled as one act, batches listed."""
from __future__ import annotations

import pathlib
import re
from typing import Any

import grpc
import pytest

import sepp
from conftest import ADMIN_KEY, PRODUCER_KEY, ServerProcess, eventually, stand_in_server
from sepp.v1 import queue_service_pb2_grpc


def lease_one(client: sepp.Client, queue: str) -> sepp.LeasedJob:
    jobs = client.reserve([queue], lease_ms=60_000)
    assert len(jobs) == 1, f"one job of {queue} should be ready"
    return jobs[0]


def test_depends_on_waits_and_the_results_are_passed_on(client: sepp.Client, queue: str) -> None:
    first = client.enqueue(f"{queue}-a", "count")
    second = client.enqueue(f"{queue}-b", "report", depends_on=[first.id], on_dependency_failure="run")
    waiting = client.get_job(second.id)
    assert waiting.state == "waiting"
    assert [(d.id, d.state, d.edge) for d in waiting.dependencies] == [(first.id, "ready", "pending")]
    [held] = [q for q in client.list_queues() if q.name == f"{queue}-b"]
    assert (held.counts.waiting, held.counts.ready) == (1, 0)
    assert client.reserve([f"{queue}-b"]) == []
    counted = lease_one(client, f"{queue}-a")
    assert counted.dependency_results == ()
    client.ack(counted, result={"rows": 42})
    reporting = lease_one(client, f"{queue}-b")
    assert [(d.job_id, d.name, d.state, d.result, d.result_omitted) for d in reporting.dependency_results] == [
        (first.id, None, "completed", {"rows": 42}, False)
    ]
    [counted_result] = reporting.dependency_results
    assert (counted_result.result_data, counted_result.result_content_type) == (b'{"rows":42}', "application/json")
    client.ack(reporting)


def test_a_flow_is_stored_at_once_and_runs_in_order(client: sepp.Client, queue: str) -> None:
    flow = sepp.Flow()
    flow.add("extract", sepp.JobSpec(queue, "extract", json={"day": "2026-12-05"}))
    for part in range(3):
        flow.add(f"transform-{part}", sepp.JobSpec(queue, "transform", json={"part": part}), after=["extract"])
    flow.add("load", sepp.JobSpec(queue, "load"), after=[f"transform-{p}" for p in range(3)])
    ids = client.enqueue_flow(flow)
    assert sorted(ids) == ["extract", "load", "transform-0", "transform-1", "transform-2"]
    graph = client.get_flow(ids["load"].id)
    assert [(j.type, j.state) for j in graph.jobs] == [
        ("extract", "ready"), ("transform", "waiting"), ("transform", "waiting"), ("transform", "waiting"),
        ("load", "waiting"),
    ]
    assert len(graph.edges) == 6 and not graph.truncated and not graph.edges_limited
    # Every job's name in the flow, the final one's too (no edge names it).
    assert [j.name for j in graph.jobs] == ["extract", "transform-0", "transform-1", "transform-2", "load"]
    ran = []
    while True:
        jobs = client.reserve([queue], max_jobs=10, lease_ms=60_000)
        if not jobs:
            break
        for job in jobs:
            ran.append(job.type)
            client.ack(job, result=job.type)
    assert ran == ["extract", "transform", "transform", "transform", "load"]
    # A job others depend on is kept completed (its result is theirs), with its dependents.
    extract = client.get_job(ids["extract"].id)
    assert extract.state == "completed" and extract.result == "extract"
    assert [(d.type, d.state, d.edge) for d in extract.dependents] == [("transform", "completed", "completed")] * 3

    refused = sepp.Flow().add("a", sepp.JobSpec(queue, "a"), after=["nobody"])
    with pytest.raises(sepp.SeppError) as bad:
        client.enqueue_flow(refused)
    assert bad.value.code == "invalid_argument"


def test_a_flow_travels_on_the_produce_stream_and_unary_answers_alike(
        client: sepp.Client, server: ServerProcess, queue: str) -> None:
    def send(c: sepp.Client) -> tuple[int, list[str], bool, str, str]:
        before = c.stats().produce_messages
        ids = c.enqueue_flow(sepp.Flow()
                             .add("first", sepp.JobSpec(queue, "t", idempotency_key=f"{queue}-first"))
                             .add("then", sepp.JobSpec(queue, "t"), after=["first"]))
        with pytest.raises(sepp.SeppError) as bad:
            c.enqueue_flow(sepp.Flow().add("a", sepp.JobSpec(queue, "t"), after=["a"]))
        return (c.stats().produce_messages - before, sorted(ids), ids["first"].deduplicated,
                c.get_job(ids["then"].id).state, f"{type(bad.value).__name__} {bad.value.code} {bad.value}")

    streamed = send(client)
    with sepp.Client(server.address, api_key=ADMIN_KEY, transport="unary") as unary:
        called = send(unary)
    assert streamed[0] == 2 and called[0] == 0
    assert streamed[1:] == (["first", "then"], False, "waiting", streamed[4])
    # The same answers, but for `first`, the first flow's job again (its idempotency key).
    assert called[1:] == (["first", "then"], True, "waiting", streamed[4])


def test_a_batch_ends_once_with_its_completion_job(client: sepp.Client, queue: str) -> None:
    added = client.create_batch(
        on_complete=sepp.JobSpec(f"{queue}-done", "summarize", json={"day": "2026-12-05"}),
        on_success=sepp.JobSpec(f"{queue}-done", "celebrate"),
        jobs=[sepp.JobSpec(queue, "part", json={"part": p}, max_attempts=1) for p in range(2)],
        seal=True,
    )
    assert added.batch.state == "sealed" and added.batch.members == 2
    members = [r.id for r in added.results]
    assert all(r.ok for r in added.results)
    assert client.get_job(members[0] or "").batch_id == added.batch.id
    client.ack(lease_one(client, queue))
    assert client.reserve([f"{queue}-done"]) == [], "nothing before the last member ended"
    failing = lease_one(client, queue)
    client.nack(failing, error="corrupt", dead_letter=True)
    batch, listed = client.get_batch(added.batch.id)
    assert (batch.state, batch.completed, batch.dead, batch.cancelled) == ("ended", 1, 1, 0)
    assert batch.success_job_id is None, "a member died: no on_success"
    assert [m.member_state for m in listed] == ["completed", "dead"]
    done = lease_one(client, f"{queue}-done")
    assert (done.id, done.batch_id) == (batch.complete_job_id, None), "a completion job is no member"
    assert done.json() == {
        "batch": {"id": batch.id, "outcome": "complete", "completed": 1, "dead": 1, "cancelled": 0,
                  "members": members, "membersOmitted": False},
        "data": {"day": "2026-12-05"},
    }
    client.ack(done)


def test_the_first_death_enqueues_on_death_once(client: sepp.Client, queue: str) -> None:
    added = client.create_batch(
        on_death=sepp.JobSpec(f"{queue}-dead", "page", json={"team": "etl"}),
        jobs=[sepp.JobSpec(queue, "part", json={"part": p}) for p in range(3)],
        seal=True,
    )
    assert added.batch.has_on_death and added.batch.death_job_id is None
    first = lease_one(client, queue)
    client.nack(first, error="corrupt", dead_letter=True)
    client.nack(lease_one(client, queue), error="again", dead_letter=True)
    batch, _ = client.get_batch(added.batch.id)
    assert (batch.state, batch.dead, batch.pending, batch.first_dead_id) == ("sealed", 2, 1, first.id)
    dead = lease_one(client, f"{queue}-dead")
    assert dead.id == batch.death_job_id
    assert dead.json()["batch"]["firstDead"] == {"jobId": first.id, "error": "corrupt"}
    assert dead.json()["data"] == {"team": "etl"}
    assert client.reserve([f"{queue}-dead"]) == [], "one on_death"
    client.ack(dead)


def test_the_events_stream_shows_a_batch_first_death_once_by_the_batch_id(
        client: sepp.Client, queue: str) -> None:
    kinds: list[sepp.JobEventKind] = ["batch_first_death", "batch_ended"]
    with client.events(kinds=kinds) as stream:
        eventually(lambda: stream.caught_up.is_set(), "the subscription")
        added = client.create_batch(
            jobs=[sepp.JobSpec(queue, "part", json={"part": p}, max_attempts=1) for p in range(3)], seal=True)
        first = lease_one(client, queue)
        client.nack(first, error="corrupt", dead_letter=True)
        client.nack(lease_one(client, queue), error="again", dead_letter=True)
        client.ack(lease_one(client, queue))
        seen: list[sepp.JobEvent] = []
        while not any(e.kind == "batch_ended" for e in seen):
            item = stream.next_item(10)
            assert item is not None, f"no batch_ended within 10 s; seen {[e.kind for e in seen]}"
            if isinstance(item, sepp.JobEvent) and item.job_id == added.batch.id:
                seen.append(item)
    assert [e.kind for e in seen] == ["batch_first_death", "batch_ended"], "the first death once, then the end"
    death = seen[0]
    assert death.batch is not None and (death.batch.id, death.batch.first_dead_id) == (added.batch.id, first.id)
    assert (death.batch.dead, death.batch.state) == (1, "sealed")


def test_a_running_member_fans_out_into_its_sealed_batch(client: sepp.Client, queue: str) -> None:
    added = client.create_batch(on_complete=sepp.JobSpec(f"{queue}-done", "done"), jobs=[sepp.JobSpec(queue, "fan")],
                                seal=True)
    fan = lease_one(client, queue)
    assert fan.batch_id == added.batch.id, "a leased member carries its batch id"
    with pytest.raises(sepp.SeppError) as sealed:
        client.add_to_batch(added.batch.id, [sepp.JobSpec(queue, "part")])
    assert sealed.value.code == "failed_precondition"
    assert fan.lease_token is not None and fan.lease_token not in repr(fan), "a member leases with a secret token"
    # Outside a handler the SDK knows no running member: the caller passes its lease's token.
    with pytest.raises(sepp.SeppError) as unproven:
        client.add_to_batch(added.batch.id, [sepp.JobSpec(queue, "part")], from_member=fan.id)
    assert unproven.value.code == "permission_denied"
    with pytest.raises(sepp.SeppError) as forged:
        client.add_to_batch(added.batch.id, [sepp.JobSpec(queue, "part")], from_member=fan.id,
                            from_member_token="A" * 22)
    assert forged.value.code == "permission_denied"
    more = client.add_to_batch(fan.batch_id or "", [sepp.JobSpec(queue, "part")] * 2, from_member=fan.id,
                               from_member_token=fan.lease_token)
    assert more.batch.members == 3
    client.ack(fan)
    for _ in range(2):
        client.ack(lease_one(client, queue))
    batch, _ = client.get_batch(added.batch.id, members_limit=0)
    assert (batch.state, batch.completed) == ("ended", 3)
    assert client.seal_batch(batch.id).state == "ended"


class RecordsAdds(queue_service_pb2_grpc.QueueServiceServicer):
    """Another server the process also talks to: records the token and attempt each AddToBatch
    carried and refuses it, as sepp refuses an add `from_member` without a token."""

    def __init__(self) -> None:
        self.proofs: list[tuple[str, int]] = []

    def AddToBatch(self, request: Any, context: Any) -> Any:  # noqa: N802 - gRPC's method names
        self.proofs.append((request.from_member_token, request.from_member_attempt))
        context.abort(grpc.StatusCode.PERMISSION_DENIED, "from_member_token: required with from_member")


def test_a_handler_adds_through_any_client_of_its_server_and_sends_no_token_elsewhere(
    server: ServerProcess, client: sepp.Client, queue: str
) -> None:
    added = client.create_batch(jobs=[sepp.JobSpec(queue, "fan")], seal=True)
    other = RecordsAdds()
    refusals: list[sepp.SeppError] = []
    with stand_in_server(other) as other_address, sepp.Client(other_address) as elsewhere, \
            sepp.Client(server.address, api_key=PRODUCER_KEY) as producer:
        def fan(job: sepp.WorkerJob) -> None:
            assert job.batch_id is not None
            try:
                elsewhere.add_to_batch(job.batch_id, [sepp.JobSpec(queue, "part")], from_member=job.id)
            except sepp.SeppError as error:
                refusals.append(error)
            # Another key's client of the worker's own server: the SDK passes the lease's token.
            producer.add_to_batch(job.batch_id, [sepp.JobSpec(queue, "part")], from_member=job.id)

        worker = client.worker([queue], handlers={"fan": fan, "part": lambda job: None}).start()
        try:
            eventually(lambda: client.get_batch(added.batch.id, members_limit=0)[0].state == "ended",
                       "the batch to end")
        finally:
            worker.close()
    assert other.proofs == [("", 0)], "the other server was sent neither token nor attempt"
    [refused] = refusals
    assert refused.code == "permission_denied"
    assert re.match(
        rf"from_member: member \S+ is not running on this client's server \(sepp at {re.escape(other_address)}"
        rf" \(plaintext\)\): its handler runs in this process on a worker of sepp at {re.escape(server.address)}"
        r" \(plaintext\).*The server answered: from_member_token: required", refused.message)
    batch, _ = client.get_batch(added.batch.id, members_limit=0)
    assert (batch.members, batch.completed) == (2, 2)
    # Outside any handler the SDK has no token for it: it says so.
    with pytest.raises(sepp.SeppError, match="no handler of it runs in this process, so the SDK has no lease token"):
        client.add_to_batch(added.batch.id, [sepp.JobSpec(queue, "part")], from_member=added.results[0].id)


def test_a_flow_and_a_batch_are_cancelled_as_one_act(client: sepp.Client, queue: str) -> None:
    ids = client.enqueue_flow(
        sepp.Flow().add("a", sepp.JobSpec(queue, "a")).add("b", sepp.JobSpec(queue, "b"), after=["a"])
    )
    assert client.cancel_flow(ids["b"].id) == sepp.WorkflowCancelled(2, 0)
    assert client.get_job(ids["a"].id).state == "cancelled"
    added = client.create_batch(jobs=[sepp.JobSpec(queue, "m")], seal=True)
    assert client.cancel_batch(added.batch.id) == sepp.WorkflowCancelled(1, 0)
    batch, _ = client.get_batch(added.batch.id)
    assert (batch.state, batch.cancelled) == ("ended", 1)
    with pytest.raises(sepp.SeppError) as missing:
        client.get_batch("01900000-0000-7000-8000-000000000000")
    assert missing.value.code == "not_found"


def test_batches_are_listed_newest_first_and_a_producer_sees_its_own(
    client: sepp.Client, server: ServerProcess, queue: str
) -> None:
    with sepp.Client(server.address, api_key=PRODUCER_KEY) as producer:
        older = producer.create_batch(jobs=[sepp.JobSpec(queue, "part")], seal=True).batch
        newer = producer.create_batch().batch
        own = producer.list_batches()
        assert {b.owner for b in own.batches} == {"producer"}
        assert [b.id for b in own.batches][:2] == [newer.id, older.id]
        sealed = producer.list_batches(state="sealed")
        assert older.id in [b.id for b in sealed.batches] and newer.id not in [b.id for b in sealed.batches]
        with pytest.raises(sepp.SeppError) as refused:
            producer.list_batches(owner="admin")
        assert refused.value.code == "permission_denied"
    first = client.list_batches(owner="producer", page_size=1)
    assert [b.id for b in first.batches] == [newer.id] and first.next_page_token is not None
    second = client.list_batches(owner="producer", page_size=1, page_token=first.next_page_token)
    assert [b.id for b in second.batches] == [older.id]
    with pytest.raises(ValueError):
        client.list_batches(state="done")  # type: ignore[arg-type]
    assert client.get_server_info().limits.batch_retention_ms == 7 * 86_400_000


def test_a_dependency_policy_without_dependencies_is_refused_before_sending(client: sepp.Client, queue: str) -> None:
    with pytest.raises(sepp.SeppError) as raised:
        client.enqueue(queue, "t", on_dependency_failure="run")
    assert raised.value.code == "invalid_argument"
    assert "on_dependency_failure" in str(raised.value) and "depends_on" in str(raised.value)
    with pytest.raises(sepp.SeppError) as in_flow:
        client.enqueue_flow(sepp.Flow().add("a", sepp.JobSpec(queue, "a", on_dependency_failure="wait")))
    assert in_flow.value.code == "invalid_argument"
    assert client.reserve([queue]) == [], "nothing was sent"
    # In a flow, `after` is what the policy is about.
    ids = client.enqueue_flow(sepp.Flow().add("a", sepp.JobSpec(queue, "a"))
                              .add("b", sepp.JobSpec(queue, "b", on_dependency_failure="run"), after=["a"]))
    assert client.get_job(ids["b"].id).state == "waiting"


def test_the_python_example_of_workflows_md_runs_and_prints_what_the_page_shows(client: sepp.Client) -> None:
    """docs/workflows.md's Python example (a member fanning out into its own batch with
    `job.batch_id`), run as a user would with a connected `client`."""
    page = (pathlib.Path(__file__).resolve().parents[3] / "docs" / "workflows.md").read_text()
    examples = re.findall(r"```python\n(.*?)```\n\nIt prints:\n\n```text\n(.*?)```", page, re.DOTALL)
    assert len(examples) == 1, "the page has one Python example, followed by its output"
    code, output = examples[0]
    printed: list[str] = []
    exec(code, {"client": client, "print": lambda line: printed.append(str(line))})
    assert "\n".join(printed) == output.rstrip("\n")


def test_an_add_from_a_running_member_sends_its_attempt_too_for_an_older_server() -> None:
    # A server older than lease tokens (schema 30) reads from_member_attempt and refuses an add
    # without it; this version's reads the token alone. Sending both lets workers be upgraded
    # before their servers (docs/upgrading.md, "To schema 31"). No server here: what is sent.
    from sepp import workflows
    from sepp._running_members import RunningLease, member_done, member_runs
    from sepp.v1 import batch_pb2

    sent: list[batch_pb2.AddToBatchRequest] = []

    class OlderServer:
        stub = type("Stub", (), {"AddToBatch": "AddToBatch"})()
        retry = None  # The client's retries off: one call per add.

        def __init__(self, target: str) -> None:
            self.target = target

        def invoke(self, method: str, request: batch_pb2.AddToBatchRequest, **_: object) -> object:
            sent.append(request)
            return batch_pb2.AddToBatchResponse(batch=batch_pb2.Batch(id="b", state=batch_pb2.BATCH_STATE_SEALED))

    # A member leased from such a server has no token; one from a server of this version has one.
    leases = {"member-1": RunningLease("", 3), "member-2": RunningLease("token-of-attempt-4", 4)}
    leased_from, elsewhere = "127.0.0.1:1 (plaintext)", "127.0.0.1:2 (plaintext)"
    for job_id, lease in leases.items():
        member_runs(leased_from, job_id, lease)
    try:
        # Then a token the caller gives that is not the running lease's, whose attempt is unknown; last,
        # through a client of another target (an older server of another deployment): neither goes there.
        for target, job_id, token in [(leased_from, "member-1", None), (leased_from, "member-2", None),
                                      (leased_from, "member-2", "another"), (elsewhere, "member-1", None),
                                      (elsewhere, "member-2", None)]:
            workflows.add_to_batch(OlderServer(target), "b",  # type: ignore[arg-type]
                                   [sepp.JobSpec("q", "part")], False, job_id, token, None)
    finally:
        for job_id, lease in leases.items():
            member_done(leased_from, job_id, lease)
    assert [(r.from_member, r.from_member_token, r.from_member_attempt) for r in sent] == [
        ("member-1", "", 3), ("member-2", "token-of-attempt-4", 4), ("member-2", "another", 0),
        ("member-1", "", 0), ("member-2", "", 0)]
