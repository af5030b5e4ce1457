"""Client: every RPC of sepp.v1.QueueService as a blocking method with friendly
types. Enqueues from all threads are coalesced and go over one Produce stream
(see _enqueue.py); everything else is a unary call with a deadline. A Client
is thread-safe: create one per process and share it."""
from __future__ import annotations

import os
import threading
from concurrent.futures import Future
from typing import TYPE_CHECKING, Any, Iterable, Iterator, Literal, Mapping, Sequence, overload

import grpc

from ._arguments import checked_arguments
from ._connection import Connection, RetryOptions, TlsOptions, Transport
from ._convert import (
    job_from_spec,
    nack_request,
    outcome_from_proto,
    rejection_from_proto,
)
from ._enqueue import Answer, EnqueueBatcher, answer_of, enqueued_of
from ._convert import reload_report_from_proto, server_info_from_proto, worker_info_from_proto
from ._job_control import AuditEntry, AuditLog, AuditPage, BulkResult, CancelJobsResult, CancelResult, Jobs
from ._queue_admin import DeadLetters, Queues, Selection, read_call
from ._repeated_settlement import ack_applied, ack_call, nack_call
from ._wait import JobOutcome, enqueue_then_wait, wait_for_job
from .errors import JobRejection, SeppError, rejected
from .events import EventPosition, EventStream, JobEventKind
from .jobs import DeadLetterPage, Job, LeasedJob, job_state_name
from .schedules import Schedules
from . import workflows as _workflows
from .workflows import Batch, BatchAdded, BatchMember, BatchPage, BatchState, Flow, FlowGraph, WorkflowCancelled
from .models import (
    UNSET,
    AckResult,
    ClientStats,
    DeadReason,
    DependencyPolicy,
    Enqueued,
    EnqueueOutcome,
    JobSpec,
    JobState,
    LeaseRef,
    NackResult,
    Payload,
    QueueInfo,
    ReloadReport,
    ServerInfo,
    TimeInput,
    WorkerInfo,
    WorkerPage,
)
from .results import JobProgress, encode_result, progress_fields, progress_from_proto
from .v1 import admin_pb2, work_pb2, workers_pb2

if TYPE_CHECKING:
    from .worker import Worker

DEFAULT_ADDRESS = "127.0.0.1:50051"
"""Where a Client goes without an address or SEPP_SERVER: the server's default."""

LONG_POLL_MARGIN_MS = 5000
"""Extra time a long poll's deadline allows beyond its wait, in ms."""

ANY_ANSWER_BYTES = 256 * 1024 * 1024
"""What a reserve says this client can take: it reads answers of any size (_connection.py), so the
most a server may send (max_message_bytes is at most 256 MiB); the server leases no more than fit."""

_SETTLE_OUTCOMES: dict[int, Literal["ok", "not_found", "lease_lost", "cancelled"]] = {
    work_pb2.SETTLE_OUTCOME_OK: "ok",
    work_pb2.SETTLE_OUTCOME_LEASE_LOST: "lease_lost",
    work_pb2.SETTLE_OUTCOME_CANCELLED: "cancelled",
}


@checked_arguments
class Client:
    """A connection to a sepp server. Enqueueing, leasing, settling and waiting are its
    methods; the rest is grouped by what it acts on: `client.jobs`, `client.queues`,
    `client.dlq`, `client.audit` and `client.schedules`. The flat methods of earlier
    versions (`client.pause_queue(...)`, ...) stay as aliases of those.

    `address` is `host:port` (default: the environment variable SEPP_SERVER, else
    127.0.0.1:50051); `api_key` defaults to SEPP_API_KEY when that is set. The connection is made lazily by the first call
    (`ready()` waits for it). While a call is open (a Worker's Work stream or long poll), the
    client pings the server `keepalive_ms` after the last ping was answered; one unanswered for
    `keepalive_timeout_ms` fails the connection's calls with UNAVAILABLE, so a connection gone
    silent (a NAT or load balancer that dropped it) is noticed and a Worker reconnects. Use it as a context manager, or call `close()`
    on shutdown: it closes the client's Workers, sends what is still queued
    and waits for the answers.
    """

    def __init__(
        self,
        address: str | None = None,
        *,
        api_key: str | None = None,
        tls: bool | TlsOptions = False,
        default_deadline_ms: int = 10_000,
        retry: RetryOptions | None = None,
        transport: Transport = "stream",
        max_batch_jobs: int = 1000,
        max_message_bytes: int = 4 * 1024 * 1024,
        stream_idle_ms: int = 1000,
        keepalive_ms: int = 30_000,
        keepalive_timeout_ms: int = 20_000,
    ) -> None:
        # What `sepp admin new-api-key` tells users: the client reads SEPP_SERVER and SEPP_API_KEY.
        address = address or os.environ.get("SEPP_SERVER") or DEFAULT_ADDRESS
        if api_key is None:
            api_key = os.environ.get("SEPP_API_KEY") or None
        self._conn = Connection(
            address, api_key=api_key, tls=tls, default_deadline_ms=default_deadline_ms, retry=retry,
            transport=transport, max_batch_jobs=max_batch_jobs, max_message_bytes=max_message_bytes,
            keepalive_ms=keepalive_ms, keepalive_timeout_ms=keepalive_timeout_ms,
        )
        self._stats = ClientStats()
        self._batcher = EnqueueBatcher(self._conn, self._stats, stream_idle_ms)
        self._workers: set[Worker] = set()
        self._lock = threading.Lock()
        self.jobs = Jobs(self._conn)
        """Jobs already enqueued: read one (`get`), cancel or change one or every match (admin key)."""
        self.queues = Queues(self._conn)
        """Queues: list with counts, pause, resume, purge, delete, run-time settings."""
        self.dlq = DeadLetters(self._conn)
        """Dead letters: page through, requeue, delete (named as `sepp dlq`)."""
        self.audit = AuditLog(self._conn)
        """The audit log (admin key): who changed what, newest first."""
        self.schedules = Schedules(self._conn)
        """Schedules: periodic jobs the server enqueues itself (create, list, pause, trigger...)."""
        # The two bulk aliases are the grouped calls themselves, so they take every filter argument
        # those take, now and as the filter grows, without a second list of parameters to keep in step.
        self.cancel_jobs = self.jobs.cancel_matching
        """Same as `client.jobs.cancel_matching(queue, ...)`."""
        self.update_jobs = self.jobs.update_matching
        """Same as `client.jobs.update_matching(queue, ...)`."""

    @property
    def address(self) -> str:
        """The server address this client talks to."""
        return self._conn.address

    @property
    def connection(self) -> Connection:
        """The connection (channel, stub, options); Workers use it to open Work streams."""
        return self._conn

    def stats(self) -> ClientStats:
        """Counters of the enqueue path (coalescing), for tuning and tests."""
        return ClientStats(self._stats.enqueued_jobs, self._stats.batches, self._stats.produce_messages)

    def ready(self, timeout_ms: int | None = None) -> None:
        """Waits until the connection is up; raises UnavailableError after `timeout_ms`
        (default: the default deadline)."""
        self._conn.wait_ready(timeout_ms)

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ------------------------------------------------------------------ enqueue

    def enqueue(
        self,
        queue: str,
        type: str,
        payload: Payload | None = None,
        *,
        json: Any = UNSET,
        content_type: str | None = None,
        priority: int = 0,
        run_at: TimeInput | None = None,
        delay_ms: int | None = None,
        max_attempts: int | None = None,
        idempotency_key: str | None = None,
        metadata: Mapping[str, str] | None = None,
        traceparent: str | None = None,
        tracestate: str | None = None,
        ttl_ms: int | None = None,
        expires_at: TimeInput | None = None,
        unique_while_active: bool = False,
        group: str | None = None,
        depends_on: Sequence[str] | None = None,
        on_dependency_failure: DependencyPolicy | None = None,
        deadline_ms: int | None = None,
        execution_timeout_ms: int | None = None,
        debounce_key: str | None = None,
        debounce_ms: int | None = None,
        debounce_max_ms: int | None = None,
    ) -> Enqueued:
        """Enqueues one job and returns once it is durable. `payload` is bytes or text; `json=`
        sends a value as JSON instead. Raises JobRejectedError (QueueFullError for a full queue)
        when the server refuses the job. Enqueues made from several threads at once travel
        together in one message. `ttl_ms` / `expires_at`, `unique_while_active`, `execution_timeout_ms`,
        `depends_on`, `on_dependency_failure` and `debounce_key` / `debounce_ms` / `debounce_max_ms`:
        see JobSpec."""
        spec = JobSpec(queue, type, payload, json, content_type, priority, run_at, delay_ms, max_attempts,
                       idempotency_key, metadata, traceparent, tracestate, ttl_ms, expires_at, unique_while_active,
                       group, execution_timeout_ms, depends_on, on_dependency_failure, debounce_key, debounce_ms,
                       debounce_max_ms)
        return enqueued_of(self._batcher.submit([job_from_spec(spec)], False, deadline_ms),
                         self._conn.timeout_s(deadline_ms))

    def enqueue_future(self, job: JobSpec, *, deadline_ms: int | None = None) -> Future[Enqueued]:
        """`enqueue` without waiting: returns a concurrent.futures.Future of the Enqueued (or the
        error) at once. Everything enqueued before the next batch leaves goes in it, so one
        thread can enqueue many jobs at the cost of a few messages:
        `client.enqueue_future(sepp.JobSpec("emails", "send", json={...}))`. From asyncio:
        `await asyncio.wrap_future(client.enqueue_future(...))`."""
        inner = self._batcher.submit([job_from_spec(job)], False, deadline_ms)
        outer: Future[Enqueued] = Future()
        outer.set_running_or_notify_cancel()

        def settle(done: Future[tuple[Answer, int]]) -> None:
            try:
                outer.set_result(enqueued_of(done, 0))
            except SeppError as error:
                outer.set_exception(error)

        inner.add_done_callback(settle)
        return outer

    def enqueue_batch(self, jobs: Iterable[JobSpec], *, deadline_ms: int | None = None) -> list[EnqueueOutcome]:
        """Enqueues many jobs, best effort: one outcome per job, in order; a refused job does not
        stop the others. Batches above the server's `max_batch_jobs` or message size
        (`grpc.max_message_bytes`, counted in UTF-8 bytes) go as several messages. With `retry`,
        jobs refused `queue_full` are sent again until the queue has room (their outcome is the
        last try's)."""
        protos = [job_from_spec(spec) for spec in jobs]
        # Split by the smaller of max_batch_jobs and the server's own bounds, once it has said them.
        self._conn.learn_server_bounds()
        chunks = self._batcher.split(protos)
        futures = [(chunk, self._batcher.submit(chunk, False, deadline_ms)) for chunk in chunks]
        outcomes: list[EnqueueOutcome] = []
        for chunk, future in futures:
            answer, offset = answer_of(future, self._conn.timeout_s(deadline_ms))
            outcomes.extend(outcome_from_proto(answer.results[offset + i]) for i in range(len(chunk)))
        return outcomes

    def enqueue_atomic(self, jobs: Iterable[JobSpec], *, deadline_ms: int | None = None) -> list[Enqueued]:
        """Enqueues every job or none (at most `max_batch_jobs`). Returns each job's id in order;
        raises JobRejectedError listing every refused job, by index, when nothing was stored."""
        protos = [job_from_spec(spec) for spec in jobs]
        answer, _ = answer_of(self._batcher.submit(protos, True, deadline_ms), self._conn.timeout_s(deadline_ms))
        atomic = answer.atomic
        if atomic is None:
            raise SeppError(grpc.StatusCode.INTERNAL, "the server sent no atomic outcome")
        if atomic.committed:
            return [Enqueued(r.job_id, r.deduplicated) for r in atomic.results]
        rejections = [rejection_from_proto(r.index, r.reason, r.message) for r in atomic.rejections]
        if not rejections:
            raise SeppError(grpc.StatusCode.INTERNAL, "the server refused the batch without saying why")
        raise rejected(rejections)

    # ------------------------------------------------------------------ leases

    def reserve(
        self,
        queues: Sequence[str],
        *,
        max_jobs: int = 1,
        lease_ms: int | None = None,
        wait_ms: int = 0,
        worker_id: str | None = None,
        deadline_ms: int | None = None,
    ) -> list[LeasedJob]:
        """Leases up to `max_jobs` jobs from `queues` (in order of preference), waiting up to
        `wait_ms` for one (a long poll; the call's deadline is the wait plus a margin). Returns
        an empty list when the wait times out. Most applications use a Worker instead."""
        if isinstance(queues, str):
            raise TypeError("queues: give a list of queue names")
        request = work_pb2.ReserveRequest(
            queues=list(queues), max_jobs=max_jobs, lease_duration_ms=lease_ms or 0, wait_timeout_ms=wait_ms,
            worker_id=worker_id or "",
            # This client reads answers of any size: the server's own send limit is the bound.
            max_response_bytes=ANY_ANSWER_BYTES,
        )
        response = self._conn.invoke(
            self._conn.stub.Reserve, request,
            deadline_ms=deadline_ms if deadline_ms is not None else wait_ms + LONG_POLL_MARGIN_MS,
            # A lost answer leaves leases that simply expire (delivery is at least once).
            retry_safe=True,
        )
        return [LeasedJob(job) for job in response.jobs]

    def ack(self, lease: LeaseRef, *, result: Any = None, deadline_ms: int | None = None) -> None:
        """Completes a leased job, with `result` as its result (encoded as a handler's return value
        is: a JobResult as given, bytes, a str as text, anything else as JSON; None means none).
        Raises LeaseLostError when the lease is no longer this one."""
        request = work_pb2.AckRequest(job_id=lease.id, attempt=lease.attempt, result=encode_result(result))
        # Repeated after UNAVAILABLE and answered "not leased": checked against the job (_repeated_settlement.py).
        ack_call(self._conn, lease, request, deadline_ms=deadline_ms)

    def ack_batch(self, leases: Sequence[LeaseRef], *, results: Sequence[Any] | None = None,
                  deadline_ms: int | None = None) -> list[AckResult]:
        """Completes many leased jobs, each on its own (with `results[i]` as the result of
        `leases[i]`, when given): one outcome per lease, in order. Repeated after UNAVAILABLE, an
        ack answered `not_found` is `ok` unless the job disproves it, as `ack`'s."""
        if results is not None and len(results) != len(leases):
            raise ValueError("results: give one per lease")
        encoded = [encode_result(r) for r in results] if results is not None else [None] * len(leases)
        request = work_pb2.AckBatchRequest(acks=[
            work_pb2.AckRequest(job_id=l.id, attempt=l.attempt, result=r) for l, r in zip(leases, encoded)
        ])
        repeated = [False]
        response = self._conn.invoke(self._conn.stub.AckBatch, request, deadline_ms=deadline_ms, retry_safe=True,
                                     on_repeat=lambda: repeated.__setitem__(0, True))
        if repeated[0]:
            for lease, answer in zip(leases, response.results):
                if answer.outcome == work_pb2.SETTLE_OUTCOME_NOT_FOUND and ack_applied(self._conn, lease):
                    answer.outcome = work_pb2.SETTLE_OUTCOME_OK
        return [AckResult(_SETTLE_OUTCOMES.get(r.outcome, "not_found"), r.message) for r in response.results]

    def nack(
        self,
        lease: LeaseRef,
        *,
        error: str | BaseException | None = None,
        retry_after_ms: int | None = None,
        dead_letter: bool = False,
        give_back: bool = False,
        deadline_ms: int | None = None,
    ) -> NackResult:
        """Fails an attempt: retry after the queue's backoff (default), after `retry_after_ms`,
        or dead-letter now. `error` is recorded in the job's history. Raises LeaseLostError when
        the lease is no longer this one.

        `give_back=True` says the job never started here and hands its lease back instead: the
        job is ready again at its old place, no attempt counted (even on its last attempt: it
        keeps its attempt number and its `max_attempts` grows by one, so this lease stays stale
        once the job is leased again), the queue's rate-limit tokens returned; it wins over `error`,
        `retry_after_ms` and `dead_letter`, which are then ignored. A job whose cancel was asked
        for ends cancelled. A Worker gives back the jobs it holds (`prefetch`) when it closes.
        It needs a server with the `nack_give_back` feature (docs/protocol.md, "Features"): an
        older one reads it as a nack with backoff, an attempt counted. This call does not check
        (that would cost a call); `get_server_info().features` lists them."""
        request = nack_request(lease.id, lease.attempt, error, retry_after_ms, dead_letter, give_back=give_back)
        return nack_call(self._conn, lease, request, deadline_ms=deadline_ms)

    def extend(self, lease: LeaseRef, lease_ms: int, *, deadline_ms: int | None = None) -> int:
        """Pushes a lease's deadline to `lease_ms` from now (clamped to the queue's longest
        lease). Returns the new deadline in ms since the epoch; raises LeaseLostError when the
        lease is gone."""
        request = work_pb2.ExtendRequest(job_id=lease.id, attempt=lease.attempt, lease_duration_ms=lease_ms)
        response = self._conn.invoke(self._conn.stub.Extend, request, deadline_ms=deadline_ms, retry_safe=True,
                                     lease_call=True)
        return int(response.lease_deadline_ms)

    def report_progress(self, lease: LeaseRef, percent: float | None = None, data: Any = UNSET, *,
                        deadline_ms: int | None = None) -> JobProgress | None:
        """Reports how far along a leased job is: `percent` (0 to 100), a JSON document `data`,
        or both (a Worker's handler uses `job.progress()`). Returns the job's progress after it;
        raises LeaseLostError when the lease is gone."""
        fields = progress_fields(percent, data, data is not UNSET)
        request = work_pb2.ReportProgressRequest(job_id=lease.id, attempt=lease.attempt, **fields)
        # Reporting the same progress twice stores the same thing.
        response = self._conn.invoke(self._conn.stub.ReportProgress, request, deadline_ms=deadline_ms,
                                     retry_safe=True, lease_call=True)
        return progress_from_proto(response.progress, response.HasField("progress"))

    # ------------------------------------------------------------------ outcomes

    def wait_for(self, id: str, *, timeout_ms: int | None = None) -> JobOutcome:
        """Waits for a job to finish and returns how it ended: `completed` (with its result),
        `dead` (with the dead letter's error) or `cancelled` — also when it ended before the
        call, as long as the server still keeps the job or its outcome event. Raises SeppError
        `not_found` when it knows neither, `deadline_exceeded` after `timeout_ms` (default: no
        limit). Survives reconnects and server restarts."""
        return wait_for_job(self._conn, self.jobs.get, id, timeout_ms)

    def enqueue_and_wait(self, queue: str, type: str, payload: Payload | None = None, *,
                         timeout_ms: int | None = None, **options: Any) -> JobOutcome:
        """Enqueues a job (as `enqueue`, with the same keyword options, e.g. `json=`) and waits
        for its outcome (as `wait_for`; a duplicate waits for the original). The outcome is found
        even when the job finishes at once on a queue that keeps no completed jobs."""
        return enqueue_then_wait(self._conn, self.jobs.get,
                                 lambda: self.enqueue(queue, type, payload, **options).id, timeout_ms)

    def events(self, *, queues: Sequence[str] = (), job_ids: Sequence[str] = (),
               kinds: Sequence[JobEventKind] = (), from_oldest: bool = False,
               resume_from: EventPosition | None = None) -> EventStream:
        """Subscribes to job events (enqueued, leased, progress, completed with the result,
        retry_scheduled, dead_lettered, cancelled, released, batch_ended, batch_first_death,
        lease_undone: every `JobEventKind`) in commit order, filtered by queues, job ids and
        kinds: `for event in client.events(queues=["emails"]): ...`. Resumes by itself after a
        disconnect; `close()` it when done."""
        return EventStream(self._conn, queues=queues, job_ids=job_ids, kinds=kinds, from_oldest=from_oldest,
                           resume_from=resume_from)

    def worker(self, queues: Sequence[str], **options: Any) -> Worker:
        """A Worker on this client (see `Worker` for the options); `close()` closes it too."""
        from .worker import Worker

        return Worker(self, queues, **options)

    def _track(self, worker: Worker, running: bool) -> None:
        with self._lock:
            if running:
                self._workers.add(worker)
            else:
                self._workers.discard(worker)

    # ------------------------------------------------------------------ the server

    def list_workers(self, *, deadline_ms: int | None = None) -> list[WorkerInfo]:
        """The workers connected now: id, address, transport, queues, when last seen, leases held.
        Follows the server's pages."""
        workers: list[WorkerInfo] = []
        page_token = ""
        while True:
            page = self.list_workers_page(page_token=page_token, deadline_ms=deadline_ms)
            workers.extend(page.workers)
            page_token = page.next_page_token
            if page_token == "":
                return workers

    def list_workers_page(self, *, page_size: int = 0, page_token: str = "",
                          deadline_ms: int | None = None) -> WorkerPage:
        """One page of the workers connected now (`page_size` 0 means 100, at most the server's
        `max_page_size`), with `waiting_reserves`: the long-polls and Work streams waiting for
        jobs now. Pass `next_page_token` back for the next page ("" on the last)."""
        request = workers_pb2.ListWorkersRequest(page_size=page_size, page_token=page_token)
        response = read_call(self._conn, self._conn.stub.ListWorkers, request, deadline_ms)
        return WorkerPage([worker_info_from_proto(w) for w in response.workers], int(response.waiting_reserves),
                          response.next_page_token)

    def get_server_info(self, *, deadline_ms: int | None = None) -> ServerInfo:
        """The server's version, durability mode, clock and every effective limit."""
        response = read_call(self._conn, self._conn.stub.GetServerInfo, admin_pb2.GetServerInfoRequest(), deadline_ms)
        return server_info_from_proto(response)

    def reload_config(
        self,
        *,
        dry_run: bool = False,
        allow_security_downgrade: bool = False,
        deadline_ms: int | None = None,
    ) -> ReloadReport:
        """Makes the server read its config file again, as SIGHUP does (admin key); with
        `dry_run`, only reports what would change. A file that lowers security (no API
        keys, admin users, TLS or /metrics token where the running configuration has
        them; a key's or user's role raised, a key's queues widened, `strict_queues` turned off,
        a queue's `allowed_types` widened, a proxy range trusted) is refused unless
        `allow_security_downgrade` is set.
        The report's `security_downgrades` names what the file lowers, allowed or refused."""
        request = admin_pb2.ReloadConfigRequest(
            dry_run=dry_run, allow_security_downgrade=allow_security_downgrade
        )
        return reload_report_from_proto(read_call(self._conn, self._conn.stub.ReloadConfig, request, deadline_ms))

    # ------------------------------------------------------------------ flat aliases
    # The methods of earlier versions, each the same call as its group's.

    def get_job(self, id: str, *, deadline_ms: int | None = None) -> Job:
        """Same as `client.jobs.get(id)`."""
        return self.jobs.get(id, deadline_ms=deadline_ms)

    # ------------------------------------------------------------------ workflows

    def enqueue_flow(self, flow: Flow, *, deadline_ms: int | None = None) -> dict[str, Enqueued]:
        """Enqueues a flow (sepp.Flow): jobs that name each other, each waiting until the ones
        it runs after (`after`) completed; all or none. Returns each job's Enqueued by name;
        raises JobRejectedError listing every refused job by index."""
        return _workflows.enqueue_flow(self._conn, self._batcher, flow, deadline_ms)

    def create_batch(self, *, on_complete: JobSpec | None = None, on_success: JobSpec | None = None,
                     on_death: JobSpec | None = None, jobs: Iterable[JobSpec] = (), seal: bool = False,
                     deadline_ms: int | None = None) -> BatchAdded:
        """Creates a batch with its completion jobs (their payload, if any, JSON) and first members
        (each on its own merits). Once it is sealed and its last member ended, the server enqueues
        `on_complete`, and `on_success` if every member completed, exactly once; their data is
        `{"batch": {id, outcome, completed, dead, cancelled, members, membersOmitted}, "data": ...}`.
        `on_death` is enqueued once, when the first member dies (the rest may still run); its
        `batch` also has `pending` and `firstDead` ({jobId, error})."""
        return _workflows.create_batch(self._conn, on_complete, on_success, on_death, list(jobs), seal,
                                       deadline_ms)

    def add_to_batch(self, batch_id: str, jobs: Iterable[JobSpec], *, seal: bool = False,
                     from_member: str | None = None, from_member_token: str | None = None,
                     deadline_ms: int | None = None) -> BatchAdded:
        """Adds jobs to an open batch; a running member adds to its own sealed batch with
        `from_member=job.id`: the server also asks for the secret token of its lease, which this
        SDK passes itself while the member's handler runs in this process, through a Client of the
        same target as the Worker that leased it (the address as configured, plaintext or TLS and its
        server name), never to another server: through a client of another the add is refused
        (`permission_denied`, saying the member does not run on this client's server).
        `from_member_token` (the job's `lease_token`) gives it otherwise. `seal` seals it after."""
        return _workflows.add_to_batch(self._conn, batch_id, list(jobs), seal, from_member, from_member_token,
                                       deadline_ms)

    def seal_batch(self, batch_id: str, *, deadline_ms: int | None = None) -> Batch:
        """Seals a batch: it ends once no member is pending (at once if none is)."""
        return _workflows.seal_batch(self._conn, batch_id, deadline_ms)

    def get_batch(self, batch_id: str, *, members_after: int | None = None, members_limit: int = 100,
                  deadline_ms: int | None = None) -> tuple[Batch, list[BatchMember]]:
        """A batch's state and counts, and up to `members_limit` members after position `members_after`."""
        return _workflows.get_batch(self._conn, batch_id, members_after, members_limit, deadline_ms)

    def list_batches(self, *, state: BatchState | None = None, owner: str | None = None,
                     page_size: int | None = None, page_token: str | None = None,
                     deadline_ms: int | None = None) -> BatchPage:
        """A page of batches, newest first, by `state` and `owner` (an API key's name); pass
        `next_page_token` back as `page_token` for the next. An ended batch is listed until the
        server sweeps it (limits.batch_retention_ms, 7 days). A key that is not admin lists only
        its own batches (another key's is `permission_denied`)."""
        return _workflows.list_batches(self._conn, state, owner, page_size, page_token, deadline_ms)

    def cancel_batch(self, batch_id: str, *, deadline_ms: int | None = None) -> WorkflowCancelled:
        """Cancels every member of a batch that has not ended, as one act (admin key)."""
        return _workflows.cancel_batch(self._conn, batch_id, deadline_ms)

    def get_flow(self, job_id: str, *, limit: int = 0, deadline_ms: int | None = None) -> FlowGraph:
        """The flow of a job: every job connected to it through dependencies, either way, and the edges."""
        return _workflows.get_flow(self._conn, job_id, limit, deadline_ms)

    def cancel_flow(self, job_id: str, *, deadline_ms: int | None = None) -> WorkflowCancelled:
        """Cancels every job of a job's flow that has not ended, as one act (admin key)."""
        return _workflows.cancel_flow(self._conn, job_id, deadline_ms)

    def cancel_job(self, id: str, *, deadline_ms: int | None = None) -> CancelResult:
        """Same as `client.jobs.cancel(id)`."""
        return self.jobs.cancel(id, deadline_ms=deadline_ms)

    def update_job(self, id: str, *, priority: int | None = None, run_at: TimeInput | None = None,
                   delay_ms: int | None = None, run_now: bool = False, group: str | None = None,
                   deadline_ms: int | None = None) -> Job:
        """Same as `client.jobs.update(id, ...)`."""
        return self.jobs.update(id, priority=priority, run_at=run_at, delay_ms=delay_ms, run_now=run_now,
                                group=group, deadline_ms=deadline_ms)

    def list_queues(self, *, deadline_ms: int | None = None) -> list[QueueInfo]:
        """Same as `client.queues.list()`."""
        return self.queues.list(deadline_ms=deadline_ms)

    def pause_queue(self, queue: str, *, allow_missing: bool = False, deadline_ms: int | None = None) -> None:
        """Same as `client.queues.pause(queue)`."""
        self.queues.pause(queue, allow_missing=allow_missing, deadline_ms=deadline_ms)

    def resume_queue(self, queue: str, *, allow_missing: bool = False, deadline_ms: int | None = None) -> None:
        """Same as `client.queues.resume(queue)`."""
        self.queues.resume(queue, allow_missing=allow_missing, deadline_ms=deadline_ms)

    def delete_queue(self, queue: str, *, deadline_ms: int | None = None) -> None:
        """Same as `client.queues.delete(queue)`."""
        self.queues.delete(queue, deadline_ms=deadline_ms)

    @overload
    def purge_queue(self, queue: str, *, background: Literal[False] = False,
                    deadline_ms: int | None = None) -> int: ...
    @overload
    def purge_queue(self, queue: str, *, background: Literal[True],
                    deadline_ms: int | None = None) -> BulkResult: ...
    @overload
    def purge_queue(self, queue: str, *, background: bool,
                    deadline_ms: int | None = None) -> int | BulkResult: ...

    def purge_queue(self, queue: str, *, background: bool = False,
                    deadline_ms: int | None = None) -> int | BulkResult:
        """Same as `client.queues.purge(queue, ...)`."""
        return self.queues.purge(queue, background=background, deadline_ms=deadline_ms)

    def set_queue_settings(self, queue: str, settings: Mapping[str, str | int | float | Sequence[str]], *,
                           deadline_ms: int | None = None) -> QueueInfo:
        """Same as `client.queues.set_settings(queue, settings)`."""
        return self.queues.set_settings(queue, settings, deadline_ms=deadline_ms)

    def reset_queue_settings(self, queue: str, keys: Sequence[str] | Literal["all"], *,
                             deadline_ms: int | None = None) -> QueueInfo:
        """Same as `client.queues.reset_settings(queue, keys)`."""
        return self.queues.reset_settings(queue, keys, deadline_ms=deadline_ms)

    def list_dead_letters(self, queue: str, *, reason: DeadReason | None = None, page_size: int | None = None,
                          page_token: str | None = None, deadline_ms: int | None = None) -> DeadLetterPage:
        """Same as `client.dlq.list(queue, ...)`."""
        return self.dlq.list(queue, reason=reason, page_size=page_size, page_token=page_token,
                             deadline_ms=deadline_ms)

    def dead_letters(self, queue: str, *, reason: DeadReason | None = None,
                     page_size: int | None = None) -> Iterator[Job]:
        """Same as `client.dlq.all(queue, ...)`."""
        return self.dlq.all(queue, reason=reason, page_size=page_size)

    @overload
    def requeue_dead_letters(self, queue: str, selection: Selection, *, reason: DeadReason | None = None,
                             error_text: str | None = None, background: Literal[False] = False,
                             deadline_ms: int | None = None) -> int: ...
    @overload
    def requeue_dead_letters(self, queue: str, selection: Selection, *, reason: DeadReason | None = None,
                             error_text: str | None = None, background: Literal[True],
                             deadline_ms: int | None = None) -> BulkResult: ...
    @overload
    def requeue_dead_letters(self, queue: str, selection: Selection, *, reason: DeadReason | None = None,
                             error_text: str | None = None, background: bool,
                             deadline_ms: int | None = None) -> int | BulkResult: ...

    def requeue_dead_letters(self, queue: str, selection: Selection, *, reason: DeadReason | None = None,
                             error_text: str | None = None, background: bool = False,
                             deadline_ms: int | None = None) -> int | BulkResult:
        """Same as `client.dlq.requeue(queue, selection, ...)`."""
        return self.dlq.requeue(queue, selection, reason=reason, error_text=error_text, background=background,
                                deadline_ms=deadline_ms)

    @overload
    def delete_dead_letters(self, queue: str, selection: Selection, *, reason: DeadReason | None = None,
                            error_text: str | None = None, background: Literal[False] = False,
                            deadline_ms: int | None = None) -> int: ...
    @overload
    def delete_dead_letters(self, queue: str, selection: Selection, *, reason: DeadReason | None = None,
                            error_text: str | None = None, background: Literal[True],
                            deadline_ms: int | None = None) -> BulkResult: ...
    @overload
    def delete_dead_letters(self, queue: str, selection: Selection, *, reason: DeadReason | None = None,
                            error_text: str | None = None, background: bool,
                            deadline_ms: int | None = None) -> int | BulkResult: ...

    def delete_dead_letters(self, queue: str, selection: Selection, *, reason: DeadReason | None = None,
                            error_text: str | None = None, background: bool = False,
                            deadline_ms: int | None = None) -> int | BulkResult:
        """Same as `client.dlq.delete(queue, selection, ...)`."""
        return self.dlq.delete(queue, selection, reason=reason, error_text=error_text, background=background,
                               deadline_ms=deadline_ms)

    def list_audit_entries(self, *, actor: str | None = None, action: str | None = None,
                           target: str | None = None, page_size: int | None = None,
                           page_token: str | None = None, deadline_ms: int | None = None) -> AuditPage:
        """Same as `client.audit.list(...)`."""
        return self.audit.list(actor=actor, action=action, target=target, page_size=page_size,
                               page_token=page_token, deadline_ms=deadline_ms)

    def audit_entries(self, *, actor: str | None = None, action: str | None = None, target: str | None = None,
                      page_size: int | None = None) -> Iterator[AuditEntry]:
        """Same as `client.audit.entries(...)`."""
        return self.audit.entries(actor=actor, action=action, target=target, page_size=page_size)

    def close(self, *, timeout_ms: int | None = None) -> None:
        """Closes the Workers started with `worker()` (waiting for their jobs), sends enqueues
        still queued and waits for their answers (up to `timeout_ms`, default the default
        deadline), then closes the connection. Calls made afterwards fail."""
        timeout_s = self._conn.timeout_s(timeout_ms, "timeout_ms")  # a bad one raises before anything closes
        with self._lock:
            workers = list(self._workers)
        for worker in workers:
            worker.close()
        self._batcher.close(timeout_s)
        self._conn.close()
