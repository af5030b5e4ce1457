from sepp.v1 import batch_pb2 as _batch_pb2
from sepp.v1 import job_pb2 as _job_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from typing import ClassVar as _ClassVar, Iterable as _Iterable, Mapping as _Mapping, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor
JOB_EVENT_KIND_BATCH_ENDED: JobEventKind
JOB_EVENT_KIND_BATCH_FIRST_DEATH: JobEventKind
JOB_EVENT_KIND_CANCELLED: JobEventKind
JOB_EVENT_KIND_COMPLETED: JobEventKind
JOB_EVENT_KIND_DEAD_LETTERED: JobEventKind
JOB_EVENT_KIND_ENQUEUED: JobEventKind
JOB_EVENT_KIND_LEASED: JobEventKind
JOB_EVENT_KIND_LEASE_UNDONE: JobEventKind
JOB_EVENT_KIND_PROGRESS: JobEventKind
JOB_EVENT_KIND_RELEASED: JobEventKind
JOB_EVENT_KIND_RETRY_SCHEDULED: JobEventKind
JOB_EVENT_KIND_UNSPECIFIED: JobEventKind

class EventsRequest(_message.Message):
    __slots__ = ["after_sequence", "all_kinds", "from_oldest", "job_ids", "kinds", "queues", "stream_id"]
    AFTER_SEQUENCE_FIELD_NUMBER: _ClassVar[int]
    ALL_KINDS_FIELD_NUMBER: _ClassVar[int]
    FROM_OLDEST_FIELD_NUMBER: _ClassVar[int]
    JOB_IDS_FIELD_NUMBER: _ClassVar[int]
    KINDS_FIELD_NUMBER: _ClassVar[int]
    QUEUES_FIELD_NUMBER: _ClassVar[int]
    STREAM_ID_FIELD_NUMBER: _ClassVar[int]
    after_sequence: int
    all_kinds: bool
    from_oldest: bool
    job_ids: _containers.RepeatedScalarFieldContainer[str]
    kinds: _containers.RepeatedScalarFieldContainer[JobEventKind]
    queues: _containers.RepeatedScalarFieldContainer[str]
    stream_id: str
    def __init__(self, queues: _Optional[_Iterable[str]] = ..., job_ids: _Optional[_Iterable[str]] = ..., kinds: _Optional[_Iterable[_Union[JobEventKind, str]]] = ..., after_sequence: _Optional[int] = ..., stream_id: _Optional[str] = ..., from_oldest: bool = ..., all_kinds: bool = ...) -> None: ...

class EventsResponse(_message.Message):
    __slots__ = ["caught_up", "events", "sequence", "stream_id"]
    CAUGHT_UP_FIELD_NUMBER: _ClassVar[int]
    EVENTS_FIELD_NUMBER: _ClassVar[int]
    SEQUENCE_FIELD_NUMBER: _ClassVar[int]
    STREAM_ID_FIELD_NUMBER: _ClassVar[int]
    caught_up: bool
    events: _containers.RepeatedCompositeFieldContainer[JobEvent]
    sequence: int
    stream_id: str
    def __init__(self, stream_id: _Optional[str] = ..., events: _Optional[_Iterable[_Union[JobEvent, _Mapping]]] = ..., caught_up: bool = ..., sequence: _Optional[int] = ...) -> None: ...

class JobEvent(_message.Message):
    __slots__ = ["at_ms", "attempt", "batch", "dead_reason", "error", "job_id", "kind", "lease_deadline_ms", "previous_state", "priority", "progress", "queue", "result", "retained", "run_at_ms", "sequence", "state", "type", "worker_id"]
    ATTEMPT_FIELD_NUMBER: _ClassVar[int]
    AT_MS_FIELD_NUMBER: _ClassVar[int]
    BATCH_FIELD_NUMBER: _ClassVar[int]
    DEAD_REASON_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    JOB_ID_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    LEASE_DEADLINE_MS_FIELD_NUMBER: _ClassVar[int]
    PREVIOUS_STATE_FIELD_NUMBER: _ClassVar[int]
    PRIORITY_FIELD_NUMBER: _ClassVar[int]
    PROGRESS_FIELD_NUMBER: _ClassVar[int]
    QUEUE_FIELD_NUMBER: _ClassVar[int]
    RESULT_FIELD_NUMBER: _ClassVar[int]
    RETAINED_FIELD_NUMBER: _ClassVar[int]
    RUN_AT_MS_FIELD_NUMBER: _ClassVar[int]
    SEQUENCE_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    TYPE_FIELD_NUMBER: _ClassVar[int]
    WORKER_ID_FIELD_NUMBER: _ClassVar[int]
    at_ms: int
    attempt: int
    batch: _batch_pb2.Batch
    dead_reason: _job_pb2.DeadReason
    error: str
    job_id: str
    kind: JobEventKind
    lease_deadline_ms: int
    previous_state: _job_pb2.JobState
    priority: int
    progress: _job_pb2.JobProgress
    queue: str
    result: _job_pb2.JobResult
    retained: bool
    run_at_ms: int
    sequence: int
    state: _job_pb2.JobState
    type: str
    worker_id: str
    def __init__(self, sequence: _Optional[int] = ..., kind: _Optional[_Union[JobEventKind, str]] = ..., at_ms: _Optional[int] = ..., job_id: _Optional[str] = ..., queue: _Optional[str] = ..., type: _Optional[str] = ..., attempt: _Optional[int] = ..., state: _Optional[_Union[_job_pb2.JobState, str]] = ..., run_at_ms: _Optional[int] = ..., priority: _Optional[int] = ..., lease_deadline_ms: _Optional[int] = ..., worker_id: _Optional[str] = ..., progress: _Optional[_Union[_job_pb2.JobProgress, _Mapping]] = ..., result: _Optional[_Union[_job_pb2.JobResult, _Mapping]] = ..., retained: bool = ..., error: _Optional[str] = ..., dead_reason: _Optional[_Union[_job_pb2.DeadReason, str]] = ..., previous_state: _Optional[_Union[_job_pb2.JobState, str]] = ..., batch: _Optional[_Union[_batch_pb2.Batch, _Mapping]] = ...) -> None: ...

class JobEventKind(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = []
