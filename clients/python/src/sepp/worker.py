"""Worker: runs handlers for the jobs of some queues, `concurrency` at a time.

States: idle (created) → running (asking for jobs for every free slot) →
closing (asks for nothing more; jobs already leased run to the end and are
settled) → closed.

A job's life here: delivered (takes a slot) → its handler runs on one of the
worker's `concurrency` threads while the timer thread extends its lease every
third of the lease → ack on return, nack on exception (RetryAfter and
DeadLetter choose the directive) → the slot frees. A lease found lost (an
extend or a settlement says so) sets `job.cancelled`, and the job is never
settled by this worker. A job cancelled by an operator while it runs (the Work
stream says so at once; an extend or ack answers `job_cancelled` otherwise)
sets `job.cancelled` with a JobCancelledError; when the handler returns, however
it ends, the job is nacked, which the server turns into `cancelled` — never an
ack or a retry.

With `prefetch` (a number, or by default the limit `"auto"` sets from handler run
times, none once a job comes from a queue with flow limits: `_prefetch.py`), a job delivered while every slot is busy is held (leased, its
lease extended by the timer thread like a running one's, its handler not
started) until a slot frees (`_held.py`); a held job cancelled, timed out or lost is
dropped without running (so is one whose lease ran out unextended: see `free_slot`), and
`close()` gives held jobs back to the queue at once (a nack's `give_back`: no attempt counted),
each once (the Work stream is told to stop delivering first). Against a server without
give-backs (GetServerInfo's `features` lacks `nack_give_back`: an older one), `"auto"` holds
nothing and `close()` nacks held jobs for a retry at once (an attempt counted), keeping one on its
last attempt to run.
"""
from __future__ import annotations

import logging
import os
import queue
import signal
import socket
import threading
import time
from typing import TYPE_CHECKING, Any, Callable, Literal, Mapping, Sequence

import grpc

from ._held import HeldJobs
from ._prefetch import MAX_PREFETCH, Prefetch
from ._runner import Active, JobRunner
from ._scheduler import Scheduler
from ._work_stream import WorkStreamTransport
from ._work_transport import ReserveTransport, TransportConfig, WorkTransport
from .errors import JobCancelledError, JobTimeoutError, SeppError, UnavailableError
from .handler import Handler, WorkerEvent, WorkerEventKind
from .v1 import job_pb2

if TYPE_CHECKING:
    from .client import Client

ABORT_GRACE_S = 1.0
"""After the shutdown timeout, how long cancelled handlers get to return before they are abandoned."""

ERROR_AFTER_S = 60.0
"""An outage longer than this is logged at ERROR instead of WARNING."""

class Worker:
    """Runs handlers for jobs from sepp queues.

    `queues` are taken from in order of preference. `handlers` maps job types to
    functions of one WorkerJob; `fallback` runs job types without their own
    handler (without it, such jobs are nacked and retried with backoff). The
    other options are described in docs/python.md.
    """

    def __init__(
        self,
        client: Client,
        queues: Sequence[str],
        *,
        handlers: Mapping[str, Handler] | None = None,
        fallback: Handler | None = None,
        concurrency: int = 1,
        prefetch: int | Literal["auto"] = "auto",
        lease_ms: int = 30_000,
        worker_id: str | None = None,
        shutdown_timeout_ms: int = 30_000,
        transport: Literal["stream", "unary"] | None = None,
        poll_wait_ms: int = 30_000,
        reconnect_base_delay_ms: int = 200,
        reconnect_max_delay_ms: int = 10_000,
        max_unavailable_ms: int | None = None,
        on_event: Callable[[WorkerEvent], None] | None = None,
        logger: logging.Logger | None = None,
    ) -> None:
        if isinstance(queues, str) or not queues:
            raise ValueError("Worker: name at least one queue, as a list")
        if isinstance(concurrency, bool) or not isinstance(concurrency, int) or not 1 <= concurrency <= 1000:
            raise ValueError("Worker: concurrency must be an integer from 1 to 1000")
        if prefetch != "auto" and (isinstance(prefetch, bool) or not isinstance(prefetch, int)
                                   or not 0 <= prefetch <= MAX_PREFETCH):
            raise ValueError(f'Worker: prefetch must be "auto" or an integer from 0 to {MAX_PREFETCH} (got {prefetch!r})')
        if prefetch != "auto" and concurrency + prefetch > MAX_PREFETCH:
            raise ValueError(f"Worker: concurrency + prefetch is {concurrency + prefetch}; the server refuses more "
                             f"than {MAX_PREFETCH} on one Work stream (limits.max_reserve_jobs): lower prefetch")
        if isinstance(lease_ms, bool) or not isinstance(lease_ms, int) or lease_ms < 3:
            raise ValueError("Worker: lease_ms must be an integer ≥ 3")
        if max_unavailable_ms is not None and (isinstance(max_unavailable_ms, bool)
                                               or not isinstance(max_unavailable_ms, int) or max_unavailable_ms < 1):
            # Unchecked, a string or a float here failed only inside the transport's thread, at the first outage.
            raise ValueError(f"Worker: max_unavailable_ms must be a positive integer number of ms (got "
                             f"{max_unavailable_ms!r}); None keeps trying")
        if handlers is None and fallback is None:
            raise ValueError("Worker: give handlers by job type, a fallback handler, or both")
        transport = transport or client.connection.transport
        if transport not in ("stream", "unary"):
            raise ValueError("Worker: transport must be 'stream' or 'unary'")
        self.client = client
        self.queues = tuple(queues)
        self.concurrency = concurrency
        self.prefetch = prefetch
        """As given: "auto" or a number of jobs (see `prefetch_limit`)."""
        self._prefetch = Prefetch(prefetch, concurrency, lease_ms)
        self._run_clock: Callable[[], float] = time.monotonic
        """Times handler runs for `prefetch="auto"` (seconds; replaced by tests)."""
        self.lease_ms = lease_ms
        self.worker_id = worker_id or f"{socket.gethostname()}:{os.getpid()}"
        """This worker's id, as the server records it."""
        self.shutdown_timeout_ms = shutdown_timeout_ms
        self.max_unavailable_ms = max_unavailable_ms
        self.log = logger or logging.getLogger("sepp.worker")
        self._on_event = on_event
        self._lock = threading.Condition()
        # A job came past the jobs asked for (told once: the server, not this worker, is at fault).
        self._warned_unasked = False
        self._state: Literal["idle", "running", "closing", "closed"] = "idle"
        self._active: set[Active] = set()
        self._busy = 0
        self._held = HeldJobs(self.worker_id)
        """Jobs leased ahead, waiting for a slot; changed under `_lock`."""
        self._jobs: queue.SimpleQueue[Active | None] = queue.SimpleQueue()
        self._threads: list[threading.Thread] = []
        self._stop = threading.Event()
        self._force = threading.Event()
        self._closed = threading.Event()
        self._closing = False
        self._fatal: SeppError | None = None
        self._unavailable_since: float | None = None
        self._scheduler = Scheduler(f"sepp-timer-{self.worker_id}")
        config = TransportConfig(
            queues=self.queues, lease_ms=lease_ms, worker_id=self.worker_id, poll_wait_ms=poll_wait_ms,
            reconnect_base_delay_ms=reconnect_base_delay_ms, reconnect_max_delay_ms=reconnect_max_delay_ms,
        )
        conn = client.connection
        self._transport: WorkTransport
        if transport == "unary":
            self._transport = ReserveTransport(conn, config, self)
        else:
            self._transport = WorkStreamTransport(conn, config, self, self._scheduler)
        self._runner = JobRunner(self, self._transport, self._scheduler, handlers or {}, fallback,
                                 reconnect_base_delay_ms, reconnect_max_delay_ms)

    @property
    def state(self) -> Literal["idle", "running", "closing", "closed"]:
        """`idle`, `running`, `closing` or `closed`."""
        return self._state

    @property
    def running(self) -> int:
        """Jobs whose handlers are running."""
        return self._busy

    @property
    def held(self) -> int:
        """Jobs leased ahead (`prefetch`) and waiting for a slot."""
        return len(self._held)

    @property
    def prefetch_limit(self) -> int:
        """The most jobs this worker leases ahead now: `prefetch`, or with `prefetch="auto"` the
        limit it last set itself (0 until its first `concurrency` jobs have run, and 0 for good once a
        job came from a queue with flow limits)."""
        return self._prefetch.limit

    def start(self) -> Worker:
        """Starts taking jobs in background threads and returns at once (see also `run()`)."""
        with self._lock:
            if self._state != "idle":
                return self
            self._state = "running"
        self.client._track(self, True)
        for i in range(self.concurrency):
            thread = threading.Thread(target=self._serve, name=f"sepp-job-{i}", daemon=True)
            thread.start()
            self._threads.append(thread)
        self._transport.start()
        self.log.info("sepp worker %s: taking jobs from %s (concurrency %d) at %s", self.worker_id,
                      ", ".join(self.queues), self.concurrency, self.client.address)
        return self

    def run(self, *, handle_signals: bool = True) -> None:
        """Starts the worker and blocks until SIGTERM or SIGINT (or `close()` from another
        thread), then shuts down gracefully: running jobs get `shutdown_timeout_ms` to finish;
        a second signal stops waiting for them. Raises the error that stopped the worker, if
        one did: a refusal asking again cannot change (its API key, the key's role or queues, a
        queue name, more jobs at once than the server's `limits.max_reserve_jobs`: docs/protocol.md,
        "What stops a Worker"), or the server unreachable beyond `max_unavailable_ms`.
        Signal handlers are installed only from the main thread, and restored afterwards."""
        self.start()
        previous: dict[signal.Signals, Any] = {}
        if handle_signals and threading.current_thread() is threading.main_thread():
            for signum in (signal.SIGTERM, signal.SIGINT):
                previous[signum] = signal.signal(signum, self._on_signal)
        try:
            while not self._stop.wait(0.25):
                pass
            self.close()
        finally:
            for signum, handler in previous.items():
                signal.signal(signum, handler)
        if self._fatal is not None:
            raise self._fatal

    def _on_signal(self, number: int, _frame: object) -> None:
        name = signal.Signals(number).name
        if self._stop.is_set():
            self.log.warning("sepp worker %s: %s again: not waiting for running jobs", self.worker_id, name)
            self._force.set()
            return
        self.log.info("sepp worker %s: %s: finishing %d running jobs (up to %d ms), then exiting",
                      self.worker_id, name, self._busy, self.shutdown_timeout_ms)
        self._stop.set()

    # ------------------------------------------------------------------ the host side of the transport

    def free_slots(self) -> int:
        if self._state != "running":
            return 0
        # Held jobs beyond a limit that dropped stay and run: no credit is asked until they have.
        return self.concurrency + self._prefetch.limit - self._busy - len(self._held)

    def idle_slots(self) -> int:
        return self.concurrency - self._busy if self._state == "running" else 0

    @property
    def refill_jobs(self) -> int:
        return max(1, (self._prefetch.limit + 1) // 2)

    def deliver(self, job: job_pb2.LeasedJob, unasked: bool = False) -> None:
        active = self._runner.make(job)
        give_back = False
        stopped = False
        warn_unasked = False
        with self._lock:
            if job.flow_limited:
                stopped = self._prefetch.flow_limited(job.queue)
            self._active.add(active)
            if unasked:
                active.slot_freed = True
                give_back = True
                warn_unasked = not self._warned_unasked
                self._warned_unasked = True
            elif self._busy < self.concurrency:
                self._busy += 1
                self._jobs.put(active)
            else:
                active.slot_freed = True
                give_back = not self._held.hold(active, self._state == "running", not self._can_give_back())
        self._runner.keep(active)
        if warn_unasked:
            self.log.warning("sepp worker %s: the server sent job %s past the jobs asked for (credit or max_jobs); "
                             "it and any more such are given back unstarted", self.worker_id, job.job_id)
        if give_back:
            self._held.settle_in_background(self._give_back_unasked if unasked else self._give_back, [active])
        if stopped:
            self.log.info("sepp worker %s: prefetch 'auto' holds no jobs ahead from now on: queue %s has flow "
                          "limits (max_leased or a rate limit)", self.worker_id, job.queue)

    def _can_give_back(self) -> bool:
        """Whether the server undoes a give-back (its `nack_give_back` feature); False while not known."""
        features = self.client.connection.server_features
        return features is not None and "nack_give_back" in features

    def _give_back(self, active: Active) -> None:
        self._runner.give_back(active, self._can_give_back())

    def _give_back_unasked(self, active: Active) -> None:
        self._runner.give_back(active, self._can_give_back(), "was sent it past the jobs it asked for")

    def drop_held(self, active: Active, error: SeppError) -> bool:
        """A held job cancelled, timed out or lost never runs here (its place is credit again);
        False if it was not held."""
        with self._lock:
            if not self._held.remove(active):
                return False
        if self._state == "running":
            self._transport.release()
        self._runner.unkeep(active)
        self._dropped(active, error)
        return True

    def _dropped(self, active: Active, error: SeppError) -> None:
        """A job taken out of the held ones that never runs here: its log line, its event (as for a
        running job, with no `started` before it), and its end."""
        self.log.warning("sepp worker %s: held job %s dropped: %s", self.worker_id, active.job.id, error.message)
        kind: WorkerEventKind = ("cancelled" if isinstance(error, JobCancelledError)
                                 else "timed_out" if isinstance(error, JobTimeoutError) else "lease_lost")
        self.emit(WorkerEvent(kind, active.job, error))
        if isinstance(error, JobCancelledError):
            cancelled = error
            # The nack makes the job cancelled now rather than when its lease runs out.
            self._held.settle_in_background(lambda a: self._runner.settle_cancelled_held(a, cancelled), [active])
        else:
            self.finish_job(active)

    def report(self, error: SeppError, retry_in_s: float | None) -> None:
        now = time.monotonic()
        if self._unavailable_since is None:
            self._unavailable_since = now
        down_s = now - self._unavailable_since
        level = logging.ERROR if down_s > ERROR_AFTER_S else logging.WARNING
        retry = f"; reconnecting in {retry_in_s:.1f} s" if retry_in_s is not None else ""
        self.log.log(level, "sepp worker %s: cannot work with sepp at %s (%s: %s)%s; failing for %.1f s",
                     self.worker_id, self.client.address, error.grpc_code.name, error.message, retry, down_s)
        self.emit(WorkerEvent("error", error=error))
        if self.max_unavailable_ms is not None and down_s * 1000 > self.max_unavailable_ms:
            self.fatal(UnavailableError(
                grpc.StatusCode.UNAVAILABLE,
                f"sepp at {self.client.address} was unreachable for {down_s:.1f} s, longer than max_unavailable_ms "
                f"({self.max_unavailable_ms}); last error: {error.message}",
            ))

    def connected(self) -> None:
        since = self._unavailable_since
        if since is not None:
            self._unavailable_since = None
            self.log.info("sepp worker %s: connected to sepp at %s again after %.1f s", self.worker_id,
                          self.client.address, time.monotonic() - since)

    def fatal(self, error: SeppError) -> None:
        """Stops the worker for an error asking again cannot fix (stops_worker, or an outage past
        `max_unavailable_ms`): said once, in the log and as an `error` event; `run()` raises it."""
        if self._fatal is not None:
            return
        self._fatal = error
        self.log.error("sepp worker %s: stopping: %s (%s)", self.worker_id, error.message, error.grpc_code.name)
        self.emit(WorkerEvent("error", error=error))
        self._stop.set()
        # A worker started with start() has no run() to close it.
        threading.Thread(target=self.close, name="sepp-worker-close", daemon=True).start()

    def cancel(self, job_id: str, attempt: int, error: JobCancelledError) -> None:
        with self._lock:
            found = next((a for a in self._active if a.job.id == job_id and a.job.attempt == attempt), None)
        # A notice about a lease this worker does not hold (any more) is ignored.
        if found is not None:
            self._runner.mark_cancelled(found, error)

    def timed_out(self, job_id: str, attempt: int, error: JobTimeoutError) -> None:
        with self._lock:
            found = next((a for a in self._active if a.job.id == job_id and a.job.attempt == attempt), None)
        # A notice about a lease this worker does not hold (any more) is ignored.
        if found is not None:
            self._runner.lose(found, error)

    def emit(self, event: WorkerEvent) -> None:
        if self._on_event is None:
            return
        try:
            self._on_event(event)
        except Exception:  # noqa: BLE001 - a failing listener must not break the worker
            self.log.exception("sepp worker %s: on_event failed for %s", self.worker_id, event.kind)

    # ------------------------------------------------------------------ jobs

    def _serve(self) -> None:
        while True:
            active = self._jobs.get()
            if active is None:
                return
            self._runner.run(active)

    def run_started(self) -> float:
        """When a handler starts, for `ran`. With `prefetch="auto"` and the server's
        `max_reserve_jobs` not known (its first ask failed: the server was down as the worker
        started), asked again: at most every 30 s, by one thread (the others wait for its answer)."""
        if self._prefetch.auto and self.client.connection.max_reserve_jobs == 0:
            self.client.connection.learn_server_bounds()
        return self._run_clock()

    def ran(self, started: float) -> None:
        """A handler started at `started` has finished and its settlement is being queued: with
        `prefetch="auto"`, the held-ahead limit is set again (before the slot's credit is asked)."""
        run_ms = (self._run_clock() - started) * 1000
        with self._lock:
            # Auto leases ahead only where close gives held jobs back uncounted: none from an older server.
            max_reserve_jobs = self.client.connection.max_reserve_jobs if self._can_give_back() else 0
            self._prefetch.ran(run_ms, max_reserve_jobs)

    def free_slot(self, active: Active) -> None:
        """Frees the job's slot, once, for the oldest held job whose lease is still ours, and asks for
        a job to take its place. Held jobs whose leases ran out unextended are dropped as lost, never
        started (`HeldJobs.take_next`)."""
        with self._lock:
            if active.slot_freed:
                return
            active.slot_freed = True
            following, lapsed = self._held.take_next(time.monotonic())
            if following is not None:
                following.slot_freed = False
                self._jobs.put(following)
            else:
                self._busy -= 1
        for late, error in lapsed:
            self._dropped(late, error)
        if self._state == "running":
            self._transport.release()

    def finish_job(self, active: Active) -> None:
        self._runner.unkeep(active)
        with self._lock:
            if active not in self._active:
                return
            self._active.discard(active)
            self._lock.notify_all()
        self.free_slot(active)

    def is_active(self, active: Active) -> bool:
        with self._lock:
            return active in self._active

    # ------------------------------------------------------------------ shutdown

    def close(self, timeout_ms: int | None = None) -> None:
        """Stops taking jobs and waits for running ones to finish and be settled. After
        `timeout_ms` (default `shutdown_timeout_ms`) their `cancelled` flags are set; handlers
        that return then are nacked for an immediate retry elsewhere, and any still running a
        second later are abandoned (their leases expire and the jobs come back)."""
        with self._lock:
            if self._closing:
                while self._state != "closed":
                    self._lock.wait()
                return
            self._closing = True
            was_running = self._state == "running"
            self._state = "closing"
        self._stop.set()
        self._transport.stop_taking()
        # Held jobs go back to the queue for other workers now, not when their leases end; none is
        # held from here on (`deliver` gives back a job that arrives while the worker closes), but
        # from a server without give-backs one on its last attempt stays to run. How they go back
        # depends on the server's features: learnt now if not yet (at most a few seconds).
        if self._held:
            self.client.connection.learn_server_bounds()
        with self._lock:
            given = self._held.take_to_give_back(not self._can_give_back())
        if given:
            self._held.settle_in_background(self._give_back, given)
        if was_running:
            timeout_s = (timeout_ms if timeout_ms is not None else self.shutdown_timeout_ms) / 1000
            if not self._wait_drained(timeout_s, forceable=True):
                reason = SeppError(grpc.StatusCode.CANCELLED,
                                   f"the worker is shutting down (waited {timeout_s * 1000:.0f} ms)", "cancelled")
                # Held jobs left (on their last attempt, from a server without give-backs) will not
                # start now: their leases run out.
                with self._lock:
                    left = self._held.take_all()
                for active in left:
                    active.abandoned = True
                    self.finish_job(active)
                with self._lock:
                    running = list(self._active)
                self.log.warning("sepp worker %s: cancelling %d jobs still running after %.0f ms", self.worker_id,
                                 len(running), timeout_s * 1000)
                for active in running:
                    active.stopped_for_shutdown = True
                    active.job._cancel(reason)
                if not self._wait_drained(ABORT_GRACE_S, forceable=False):
                    with self._lock:
                        running = list(self._active)
                    for active in running:
                        self.log.warning("sepp worker %s: abandoning job %s (its handler did not return); its lease "
                                         "expires and it runs again", self.worker_id, active.job.id)
                        active.abandoned = True
                        self.finish_job(active)
            self._transport.finish(ABORT_GRACE_S)
        else:
            self._transport.finish(0)
        for _ in self._threads:
            self._jobs.put(None)
        self._scheduler.stop()
        self._held.close()
        with self._lock:
            self._state = "closed"
            self._lock.notify_all()
        self.client._track(self, False)
        self._closed.set()
        self.log.info("sepp worker %s: closed", self.worker_id)
        self.emit(WorkerEvent("closed"))

    def _wait_drained(self, timeout_s: float, forceable: bool) -> bool:
        """True once no job is active, False after `timeout_s` (or a second signal)."""
        deadline = time.monotonic() + timeout_s
        with self._lock:
            while self._active:
                remaining = deadline - time.monotonic()
                if remaining <= 0 or (forceable and self._force.is_set()):
                    return False
                self._lock.wait(min(remaining, 0.1))
            return True
