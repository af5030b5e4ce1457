"""Workflows (docs/workflows.md): flows — jobs that name each other and wait for each other,
enqueued in one call, all or none — and batches — a set of jobs with completion jobs the
server enqueues exactly once, when the sealed batch's last member ended. Client holds them
as `client.enqueue_flow`, `client.create_batch` and the rest; this module has their shapes.

    flow = sepp.Flow()
    flow.add("extract", sepp.JobSpec("etl", "extract", json={"day": day}))
    flow.add("load", sepp.JobSpec("etl", "load"), after=["extract"])
    ids = client.enqueue_flow(flow)          # {"extract": Enqueued(...), "load": Enqueued(...)}
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal, Sequence

import grpc

from ._batch_retries import BatchAnswer, send_batch_members
from ._connection import later_retry_delay_s
from ._convert import approx_encoded_bytes, job_from_spec, outcome_from_proto, rejection_from_proto, utf8_bytes
from ._enqueue import OLDER_SERVER_REFUSAL, EnqueueBatcher, answer_of
from ._running_members import RunningLease, running_lease, running_targets
from .errors import SeppError, from_status, over_call_bound, rejected, rejections_retry
from .jobs import EdgeState, edge_state_name, job_state_name
from .models import Enqueued, EnqueueOutcome, JobSpec, JobState
from .v1 import batch_pb2, flow_pb2, job_pb2

if TYPE_CHECKING:
    from ._connection import Connection


@dataclass
class Flow:
    """A flow's jobs by name, in the order added (`client.enqueue_flow`)."""

    jobs: list[tuple[str, JobSpec, Sequence[str]]] = field(default_factory=list)

    def add(self, name: str, job: JobSpec, *, after: Sequence[str] = ()) -> Flow:
        """Adds `job` named `name` (unique in the flow; the rules of a queue name), to run after
        the jobs of this flow named in `after`; returns the flow, so calls chain."""
        self.jobs.append((name, job, tuple(after)))
        return self


BatchState = Literal["open", "sealed", "ended"]
MemberState = Literal["pending", "completed", "dead", "cancelled"]

_BATCH_STATES: dict[int, BatchState] = {
    batch_pb2.BATCH_STATE_OPEN: "open",
    batch_pb2.BATCH_STATE_SEALED: "sealed",
    batch_pb2.BATCH_STATE_ENDED: "ended",
}
_MEMBER_STATES: dict[int, MemberState] = {
    batch_pb2.BATCH_MEMBER_STATE_PENDING: "pending",
    batch_pb2.BATCH_MEMBER_STATE_COMPLETED: "completed",
    batch_pb2.BATCH_MEMBER_STATE_DEAD: "dead",
    batch_pb2.BATCH_MEMBER_STATE_CANCELLED: "cancelled",
}


@dataclass(frozen=True)
class Batch:
    """A batch's state and counts (`client.get_batch`)."""

    id: str
    state: BatchState
    """`open` (jobs may be added), `sealed` (it ends when its last member ends), `ended`."""
    created_at_ms: int
    sealed_at_ms: int | None
    ended_at_ms: int | None
    members: int
    """Jobs ever added."""
    pending: int
    """Members not ended yet."""
    completed: int
    dead: int
    cancelled: int
    has_on_complete: bool
    has_on_success: bool
    complete_job_id: str | None
    """The on_complete job the end enqueued."""
    success_job_id: str | None
    """The on_success job the end enqueued (only if every member completed)."""
    completion_error: str | None
    """Why a completion job could not be enqueued (its queue refused it), or None."""
    owner: str = ""
    """The name of the API key that created it (`anonymous` on a server without keys)."""
    has_on_death: bool = False
    first_dead_id: str | None = None
    """The member whose death was counted first (None while none died)."""
    death_job_id: str | None = None
    """The on_death job the first death enqueued."""

    @staticmethod
    def from_proto(b: batch_pb2.Batch) -> Batch:
        """Wraps a protocol message."""
        state = _BATCH_STATES.get(b.state)
        if state is None:
            raise ValueError(f"the server sent an unknown batch state {b.state}")
        return Batch(
            id=b.id,
            state=state,
            created_at_ms=b.created_at_ms,
            sealed_at_ms=b.sealed_at_ms or None,
            ended_at_ms=b.ended_at_ms or None,
            members=b.members,
            pending=b.pending,
            completed=b.completed,
            dead=b.dead,
            cancelled=b.cancelled,
            has_on_complete=b.has_on_complete,
            has_on_success=b.has_on_success,
            complete_job_id=b.complete_job_id or None,
            success_job_id=b.success_job_id or None,
            completion_error=b.completion_error or None,
            owner=b.owner,
            has_on_death=b.has_on_death,
            first_dead_id=b.first_dead_id or None,
            death_job_id=b.death_job_id or None,
        )


@dataclass(frozen=True)
class BatchPage:
    """One page of batches, newest first (`client.list_batches`)."""

    batches: Sequence[Batch]
    next_page_token: str | None
    """Pass as `page_token` for the next page; None on the last page."""


@dataclass(frozen=True)
class BatchMember:
    """A member of a batch: how it ended (`pending` until then; it counts once) and its job's state now."""

    job_id: str
    position: int
    member_state: MemberState
    job_state: JobState | None
    """None once the job was swept."""


@dataclass(frozen=True)
class BatchAdded:
    """What creating or adding to a batch answered: the batch after it and one outcome per job."""

    batch: Batch
    results: Sequence[EnqueueOutcome]


@dataclass(frozen=True)
class WorkflowCancelled:
    """What cancelling a flow or a batch did."""

    cancelled: int
    """Waiting, scheduled and ready jobs cancelled at once."""
    cancel_requested: int
    """Leased jobs whose workers were asked to stop (they end cancelled)."""


@dataclass(frozen=True)
class FlowNode:
    """A job of a flow."""

    id: str
    queue: str
    type: str
    state: JobState
    name: str | None = None
    """Its name in the flow that stored it; None for a job no flow named (or from a server that
    does not say)."""


@dataclass(frozen=True)
class FlowEdge:
    """An edge of a flow: `job_id` waits on `depends_on`."""

    job_id: str
    depends_on: str
    state: EdgeState
    name: str | None
    """The depended-on job's name in the flow; None when named by id."""


@dataclass(frozen=True)
class FlowGraph:
    """Every job connected to one through dependencies, either way, in enqueue order."""

    jobs: Sequence[FlowNode]
    edges: Sequence[FlowEdge]
    truncated: bool
    """More jobs than the limit (or the answer's 4 MiB) holds, or may be: `edges_limited`."""
    edges_limited: bool = False
    """The server's walk read as many edges as one read may (100,000) and stopped: a flow that
    dense is shown in part, whatever the limit asks."""


def enqueue_flow(conn: Connection, batcher: EnqueueBatcher, flow: Flow, deadline_ms: int | None) -> dict[str, Enqueued]:
    """On the client's Produce stream, in one message with the other flows pending with it
    (batcher.submit_flow), else the unary EnqueueFlow; the same answer and errors either way. A
    flow refused for full queues alone (`queue_full`, which stored nothing) is sent again after a
    backoff while the client's `retry` is set, until the queues have room, the tries run out or
    its deadline nears."""
    request = flow_pb2.EnqueueFlowRequest(
        jobs=[flow_pb2.FlowJob(name=name, job=job_from_spec(spec, after), after=list(after))
              for name, spec, after in flow.jobs]
    )
    size = sum(approx_encoded_bytes(j.job) + utf8_bytes(j.name) + 8 + sum(utf8_bytes(n) + 4 for n in j.after)
               for j in request.jobs)
    deadline_at = time.monotonic() + conn.timeout_s(deadline_ms)
    retries = 0
    while True:
        try:
            answer = _send_flow(conn, batcher, request, size, max(0.0, deadline_at - time.monotonic()) * 1000)
        except SeppError as error:
            if not over_call_bound(error):
                raise
            raise _over_flow_bound(error, len(request.jobs), size) from error
        if answer.committed:
            return {j.name: Enqueued(j.job_id, j.deduplicated) for j in answer.jobs}
        rejections = [rejection_from_proto(r.index, r.reason, r.message) for r in answer.rejections]
        if not rejections:
            raise SeppError(grpc.StatusCode.INTERNAL, "the server refused the flow without saying why")
        # Refused for full queues alone ("later"), the flow stored nothing: sent again, as an
        # atomic batch is, while retries are on and tries and the deadline are left.
        delay_s = (later_retry_delay_s(conn.retry, retries, deadline_at)
                   if rejections_retry(rejections) == "later" and not conn.closed else None)
        if delay_s is None:
            raise rejected(rejections)
        time.sleep(delay_s)
        retries += 1


def _over_flow_bound(error: SeppError, jobs: int, size: int) -> SeppError:
    """A flow refused as over a bound of the call (`limits.max_flow_jobs`, `grpc.max_message_bytes`,
    which a reload or a restart may have lowered): unlike a batch, the SDK cannot cut it and send it
    again, so the error says so, with the flow's size, before the server's words (which name the
    limit)."""
    return from_status(error.grpc_code,
                       f"the flow ({jobs} jobs, about {size} bytes) is one all-or-nothing request, which the SDK "
                       f"cannot cut: split it into smaller flows. {error.message}", code=error.code, retry=error.retry)


def _send_flow(conn: Connection, batcher: EnqueueBatcher, request: flow_pb2.EnqueueFlowRequest, size: int,
               deadline_ms: float) -> flow_pb2.EnqueueFlowResponse:
    """One try of a flow: on the Produce stream, else (or on a server older than flows on
    Produce) the unary EnqueueFlow."""
    future = None if batcher.flows_unary else batcher.submit_flow(request, size, deadline_ms)
    if future is not None:
        try:
            streamed = answer_of(future, conn.timeout_s(deadline_ms))[0].flow
            if streamed is not None:
                return streamed
        except SeppError as error:
            # A server older than flows on Produce skips the field and refuses the message as an
            # empty batch, storing nothing: this flow and the later ones take the unary call.
            if error.grpc_code != grpc.StatusCode.INVALID_ARGUMENT or error.message != OLDER_SERVER_REFUSAL:
                raise
            batcher.flows_unary = True
    answer: flow_pb2.EnqueueFlowResponse = conn.invoke(conn.stub.EnqueueFlow, request, deadline_ms=deadline_ms,
                                                       retry_safe=False)
    return answer


def _added(batch: batch_pb2.Batch, results: Sequence[job_pb2.EnqueueResult]) -> BatchAdded:
    return BatchAdded(Batch.from_proto(batch), tuple(outcome_from_proto(r) for r in results))


def create_batch(conn: Connection, on_complete: JobSpec | None, on_success: JobSpec | None,
                 on_death: JobSpec | None, jobs: Sequence[JobSpec], seal: bool,
                 deadline_ms: int | None) -> BatchAdded:
    """CreateBatch, with retries as _batch_retries.py says."""

    def first(members: list[job_pb2.EnqueueJob], sealed: bool, _repeatable: bool,
              seal_if_all_stored: bool) -> BatchAnswer:
        request = batch_pb2.CreateBatchRequest(jobs=members, seal=sealed, seal_if_all_stored=seal_if_all_stored)
        if on_complete is not None:
            request.on_complete.CopyFrom(job_from_spec(on_complete))
        if on_success is not None:
            request.on_success.CopyFrom(job_from_spec(on_success))
        if on_death is not None:
            request.on_death.CopyFrom(job_from_spec(on_death))
        answer: BatchAnswer = conn.invoke(conn.stub.CreateBatch, request, deadline_ms=deadline_ms, retry_safe=False)
        return answer

    def again(batch_id: str, members: list[job_pb2.EnqueueJob]) -> BatchAnswer:
        return _add_to_batch_call(conn, batch_id, members, False, None, None, deadline_ms, True, False)

    batch, results = send_batch_members(conn, first, again, [job_from_spec(j) for j in jobs], seal=seal,
                                        create=True, deadline_ms=deadline_ms)
    return _added(batch, results)


def add_to_batch(conn: Connection, batch_id: str, jobs: Sequence[JobSpec], seal: bool, from_member: str | None,
                 from_member_token: str | None, deadline_ms: int | None) -> BatchAdded:
    """AddToBatch, with retries as _batch_retries.py says."""

    def first(members: list[job_pb2.EnqueueJob], sealed: bool, repeatable: bool,
              seal_if_all_stored: bool) -> BatchAnswer:
        return _add_to_batch_call(conn, batch_id, members, sealed, from_member, from_member_token, deadline_ms,
                                  repeatable, seal_if_all_stored)

    def again(_: str, members: list[job_pb2.EnqueueJob]) -> BatchAnswer:
        return _add_to_batch_call(conn, batch_id, members, False, from_member, from_member_token, deadline_ms, True,
                                  False)

    batch, results = send_batch_members(conn, first, again, [job_from_spec(j) for j in jobs], seal=seal,
                                        create=False, deadline_ms=deadline_ms)
    return _added(batch, results)


def _add_to_batch_call(conn: Connection, batch_id: str, jobs: list[job_pb2.EnqueueJob], seal: bool,
                       from_member: str | None, from_member_token: str | None, deadline_ms: int | None,
                       repeatable: bool, seal_if_all_stored: bool) -> BatchAnswer:
    """One AddToBatch call; `repeatable`: safe to repeat after UNAVAILABLE (every member keyed);
    `seal_if_all_stored`: seal only if no member is refused (_batch_retries.py)."""
    token = ""
    attempt = 0
    lease: RunningLease | None = None
    if from_member:
        # A handler of the member running in this process proves it with its lease's token, sent only
        # to the target its worker leased it from (_running_members), never to another server.
        lease = running_lease(conn.target, from_member)
        token = from_member_token or (lease.token if lease is not None else "")
        # The lease's attempt too, which only a server older than lease tokens reads (_running_members).
        attempt = lease.attempt if lease is not None and lease.token == token else 0
    request = batch_pb2.AddToBatchRequest(batch_id=batch_id, jobs=jobs, seal=seal,
                                          seal_if_all_stored=seal_if_all_stored,
                                          from_member=from_member or "", from_member_attempt=attempt,
                                          from_member_token=token)
    try:
        answer: BatchAnswer = conn.invoke(conn.stub.AddToBatch, request, deadline_ms=deadline_ms,
                                          retry_safe=repeatable)
        return answer
    except SeppError as error:
        # This client had nothing to prove the member with (neither token nor attempt): say why.
        if from_member and not from_member_token and lease is None and error.code == "permission_denied":
            raise _not_running_here(conn.target, from_member, error) from error
        raise


def _not_running_here(target: str, job_id: str, refused: SeppError) -> SeppError:
    """The server refused an add `from_member` for which this client had no running lease to send (neither token
    nor attempt): says why — the member's handler runs here on a worker of another server, or not in this process."""
    elsewhere = running_targets(job_id)
    if elsewhere:
        why = (f"its handler runs in this process on a worker of sepp at {', '.join(elsewhere)}, and its lease's"
               " token and attempt go only to the server that leased it: add through a client of that server")
    else:
        why = ("no handler of it runs in this process, so the SDK has no lease token to send"
               " (from_member_token=job.lease_token gives it)")
    return from_status(refused.grpc_code,
                       f"from_member: member {job_id} is not running on this client's server (sepp at {target}):"
                       f" {why}. The server answered: {refused.message}", code=refused.code, retry=refused.retry)


def seal_batch(conn: Connection, batch_id: str, deadline_ms: int | None) -> Batch:
    answer = conn.invoke(conn.stub.SealBatch, batch_pb2.SealBatchRequest(batch_id=batch_id),
                         deadline_ms=deadline_ms, retry_safe=True)
    return Batch.from_proto(answer.batch)


def get_batch(conn: Connection, batch_id: str, members_after: int | None, members_limit: int,
              deadline_ms: int | None) -> tuple[Batch, list[BatchMember]]:
    request = batch_pb2.GetBatchRequest(batch_id=batch_id, members_after=members_after or 0,
                                        members_after_set=members_after is not None, members_limit=members_limit)
    answer = conn.invoke(conn.stub.GetBatch, request, deadline_ms=deadline_ms, retry_safe=True)
    members = [
        BatchMember(
            job_id=m.job_id,
            position=m.position,
            member_state=_MEMBER_STATES.get(m.member_state, "pending"),
            job_state=None if m.job_state == job_pb2.JOB_STATE_UNSPECIFIED else job_state_name(m.job_state),
        )
        for m in answer.members
    ]
    return Batch.from_proto(answer.batch), members


_BATCH_STATE_NUMBERS: dict[str, batch_pb2.BatchState] = {
    "open": batch_pb2.BATCH_STATE_OPEN,
    "sealed": batch_pb2.BATCH_STATE_SEALED,
    "ended": batch_pb2.BATCH_STATE_ENDED,
}


def list_batches(conn: Connection, state: BatchState | None, owner: str | None, page_size: int | None,
                 page_token: str | None, deadline_ms: int | None) -> BatchPage:
    if state is not None and state not in _BATCH_STATE_NUMBERS:
        raise ValueError(f"state: {state!r} is no batch state; use open, sealed or ended")
    request = batch_pb2.ListBatchesRequest(
        state=batch_pb2.BATCH_STATE_UNSPECIFIED if state is None else _BATCH_STATE_NUMBERS[state],
        owner=owner or "", owner_set=owner is not None, page_size=page_size or 0, page_token=page_token or "")
    answer = conn.invoke(conn.stub.ListBatches, request, deadline_ms=deadline_ms, retry_safe=True)
    return BatchPage(tuple(Batch.from_proto(b) for b in answer.batches), answer.next_page_token or None)


def cancel_batch(conn: Connection, batch_id: str, deadline_ms: int | None) -> WorkflowCancelled:
    answer = conn.invoke(conn.stub.CancelBatch, batch_pb2.CancelBatchRequest(batch_id=batch_id),
                         deadline_ms=deadline_ms, retry_safe=True)
    return WorkflowCancelled(answer.cancelled, answer.cancel_requested)


def get_flow(conn: Connection, job_id: str, limit: int, deadline_ms: int | None) -> FlowGraph:
    answer = conn.invoke(conn.stub.GetFlow, flow_pb2.GetFlowRequest(job_id=job_id, limit=limit),
                         deadline_ms=deadline_ms, retry_safe=True)
    return FlowGraph(
        jobs=tuple(FlowNode(j.job_id, j.queue, j.type, job_state_name(j.state), j.name or None) for j in answer.jobs),
        edges=tuple(FlowEdge(e.job_id, e.depends_on, edge_state_name(e.state), e.name or None) for e in answer.edges),
        truncated=answer.truncated,
        edges_limited=answer.edges_limited,
    )


def cancel_flow(conn: Connection, job_id: str, deadline_ms: int | None) -> WorkflowCancelled:
    answer = conn.invoke(conn.stub.CancelFlow, flow_pb2.CancelFlowRequest(job_id=job_id),
                         deadline_ms=deadline_ms, retry_safe=True)
    return WorkflowCancelled(answer.cancelled, answer.cancel_requested)
