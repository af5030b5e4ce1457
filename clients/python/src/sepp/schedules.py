"""Schedules: periodic jobs the server enqueues itself, on a cron expression or a
fixed interval, each tick exactly once (see docs/schedules.md). Reached as
`client.schedules`:

    client.schedules.upsert(
        "nightly-report",
        cron="30 2 * * *",
        timezone="Europe/Berlin",
        job=sepp.ScheduleJob("reports", "nightly", json={"kind": "daily"}),
    )
"""
from __future__ import annotations

import json as _json
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, Mapping

import grpc

from ._arguments import checked_arguments
from ._convert import payload_bytes, time_ms
from .errors import SeppError
from .models import UNSET, Enqueued, Payload, TimeInput
from .v1 import schedule_pb2

if TYPE_CHECKING:
    from ._connection import Connection

MisfirePolicy = Literal["run_latest", "skip", "catch_up"]
"""Ticks missed while the server was down or the schedule paused: run the latest once, none, or up to catch_up_max."""
OverlapPolicy = Literal["allow", "skip"]
"""A tick while the schedule's last job is unfinished: enqueue anyway, or skip it."""
ScheduleOutcome = Literal["enqueued", "deduplicated", "triggered", "skipped_overlap", "skipped_misfire", "rejected"]
"""How a schedule's last tick (or trigger) went."""

_MISFIRE: dict[str, int] = {
    "run_latest": schedule_pb2.MISFIRE_POLICY_RUN_LATEST,
    "skip": schedule_pb2.MISFIRE_POLICY_SKIP,
    "catch_up": schedule_pb2.MISFIRE_POLICY_CATCH_UP,
}
_OVERLAP: dict[str, int] = {"allow": schedule_pb2.OVERLAP_POLICY_ALLOW, "skip": schedule_pb2.OVERLAP_POLICY_SKIP}
_OUTCOME: dict[int, str] = {
    schedule_pb2.SCHEDULE_OUTCOME_ENQUEUED: "enqueued",
    schedule_pb2.SCHEDULE_OUTCOME_DEDUPLICATED: "deduplicated",
    schedule_pb2.SCHEDULE_OUTCOME_TRIGGERED: "triggered",
    schedule_pb2.SCHEDULE_OUTCOME_SKIPPED_OVERLAP: "skipped_overlap",
    schedule_pb2.SCHEDULE_OUTCOME_SKIPPED_MISFIRE: "skipped_misfire",
    schedule_pb2.SCHEDULE_OUTCOME_REJECTED: "rejected",
}


def _invalid(message: str) -> SeppError:
    return SeppError(grpc.StatusCode.INVALID_ARGUMENT, message)


@dataclass(frozen=True)
class ScheduleRun:
    """One run of a schedule (`client.schedules.runs`): a handled tick or a trigger. Times in ms
    since the epoch; `tick_ms` None for a trigger; `job_id` None when it made no job."""

    run_at_ms: int
    tick_ms: int | None
    outcome: str
    detail: str | None
    job_id: str | None


@dataclass(frozen=True)
class ScheduleJob:
    """The job each tick enqueues. `payload` is bytes or text; `json=` sends a value as JSON."""

    queue: str
    type: str
    payload: Payload | None = None
    json: Any = UNSET
    content_type: str | None = None
    priority: int = 0
    metadata: Mapping[str, str] | None = None
    max_attempts: int | None = None
    lease_ms: int | None = None
    """The job's own lease: a reserve asking for less (or nothing) gets this long, up to the queue's max."""
    execution_timeout_ms: int | None = None
    """Hard execution timeout of each attempt of its jobs, in ms (the protocol's `timeout_ms`);
    None: the queue's `default_timeout_ms`."""


@dataclass(frozen=True)
class ScheduleJobInfo:
    """A schedule's job as the server reports it; `payload` is None in `list()` (see payload_bytes)."""

    queue: str
    type: str
    payload: bytes | None
    payload_bytes: int
    content_type: str
    priority: int
    metadata: dict[str, str]
    max_attempts: int | None
    lease_ms: int | None
    execution_timeout_ms: int | None = None
    """The jobs' hard execution timeout per attempt, in ms; None: the queue's default."""


@dataclass(frozen=True)
class Schedule:
    """A schedule as the server reports it. Times are ms since the Unix epoch; None when not set."""

    name: str
    source: Literal["config", "api"]
    """`config`: declared in sepp.toml (change it there); `api`: made over the API."""
    cron: str | None
    interval_ms: int | None
    timezone: str
    job: ScheduleJobInfo
    misfire: MisfirePolicy
    catch_up_max: int
    overlap: OverlapPolicy
    jitter_ms: int
    start_at_ms: int | None
    end_at_ms: int | None
    paused: bool
    next_tick_ms: int | None
    """The next tick not yet handled; None when none will come (past end_at_ms)."""
    next_runs_ms: list[int] = field(default_factory=list)
    last_tick_ms: int | None = None
    last_run_at_ms: int | None = None
    last_outcome: ScheduleOutcome | None = None
    last_detail: str | None = None
    last_job_id: str | None = None
    ticks_enqueued: int = 0
    ticks_skipped: int = 0
    created_at_ms: int = 0
    updated_at_ms: int = 0

    @staticmethod
    def from_proto(schedule: schedule_pb2.Schedule) -> Schedule:
        spec, template = schedule.spec, schedule.spec.template
        timing = spec.WhichOneof("timing")
        empty_listing = len(template.payload) == 0 and template.payload_bytes > 0
        return Schedule(
            name=spec.name,
            source="config" if schedule.source == schedule_pb2.SCHEDULE_SOURCE_CONFIG else "api",
            cron=spec.cron if timing == "cron" else None,
            interval_ms=int(spec.interval_ms) if timing == "interval_ms" else None,
            timezone=spec.timezone,
            job=ScheduleJobInfo(
                queue=template.queue,
                type=template.type,
                payload=None if empty_listing else bytes(template.payload),
                payload_bytes=int(template.payload_bytes),
                content_type=template.content_type,
                priority=template.priority,
                metadata=dict(template.metadata),
                max_attempts=template.max_attempts or None,
                lease_ms=optional(template.lease_ms),
                execution_timeout_ms=optional(template.timeout_ms),
            ),
            misfire=_name(_MISFIRE, spec.misfire, "run_latest"),  # type: ignore[arg-type]
            catch_up_max=spec.catch_up_max,
            overlap=_name(_OVERLAP, spec.overlap, "allow"),  # type: ignore[arg-type]
            jitter_ms=int(spec.jitter_ms),
            start_at_ms=optional(spec.start_at_ms),
            end_at_ms=optional(spec.end_at_ms),
            paused=schedule.paused,
            next_tick_ms=optional(schedule.next_tick_ms),
            next_runs_ms=[int(ms) for ms in schedule.next_runs_ms],
            last_tick_ms=optional(schedule.last_tick_ms),
            last_run_at_ms=optional(schedule.last_run_at_ms),
            last_outcome=_OUTCOME.get(schedule.last_outcome),  # type: ignore[arg-type]
            last_detail=schedule.last_detail or None,
            last_job_id=schedule.last_job_id or None,
            ticks_enqueued=int(schedule.ticks_enqueued),
            ticks_skipped=int(schedule.ticks_skipped),
            created_at_ms=int(schedule.created_at_ms),
            updated_at_ms=int(schedule.updated_at_ms),
        )


def optional(ms: int) -> int | None:
    """0 means "not set" in the protocol."""
    return int(ms) or None


def _name(table: dict[str, int], value: int, default: str) -> str:
    return next((name for name, number in table.items() if number == value), default)


def _choice(table: dict[str, int], value: str, name: str) -> int:
    if value not in table:
        raise _invalid(f"{name}: {value!r} is not one of {', '.join(table)}")
    return table[value]


def spec_to_proto(
    name: str,
    job: ScheduleJob,
    *,
    cron: str | None,
    interval_ms: int | None,
    timezone: str | None,
    misfire: MisfirePolicy | None,
    catch_up_max: int | None,
    overlap: OverlapPolicy | None,
    jitter_ms: int | None,
    start_at: TimeInput | None,
    end_at: TimeInput | None,
) -> schedule_pb2.ScheduleSpec:
    """The protocol's spec; raises SeppError (invalid_argument) for what cannot be sent."""
    if not isinstance(job, ScheduleJob):
        raise TypeError("job: give a sepp.ScheduleJob(queue, type, ...)")
    if cron is not None and interval_ms is not None:
        raise _invalid("give cron or interval_ms, not both")
    if job.json is not UNSET and job.payload is not None:
        raise _invalid("job: give payload or json, not both")
    if job.json is not UNSET:
        payload = _json.dumps(job.json, separators=(",", ":"), ensure_ascii=False).encode("utf-8")
        content_type = job.content_type or "application/json"
    else:
        payload = payload_bytes(job.payload)
        content_type = job.content_type or ""
    spec = schedule_pb2.ScheduleSpec(
        name=name,
        timezone=timezone or "",
        template=schedule_pb2.JobTemplate(
            queue=job.queue, type=job.type, payload=payload, content_type=content_type, priority=job.priority,
            metadata=dict(job.metadata or {}), max_attempts=job.max_attempts or 0, lease_ms=job.lease_ms or 0,
            timeout_ms=job.execution_timeout_ms or 0,
        ),
        misfire=schedule_pb2.MisfirePolicy.Name(_choice(_MISFIRE, misfire, "misfire") if misfire is not None else 0),
        catch_up_max=catch_up_max or 0,
        overlap=schedule_pb2.OverlapPolicy.Name(_choice(_OVERLAP, overlap, "overlap") if overlap is not None else 0),
        jitter_ms=jitter_ms or 0,
        start_at_ms=time_ms(start_at, "start_at") if start_at is not None else 0,
        end_at_ms=time_ms(end_at, "end_at") if end_at is not None else 0,
    )
    if cron is not None:
        spec.cron = cron
    if interval_ms is not None:
        spec.interval_ms = interval_ms
    return spec


@checked_arguments
class Schedules:
    """The schedule calls of a client (`client.schedules`). Changes need an admin key."""

    def __init__(self, conn: Connection) -> None:
        self._conn = conn

    def create(
        self, name: str, *, job: ScheduleJob, cron: str | None = None, interval_ms: int | None = None,
        timezone: str | None = None, misfire: MisfirePolicy | None = None, catch_up_max: int | None = None,
        overlap: OverlapPolicy | None = None, jitter_ms: int | None = None, start_at: TimeInput | None = None,
        end_at: TimeInput | None = None, deadline_ms: int | None = None,
    ) -> Schedule:
        """Creates a schedule: exactly one of `cron` (5 fields, or 6 with seconds first) and
        `interval_ms`. Raises SeppError `already_exists` when the name is taken."""
        spec = spec_to_proto(name, job, cron=cron, interval_ms=interval_ms, timezone=timezone, misfire=misfire,
                             catch_up_max=catch_up_max, overlap=overlap, jitter_ms=jitter_ms, start_at=start_at,
                             end_at=end_at)
        # A repeat after UNAVAILABLE would find it there (already_exists) rather than make two: not retried.
        response = self._conn.invoke(self._conn.stub.CreateSchedule, schedule_pb2.CreateScheduleRequest(schedule=spec),
                                     deadline_ms=deadline_ms, retry_safe=False)
        return Schedule.from_proto(response.schedule)

    def upsert(
        self, name: str, *, job: ScheduleJob, cron: str | None = None, interval_ms: int | None = None,
        timezone: str | None = None, misfire: MisfirePolicy | None = None, catch_up_max: int | None = None,
        overlap: OverlapPolicy | None = None, jitter_ms: int | None = None, start_at: TimeInput | None = None,
        end_at: TimeInput | None = None, create: bool = True, deadline_ms: int | None = None,
    ) -> tuple[Schedule, bool]:
        """Creates or changes a schedule made over the API; returns it and whether it was
        created. With `create=False` a missing schedule is `not_found` (an update). An
        unchanged timing keeps the next tick; a paused schedule stays paused."""
        spec = spec_to_proto(name, job, cron=cron, interval_ms=interval_ms, timezone=timezone, misfire=misfire,
                             catch_up_max=catch_up_max, overlap=overlap, jitter_ms=jitter_ms, start_at=start_at,
                             end_at=end_at)
        request = schedule_pb2.UpdateScheduleRequest(schedule=spec, allow_missing=create)
        # Setting a definition twice leaves the same definition.
        response = self._conn.invoke(self._conn.stub.UpdateSchedule, request, deadline_ms=deadline_ms, retry_safe=True)
        return Schedule.from_proto(response.schedule), response.created

    def get(self, name: str, *, next_runs: int = 10, deadline_ms: int | None = None) -> Schedule:
        """One schedule, with its payload and next `next_runs` run times (1-100)."""
        request = schedule_pb2.GetScheduleRequest(name=name, next_runs=next_runs)
        return Schedule.from_proto(self._read(self._conn.stub.GetSchedule, request, deadline_ms).schedule)

    def runs(self, name: str, *, deadline_ms: int | None = None) -> list[ScheduleRun]:
        """A schedule's latest runs, newest first (the server keeps the last 20), each with its job."""
        request = schedule_pb2.GetScheduleRequest(name=name, next_runs=1)
        response = self._read(self._conn.stub.GetSchedule, request, deadline_ms)
        return [ScheduleRun(run.run_at_ms, run.tick_ms or None, _OUTCOME.get(run.outcome, "enqueued"),
                            run.detail or None, run.job_id or None) for run in response.runs]

    def list(self, *, next_runs: int = 1, deadline_ms: int | None = None) -> list[Schedule]:
        """Every schedule by name, each with its next `next_runs` run times (1-10); no payloads.
        Follows the server's pages (at most its `max_schedules` schedules in all)."""
        schedules: list[Schedule] = []
        page_token = ""
        while True:
            request = schedule_pb2.ListSchedulesRequest(next_runs=next_runs, page_token=page_token)
            response = self._read(self._conn.stub.ListSchedules, request, deadline_ms)
            schedules.extend(Schedule.from_proto(s) for s in response.schedules)
            page_token = response.next_page_token
            if page_token == "":
                return schedules

    def pause(self, name: str, *, deadline_ms: int | None = None) -> Schedule:
        """Stops a schedule ticking (config schedules too)."""
        request = schedule_pb2.PauseScheduleRequest(name=name)
        return Schedule.from_proto(self._read(self._conn.stub.PauseSchedule, request, deadline_ms).schedule)

    def resume(self, name: str, *, deadline_ms: int | None = None) -> Schedule:
        """Lets a paused schedule tick again; the ticks it missed follow its misfire policy."""
        request = schedule_pb2.ResumeScheduleRequest(name=name)
        return Schedule.from_proto(self._read(self._conn.stub.ResumeSchedule, request, deadline_ms).schedule)

    def delete(self, name: str, *, deadline_ms: int | None = None) -> None:
        """Deletes a schedule made over the API; the jobs it enqueued stay."""
        self._read(self._conn.stub.DeleteSchedule, schedule_pb2.DeleteScheduleRequest(name=name), deadline_ms)

    def trigger(self, name: str, *, deadline_ms: int | None = None) -> Enqueued:
        """Enqueues the schedule's job now, outside its ticks (paused or not)."""
        # Each trigger enqueues a job: never repeated by the client.
        response = self._conn.invoke(self._conn.stub.TriggerSchedule, schedule_pb2.TriggerScheduleRequest(name=name),
                                     deadline_ms=deadline_ms, retry_safe=False)
        return Enqueued(response.job_id, response.deduplicated)

    def _read(self, method: Any, request: Any, deadline_ms: int | None) -> Any:
        # Reads, and changes whose repeat has no further effect: safe to retry after UNAVAILABLE.
        return self._conn.invoke(method, request, deadline_ms=deadline_ms, retry_safe=True)
