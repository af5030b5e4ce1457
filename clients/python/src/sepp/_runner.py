"""Running one job inside a Worker: decode, call the handler, settle the
outcome (retrying UNAVAILABLE while the lease may still be ours), and keep the
lease alive meanwhile (an extend every third of the lease, from the timer
thread)."""
from __future__ import annotations

import json
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Mapping, TypeVar

import grpc

from ._connection import backoff_delay_ms
from ._convert import error_text, is_ms, nack_request
from ._progress import ProgressReporter
from ._running_members import RunningLease, member_done, member_runs
from ._scheduler import Scheduler, Timer
from ._work_transport import WorkTransport
from .errors import JobCancelledError, JobTimeoutError, LeaseLostError, SeppError, to_sepp_error
from .handler import DeadLetter, Handler, RetryAfter, WorkerEvent, WorkerJob
from .results import encode_result, is_json_content_type
from .v1 import job_pb2, work_pb2

if TYPE_CHECKING:
    from concurrent.futures import Future

    from .worker import Worker

T = TypeVar("T")


def _no_slot() -> None:
    """A held job's settlement frees no slot: it never took one."""


@dataclass(eq=False)
class Active:
    """A job this worker holds, from delivery until it is settled, lost or abandoned."""

    job: WorkerJob
    decode_error: DeadLetter | None
    lease_ends_at: float
    """Local (monotonic) estimate of the lease's end, for retrying settlements."""
    timer: Timer | None = None
    extending_since: float | None = None
    lost: bool = False
    cancelled: JobCancelledError | None = None
    """Set once the server said the job was cancelled."""
    stopped_for_shutdown: bool = False
    abandoned: bool = False
    """Given up at shutdown: whatever the handler does later is not settled."""
    settling: bool = False
    """Its ack or nack is sent: that answer says whether the lease was still ours, not a late extend's
    or progress report's."""
    slot_freed: bool = False
    """It takes no slot (held and never started, or its slot was freed)."""
    progress: ProgressReporter | None = None
    """Made on the job's first progress report."""


class JobRunner:
    def __init__(
        self,
        worker: Worker,
        transport: WorkTransport,
        scheduler: Scheduler,
        handlers: Mapping[str, Handler],
        fallback: Handler | None,
        retry_base_delay_ms: int,
        retry_max_delay_ms: int,
    ) -> None:
        self._worker = worker
        self._transport = transport
        self._scheduler = scheduler
        self._handlers = dict(handlers)
        self._fallback = fallback
        self._retry_base_delay_ms = retry_base_delay_ms
        self._retry_max_delay_ms = retry_max_delay_ms
        self._period_s = max(0.001, worker.lease_ms / 3 / 1000)
        self._deadline_s = worker.client.connection.default_deadline_ms / 1000

    def make(self, proto: job_pb2.LeasedJob) -> Active:
        data: object = proto.payload
        decode_error = None
        if is_json_content_type(proto.content_type):
            try:
                data = json.loads(proto.payload.decode("utf-8"))
            except ValueError as error:
                # Retrying cannot make a payload valid JSON.
                decode_error = DeadLetter(f"payload is not valid JSON ({error})")
            except RecursionError as error:
                # Nor shallower: Python's json reads about 1,000 levels of nesting (sys.getrecursionlimit()).
                decode_error = DeadLetter(f"payload is JSON nested too deep for Python's json module ({error})")
        job = WorkerJob(proto, data)
        active = Active(job, decode_error, time.monotonic() + self._worker.lease_ms / 1000)
        self.attach_progress(active)
        return active

    # ------------------------------------------------------------------ lease keeping

    def keep(self, active: Active) -> None:
        active.timer = self._scheduler.call_later(self._period_s, lambda: self._extend(active))

    def unkeep(self, active: Active) -> None:
        if active.timer is not None:
            active.timer.cancel()

    def _extend(self, active: Active) -> None:
        if active.lost or active.abandoned or active.cancelled is not None or not self._worker.is_active(active):
            return
        self.keep(active)
        now = time.monotonic()
        # An extend still unanswered after the call deadline is given up; this one replaces it.
        if active.extending_since is not None and now - active.extending_since < self._deadline_s:
            return
        active.extending_since = now
        lease_ms = self._worker.lease_ms
        future = self._transport.extend(active.job, lease_ms)

        def done(settled: Future[int]) -> None:
            active.extending_since = None
            error = settled.exception()
            if error is None:
                active.lease_ends_at = now + lease_ms / 1000
                if self._worker.is_active(active):
                    self._worker.emit(WorkerEvent("extended", active.job, lease_deadline_ms=settled.result()))
                return
            # Anything but a lost or cancelled lease is retried at the next period: a lease gets two tries.
            self._lease_call_failed(active, error, "extending the lease of")

        future.add_done_callback(done)

    def _lease_call_failed(self, active: Active, error: BaseException, doing: str) -> None:
        """An extend or progress report refused. One that reached the server after our own ack
        or nack is answered NOT_FOUND (or job_cancelled): the settlement's answer decides."""
        e = to_sepp_error(error, lease_call=True)
        if active.settling and isinstance(e, (LeaseLostError, JobCancelledError)):
            return
        if isinstance(e, LeaseLostError):
            self.lose(active, e)
        elif isinstance(e, JobCancelledError):
            self.mark_cancelled(active, e)
        else:
            self._worker.log.warning("sepp worker %s: %s job %s failed: %s", self._worker.worker_id, doing,
                                     active.job.id, e.message)
            self._worker.emit(WorkerEvent("error", active.job, e))

    def lose(self, active: Active, error: LeaseLostError) -> None:
        if active.lost or not self._worker.is_active(active):
            return
        active.lost = True
        if self._worker.drop_held(active, error):
            return
        self.unkeep(active)
        active.job._cancel(error)
        if isinstance(error, JobTimeoutError):
            self._worker.log.warning("sepp worker %s: job %s (%s, attempt %d) timed out: %s; not settling it",
                                     self._worker.worker_id, active.job.id, active.job.type, active.job.attempt,
                                     error.message)
            self._worker.emit(WorkerEvent("timed_out", active.job, error))
            return
        self._worker.log.warning("sepp worker %s: lost the lease of job %s (%s, attempt %d): %s; not settling it",
                                 self._worker.worker_id, active.job.id, active.job.type, active.job.attempt,
                                 error.message)
        self._worker.emit(WorkerEvent("lease_lost", active.job, error))

    def mark_cancelled(self, active: Active, error: JobCancelledError) -> None:
        """The server says the job was cancelled: stop it. Its lease is not extended any more
        (the server refuses), and the job ends cancelled when it is nacked or the lease ends."""
        if active.cancelled is not None or active.lost or not self._worker.is_active(active):
            return
        active.cancelled = error
        if self._worker.drop_held(active, error):
            return
        self.unkeep(active)
        active.job._cancel(error)
        self._worker.log.info("sepp worker %s: job %s (%s, attempt %d) was cancelled: %s", self._worker.worker_id,
                              active.job.id, active.job.type, active.job.attempt, error.message)
        self._worker.emit(WorkerEvent("cancelled", active.job, error))

    # ------------------------------------------------------------------ running

    def run(self, active: Active) -> None:
        worker = self._worker
        job = active.job
        worker.emit(WorkerEvent("started", job))
        started = worker.run_started()
        failure: BaseException | None = None
        try:
            if active.decode_error is not None:
                raise active.decode_error
            handler = self._handlers.get(job.type, self._fallback)
            if handler is None:
                known = ", ".join(sorted(self._handlers))
                raise LookupError(f'no handler for job type "{job.type}" on worker {worker.worker_id} '
                                  f"(handlers: {known})")
            # A batch member's handler may add to its sealed batch: the add proves it with this lease's token
            # (none from a server older than lease tokens, which takes the attempt), sent only to the target
            # this worker leased it from (_running_members).
            lease = None if job.batch_id is None else RunningLease(job.lease_token or "", job.attempt)
            target = self._worker.client.connection.target
            if lease is not None:
                member_runs(target, job.id, lease)
            try:
                job.result = handler(job)
            finally:
                if lease is not None:
                    member_done(target, job.id, lease)
        except BaseException as error:  # noqa: BLE001 - whatever a handler raises fails the attempt
            failure = error
        if active.progress is not None:
            active.progress.close()
        job._report = None
        result: job_pb2.JobResult | None = None
        if failure is None:
            try:
                result = encode_result(job.result)
            except SeppError as error:
                # A return value with no JSON form is the handler's bug: fail the attempt and say so.
                failure = error
        # Its settlement is queued next: `prefetch="auto"` learns the run time before the slot's credit is asked.
        worker.ran(started)
        if active.lost or active.abandoned:
            worker.finish_job(active)
            return
        def freed() -> None:
            worker.free_slot(active)

        active.settling = True

        if active.cancelled is not None:
            self._settle_cancelled(active, active.cancelled, freed)
            worker.finish_job(active)
            return
        try:
            if failure is None:
                # The server may refuse the result (larger than its max_result_bytes): the attempt fails.
                failure = self._ack(active, result, freed)
                if failure is None:
                    worker.log.debug("sepp worker %s: job %s (%s) done", worker.worker_id, job.id, job.type)
                    worker.emit(WorkerEvent("completed", job))
            if failure is not None:
                request = self._nack_request(active, failure)
                nacked = self._settle(active, lambda repeated: self._transport.nack(job, request, freed, repeated))
                self._log_failure(job, failure, nacked.state, nacked.run_at_ms)
                worker.emit(WorkerEvent("failed", job, failure, nack=nacked))
        except LeaseLostError as error:
            self.lose(active, error)
        except JobCancelledError as error:
            # Cancelled while it ran, learnt from the ack or nack: the job is cancelled, not completed.
            self.mark_cancelled(active, error)
        except SeppError as error:
            worker.log.error("sepp worker %s: settling job %s failed: %s", worker.worker_id, job.id, error.message)
            worker.emit(WorkerEvent("error", job, error))
        worker.finish_job(active)

    def _settle_cancelled(self, active: Active, error: JobCancelledError, freed: Callable[[], None]) -> None:
        """Ends a cancelled job's attempt with a nack, which the server answers with state
        `cancelled` (never a retry). A lease that already ended needs nothing more: the server
        made the job cancelled then."""
        job = active.job
        request = nack_request(job.id, job.attempt, error.message, 0, False)
        try:
            self._settle(active, lambda repeated: self._transport.nack(job, request, freed, repeated))
        except (LeaseLostError, JobCancelledError):
            pass
        except SeppError as failure:
            self._worker.log.error("sepp worker %s: settling cancelled job %s failed: %s", self._worker.worker_id,
                                   job.id, failure.message)
            self._worker.emit(WorkerEvent("error", job, failure))

    def settle_cancelled_held(self, active: Active, error: JobCancelledError) -> None:
        """A held job cancelled: nacked (the server makes it cancelled at once), never run."""
        self._settle_cancelled(active, error, _no_slot)
        self._worker.finish_job(active)

    def give_back(self, active: Active, uncounted: bool = True, why: str = "is closing") -> None:
        """Gives a held job back to the queue at once (at shutdown) with a nack's `give_back`: its
        lease is undone, the job ready again at its old place with no attempt counted (its attempt
        kept, its budget one larger; even on its last attempt), for another worker now rather than
        at its lease's end. To a server without give-backs (`uncounted` False) it is a nack for a
        retry at once, which counts an attempt as the lease's expiry would, only sooner."""
        self.unkeep(active)
        job = active.job
        message = f"given back unstarted: worker {self._worker.worker_id} {why}"
        request = nack_request(job.id, job.attempt, message, 0, False, give_back=uncounted)
        try:
            self._settle(active, lambda repeated: self._transport.nack(job, request, _no_slot, repeated))
        except LeaseLostError:
            pass
        except SeppError as failure:
            self._worker.log.error("sepp worker %s: giving back held job %s failed: %s; it runs again once its "
                                   "lease ends", self._worker.worker_id, job.id, failure.message)
            self._worker.emit(WorkerEvent("error", job, failure))
        self._worker.finish_job(active)

    def _ack(self, active: Active, result: job_pb2.JobResult | None, freed: Callable[[], None]) -> SeppError | None:
        """Acks; returns the server's refusal of the result (INVALID_ARGUMENT: larger than its
        max_result_bytes; RESOURCE_EXHAUSTED marked "never": larger than a message it takes at all),
        if it refused it: the attempt then fails, saying why, rather than running again at its
        lease's end."""
        try:
            self._settle(active, lambda _repeated: self._transport.ack(active.job, result, freed))
        except SeppError as error:
            too_large = error.grpc_code == grpc.StatusCode.RESOURCE_EXHAUSTED and error.retry == "never"
            if result is None or (error.grpc_code != grpc.StatusCode.INVALID_ARGUMENT and not too_large):
                raise
            return error
        return None

    def attach_progress(self, active: Active) -> None:
        """Lets the job's handler report progress, through one reporter made on first use."""

        def report(fields: dict[str, Any]) -> None:
            if active.lost or active.abandoned or active.cancelled is not None:
                return
            if active.progress is None:
                active.progress = ProgressReporter(
                    lambda f: self._transport.progress(active.job, f),
                    lambda error: self._lease_call_failed(active, error, "reporting progress of"),
                )
            active.progress.report(fields)

        active.job._report = report

    def _nack_request(self, active: Active, error: BaseException) -> work_pb2.NackRequest:
        job = active.job
        # A DeadLetter or RetryAfter raised from another exception reports that one's class and stack.
        cause = error.__cause__ if isinstance(error.__cause__, BaseException) else error
        if isinstance(error, DeadLetter):
            return nack_request(job.id, job.attempt, str(error), None, True, cause)
        if isinstance(error, RetryAfter):
            # A delay the protocol cannot carry (NaN, "5s"): the queue's backoff, not a failed nack.
            delay_ms = error.delay_ms if is_ms(error.delay_ms) else None
            return nack_request(job.id, job.attempt, str(error), delay_ms, False, cause)
        # Stopped by our own shutdown: let another worker have it at once.
        retry_after_ms = 0 if active.stopped_for_shutdown else None
        return nack_request(job.id, job.attempt, error_text(error), retry_after_ms, False, error)

    def _log_failure(self, job: WorkerJob, error: BaseException, state: str, run_at_ms: int | None) -> None:
        log = self._worker.log
        where = "dead-lettered" if state == "dead" else (
            f"retrying in {max(0, (run_at_ms or 0) - int(time.time() * 1000))} ms" if state == "scheduled"
            else "retrying now")
        attempt = f"attempt {job.attempt}/{job.max_attempts}"
        if isinstance(error, (RetryAfter, DeadLetter)):
            log.info("sepp worker %s: job %s (%s, %s): %s; %s", self._worker.worker_id, job.id, job.type, attempt,
                     error, where)
        else:
            log.warning("sepp worker %s: job %s (%s, %s) failed: %s; %s", self._worker.worker_id, job.id, job.type,
                        attempt, error_text(error), where, exc_info=error)

    def _settle(self, active: Active, settle: Callable[[bool], T]) -> T:
        """Settlements that fail with UNAVAILABLE are retried while the lease may still be ours;
        `settle` is told when it is a retry (the failed try may have been applied)."""
        retry = 0
        while True:
            try:
                return settle(retry > 0)
            except SeppError as error:
                delay_s = backoff_delay_ms(retry, self._retry_base_delay_ms, self._retry_max_delay_ms) / 1000
                if not error.retryable or time.monotonic() + delay_s >= active.lease_ends_at:
                    raise
                self._worker.log.warning("sepp worker %s: settling job %s: %s; retrying in %.1f s",
                                         self._worker.worker_id, active.job.id, error.message, delay_s)
                time.sleep(delay_s)
                retry += 1
