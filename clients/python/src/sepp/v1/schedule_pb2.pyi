from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from typing import ClassVar as _ClassVar, Iterable as _Iterable, Mapping as _Mapping, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor
MISFIRE_POLICY_CATCH_UP: MisfirePolicy
MISFIRE_POLICY_RUN_LATEST: MisfirePolicy
MISFIRE_POLICY_SKIP: MisfirePolicy
MISFIRE_POLICY_UNSPECIFIED: MisfirePolicy
OVERLAP_POLICY_ALLOW: OverlapPolicy
OVERLAP_POLICY_SKIP: OverlapPolicy
OVERLAP_POLICY_UNSPECIFIED: OverlapPolicy
SCHEDULE_OUTCOME_DEDUPLICATED: ScheduleOutcome
SCHEDULE_OUTCOME_ENQUEUED: ScheduleOutcome
SCHEDULE_OUTCOME_REJECTED: ScheduleOutcome
SCHEDULE_OUTCOME_SKIPPED_MISFIRE: ScheduleOutcome
SCHEDULE_OUTCOME_SKIPPED_OVERLAP: ScheduleOutcome
SCHEDULE_OUTCOME_TRIGGERED: ScheduleOutcome
SCHEDULE_OUTCOME_UNSPECIFIED: ScheduleOutcome
SCHEDULE_SOURCE_API: ScheduleSource
SCHEDULE_SOURCE_CONFIG: ScheduleSource
SCHEDULE_SOURCE_UNSPECIFIED: ScheduleSource

class CreateScheduleRequest(_message.Message):
    __slots__ = ["schedule"]
    SCHEDULE_FIELD_NUMBER: _ClassVar[int]
    schedule: ScheduleSpec
    def __init__(self, schedule: _Optional[_Union[ScheduleSpec, _Mapping]] = ...) -> None: ...

class CreateScheduleResponse(_message.Message):
    __slots__ = ["schedule"]
    SCHEDULE_FIELD_NUMBER: _ClassVar[int]
    schedule: Schedule
    def __init__(self, schedule: _Optional[_Union[Schedule, _Mapping]] = ...) -> None: ...

class DeleteScheduleRequest(_message.Message):
    __slots__ = ["name"]
    NAME_FIELD_NUMBER: _ClassVar[int]
    name: str
    def __init__(self, name: _Optional[str] = ...) -> None: ...

class DeleteScheduleResponse(_message.Message):
    __slots__ = []
    def __init__(self) -> None: ...

class GetScheduleRequest(_message.Message):
    __slots__ = ["name", "next_runs"]
    NAME_FIELD_NUMBER: _ClassVar[int]
    NEXT_RUNS_FIELD_NUMBER: _ClassVar[int]
    name: str
    next_runs: int
    def __init__(self, name: _Optional[str] = ..., next_runs: _Optional[int] = ...) -> None: ...

class GetScheduleResponse(_message.Message):
    __slots__ = ["runs", "schedule"]
    RUNS_FIELD_NUMBER: _ClassVar[int]
    SCHEDULE_FIELD_NUMBER: _ClassVar[int]
    runs: _containers.RepeatedCompositeFieldContainer[ScheduleRun]
    schedule: Schedule
    def __init__(self, schedule: _Optional[_Union[Schedule, _Mapping]] = ..., runs: _Optional[_Iterable[_Union[ScheduleRun, _Mapping]]] = ...) -> None: ...

class JobTemplate(_message.Message):
    __slots__ = ["content_type", "lease_ms", "max_attempts", "metadata", "payload", "payload_bytes", "priority", "queue", "timeout_ms", "type"]
    class MetadataEntry(_message.Message):
        __slots__ = ["key", "value"]
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    CONTENT_TYPE_FIELD_NUMBER: _ClassVar[int]
    LEASE_MS_FIELD_NUMBER: _ClassVar[int]
    MAX_ATTEMPTS_FIELD_NUMBER: _ClassVar[int]
    METADATA_FIELD_NUMBER: _ClassVar[int]
    PAYLOAD_BYTES_FIELD_NUMBER: _ClassVar[int]
    PAYLOAD_FIELD_NUMBER: _ClassVar[int]
    PRIORITY_FIELD_NUMBER: _ClassVar[int]
    QUEUE_FIELD_NUMBER: _ClassVar[int]
    TIMEOUT_MS_FIELD_NUMBER: _ClassVar[int]
    TYPE_FIELD_NUMBER: _ClassVar[int]
    content_type: str
    lease_ms: int
    max_attempts: int
    metadata: _containers.ScalarMap[str, str]
    payload: bytes
    payload_bytes: int
    priority: int
    queue: str
    timeout_ms: int
    type: str
    def __init__(self, queue: _Optional[str] = ..., type: _Optional[str] = ..., payload: _Optional[bytes] = ..., content_type: _Optional[str] = ..., priority: _Optional[int] = ..., metadata: _Optional[_Mapping[str, str]] = ..., max_attempts: _Optional[int] = ..., lease_ms: _Optional[int] = ..., payload_bytes: _Optional[int] = ..., timeout_ms: _Optional[int] = ...) -> None: ...

class ListSchedulesRequest(_message.Message):
    __slots__ = ["next_runs", "page_size", "page_token"]
    NEXT_RUNS_FIELD_NUMBER: _ClassVar[int]
    PAGE_SIZE_FIELD_NUMBER: _ClassVar[int]
    PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    next_runs: int
    page_size: int
    page_token: str
    def __init__(self, next_runs: _Optional[int] = ..., page_size: _Optional[int] = ..., page_token: _Optional[str] = ...) -> None: ...

class ListSchedulesResponse(_message.Message):
    __slots__ = ["next_page_token", "schedules"]
    NEXT_PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    SCHEDULES_FIELD_NUMBER: _ClassVar[int]
    next_page_token: str
    schedules: _containers.RepeatedCompositeFieldContainer[Schedule]
    def __init__(self, schedules: _Optional[_Iterable[_Union[Schedule, _Mapping]]] = ..., next_page_token: _Optional[str] = ...) -> None: ...

class PauseScheduleRequest(_message.Message):
    __slots__ = ["name"]
    NAME_FIELD_NUMBER: _ClassVar[int]
    name: str
    def __init__(self, name: _Optional[str] = ...) -> None: ...

class PauseScheduleResponse(_message.Message):
    __slots__ = ["schedule"]
    SCHEDULE_FIELD_NUMBER: _ClassVar[int]
    schedule: Schedule
    def __init__(self, schedule: _Optional[_Union[Schedule, _Mapping]] = ...) -> None: ...

class ResumeScheduleRequest(_message.Message):
    __slots__ = ["name"]
    NAME_FIELD_NUMBER: _ClassVar[int]
    name: str
    def __init__(self, name: _Optional[str] = ...) -> None: ...

class ResumeScheduleResponse(_message.Message):
    __slots__ = ["schedule"]
    SCHEDULE_FIELD_NUMBER: _ClassVar[int]
    schedule: Schedule
    def __init__(self, schedule: _Optional[_Union[Schedule, _Mapping]] = ...) -> None: ...

class Schedule(_message.Message):
    __slots__ = ["created_at_ms", "last_detail", "last_job_id", "last_outcome", "last_run_at_ms", "last_tick_ms", "next_runs_ms", "next_tick_ms", "paused", "source", "spec", "ticks_enqueued", "ticks_skipped", "updated_at_ms"]
    CREATED_AT_MS_FIELD_NUMBER: _ClassVar[int]
    LAST_DETAIL_FIELD_NUMBER: _ClassVar[int]
    LAST_JOB_ID_FIELD_NUMBER: _ClassVar[int]
    LAST_OUTCOME_FIELD_NUMBER: _ClassVar[int]
    LAST_RUN_AT_MS_FIELD_NUMBER: _ClassVar[int]
    LAST_TICK_MS_FIELD_NUMBER: _ClassVar[int]
    NEXT_RUNS_MS_FIELD_NUMBER: _ClassVar[int]
    NEXT_TICK_MS_FIELD_NUMBER: _ClassVar[int]
    PAUSED_FIELD_NUMBER: _ClassVar[int]
    SOURCE_FIELD_NUMBER: _ClassVar[int]
    SPEC_FIELD_NUMBER: _ClassVar[int]
    TICKS_ENQUEUED_FIELD_NUMBER: _ClassVar[int]
    TICKS_SKIPPED_FIELD_NUMBER: _ClassVar[int]
    UPDATED_AT_MS_FIELD_NUMBER: _ClassVar[int]
    created_at_ms: int
    last_detail: str
    last_job_id: str
    last_outcome: ScheduleOutcome
    last_run_at_ms: int
    last_tick_ms: int
    next_runs_ms: _containers.RepeatedScalarFieldContainer[int]
    next_tick_ms: int
    paused: bool
    source: ScheduleSource
    spec: ScheduleSpec
    ticks_enqueued: int
    ticks_skipped: int
    updated_at_ms: int
    def __init__(self, spec: _Optional[_Union[ScheduleSpec, _Mapping]] = ..., source: _Optional[_Union[ScheduleSource, str]] = ..., paused: bool = ..., next_tick_ms: _Optional[int] = ..., next_runs_ms: _Optional[_Iterable[int]] = ..., last_tick_ms: _Optional[int] = ..., last_run_at_ms: _Optional[int] = ..., last_outcome: _Optional[_Union[ScheduleOutcome, str]] = ..., last_detail: _Optional[str] = ..., last_job_id: _Optional[str] = ..., ticks_enqueued: _Optional[int] = ..., ticks_skipped: _Optional[int] = ..., created_at_ms: _Optional[int] = ..., updated_at_ms: _Optional[int] = ...) -> None: ...

class ScheduleRun(_message.Message):
    __slots__ = ["detail", "job_id", "outcome", "run_at_ms", "tick_ms"]
    DETAIL_FIELD_NUMBER: _ClassVar[int]
    JOB_ID_FIELD_NUMBER: _ClassVar[int]
    OUTCOME_FIELD_NUMBER: _ClassVar[int]
    RUN_AT_MS_FIELD_NUMBER: _ClassVar[int]
    TICK_MS_FIELD_NUMBER: _ClassVar[int]
    detail: str
    job_id: str
    outcome: ScheduleOutcome
    run_at_ms: int
    tick_ms: int
    def __init__(self, run_at_ms: _Optional[int] = ..., tick_ms: _Optional[int] = ..., outcome: _Optional[_Union[ScheduleOutcome, str]] = ..., detail: _Optional[str] = ..., job_id: _Optional[str] = ...) -> None: ...

class ScheduleSpec(_message.Message):
    __slots__ = ["catch_up_max", "cron", "end_at_ms", "interval_ms", "jitter_ms", "misfire", "name", "overlap", "start_at_ms", "template", "timezone"]
    CATCH_UP_MAX_FIELD_NUMBER: _ClassVar[int]
    CRON_FIELD_NUMBER: _ClassVar[int]
    END_AT_MS_FIELD_NUMBER: _ClassVar[int]
    INTERVAL_MS_FIELD_NUMBER: _ClassVar[int]
    JITTER_MS_FIELD_NUMBER: _ClassVar[int]
    MISFIRE_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    OVERLAP_FIELD_NUMBER: _ClassVar[int]
    START_AT_MS_FIELD_NUMBER: _ClassVar[int]
    TEMPLATE_FIELD_NUMBER: _ClassVar[int]
    TIMEZONE_FIELD_NUMBER: _ClassVar[int]
    catch_up_max: int
    cron: str
    end_at_ms: int
    interval_ms: int
    jitter_ms: int
    misfire: MisfirePolicy
    name: str
    overlap: OverlapPolicy
    start_at_ms: int
    template: JobTemplate
    timezone: str
    def __init__(self, name: _Optional[str] = ..., cron: _Optional[str] = ..., interval_ms: _Optional[int] = ..., timezone: _Optional[str] = ..., template: _Optional[_Union[JobTemplate, _Mapping]] = ..., misfire: _Optional[_Union[MisfirePolicy, str]] = ..., catch_up_max: _Optional[int] = ..., overlap: _Optional[_Union[OverlapPolicy, str]] = ..., jitter_ms: _Optional[int] = ..., start_at_ms: _Optional[int] = ..., end_at_ms: _Optional[int] = ...) -> None: ...

class TriggerScheduleRequest(_message.Message):
    __slots__ = ["name"]
    NAME_FIELD_NUMBER: _ClassVar[int]
    name: str
    def __init__(self, name: _Optional[str] = ...) -> None: ...

class TriggerScheduleResponse(_message.Message):
    __slots__ = ["deduplicated", "job_id"]
    DEDUPLICATED_FIELD_NUMBER: _ClassVar[int]
    JOB_ID_FIELD_NUMBER: _ClassVar[int]
    deduplicated: bool
    job_id: str
    def __init__(self, job_id: _Optional[str] = ..., deduplicated: bool = ...) -> None: ...

class UpdateScheduleRequest(_message.Message):
    __slots__ = ["allow_missing", "schedule"]
    ALLOW_MISSING_FIELD_NUMBER: _ClassVar[int]
    SCHEDULE_FIELD_NUMBER: _ClassVar[int]
    allow_missing: bool
    schedule: ScheduleSpec
    def __init__(self, schedule: _Optional[_Union[ScheduleSpec, _Mapping]] = ..., allow_missing: bool = ...) -> None: ...

class UpdateScheduleResponse(_message.Message):
    __slots__ = ["created", "schedule"]
    CREATED_FIELD_NUMBER: _ClassVar[int]
    SCHEDULE_FIELD_NUMBER: _ClassVar[int]
    created: bool
    schedule: Schedule
    def __init__(self, schedule: _Optional[_Union[Schedule, _Mapping]] = ..., created: bool = ...) -> None: ...

class MisfirePolicy(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = []

class OverlapPolicy(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = []

class ScheduleSource(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = []

class ScheduleOutcome(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = []
