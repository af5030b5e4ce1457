from sepp.v1 import job_pb2 as _job_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from typing import ClassVar as _ClassVar, Iterable as _Iterable, Mapping as _Mapping, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor
SETTLE_OUTCOME_CANCELLED: SettleOutcome
SETTLE_OUTCOME_LEASE_LOST: SettleOutcome
SETTLE_OUTCOME_NOT_FOUND: SettleOutcome
SETTLE_OUTCOME_OK: SettleOutcome
SETTLE_OUTCOME_UNSPECIFIED: SettleOutcome

class AckBatchRequest(_message.Message):
    __slots__ = ["acks"]
    ACKS_FIELD_NUMBER: _ClassVar[int]
    acks: _containers.RepeatedCompositeFieldContainer[AckRequest]
    def __init__(self, acks: _Optional[_Iterable[_Union[AckRequest, _Mapping]]] = ...) -> None: ...

class AckBatchResponse(_message.Message):
    __slots__ = ["results"]
    RESULTS_FIELD_NUMBER: _ClassVar[int]
    results: _containers.RepeatedCompositeFieldContainer[AckResult]
    def __init__(self, results: _Optional[_Iterable[_Union[AckResult, _Mapping]]] = ...) -> None: ...

class AckRequest(_message.Message):
    __slots__ = ["attempt", "job_id", "result"]
    ATTEMPT_FIELD_NUMBER: _ClassVar[int]
    JOB_ID_FIELD_NUMBER: _ClassVar[int]
    RESULT_FIELD_NUMBER: _ClassVar[int]
    attempt: int
    job_id: str
    result: _job_pb2.JobResult
    def __init__(self, job_id: _Optional[str] = ..., attempt: _Optional[int] = ..., result: _Optional[_Union[_job_pb2.JobResult, _Mapping]] = ...) -> None: ...

class AckResponse(_message.Message):
    __slots__ = []
    def __init__(self) -> None: ...

class AckResult(_message.Message):
    __slots__ = ["message", "outcome"]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    OUTCOME_FIELD_NUMBER: _ClassVar[int]
    message: str
    outcome: SettleOutcome
    def __init__(self, outcome: _Optional[_Union[SettleOutcome, str]] = ..., message: _Optional[str] = ...) -> None: ...

class ExtendRequest(_message.Message):
    __slots__ = ["attempt", "job_id", "lease_duration_ms"]
    ATTEMPT_FIELD_NUMBER: _ClassVar[int]
    JOB_ID_FIELD_NUMBER: _ClassVar[int]
    LEASE_DURATION_MS_FIELD_NUMBER: _ClassVar[int]
    attempt: int
    job_id: str
    lease_duration_ms: int
    def __init__(self, job_id: _Optional[str] = ..., attempt: _Optional[int] = ..., lease_duration_ms: _Optional[int] = ...) -> None: ...

class ExtendResponse(_message.Message):
    __slots__ = ["lease_deadline_ms"]
    LEASE_DEADLINE_MS_FIELD_NUMBER: _ClassVar[int]
    lease_deadline_ms: int
    def __init__(self, lease_deadline_ms: _Optional[int] = ...) -> None: ...

class NackRequest(_message.Message):
    __slots__ = ["attempt", "backoff", "dead_letter", "error_class", "error_message", "error_stack", "give_back", "job_id", "retry_delay_ms"]
    ATTEMPT_FIELD_NUMBER: _ClassVar[int]
    BACKOFF_FIELD_NUMBER: _ClassVar[int]
    DEAD_LETTER_FIELD_NUMBER: _ClassVar[int]
    ERROR_CLASS_FIELD_NUMBER: _ClassVar[int]
    ERROR_MESSAGE_FIELD_NUMBER: _ClassVar[int]
    ERROR_STACK_FIELD_NUMBER: _ClassVar[int]
    GIVE_BACK_FIELD_NUMBER: _ClassVar[int]
    JOB_ID_FIELD_NUMBER: _ClassVar[int]
    RETRY_DELAY_MS_FIELD_NUMBER: _ClassVar[int]
    attempt: int
    backoff: bool
    dead_letter: bool
    error_class: str
    error_message: str
    error_stack: str
    give_back: bool
    job_id: str
    retry_delay_ms: int
    def __init__(self, job_id: _Optional[str] = ..., attempt: _Optional[int] = ..., error_message: _Optional[str] = ..., backoff: bool = ..., retry_delay_ms: _Optional[int] = ..., dead_letter: bool = ..., give_back: bool = ..., error_class: _Optional[str] = ..., error_stack: _Optional[str] = ...) -> None: ...

class NackResponse(_message.Message):
    __slots__ = ["run_at_ms", "state"]
    RUN_AT_MS_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    run_at_ms: int
    state: _job_pb2.JobState
    def __init__(self, state: _Optional[_Union[_job_pb2.JobState, str]] = ..., run_at_ms: _Optional[int] = ...) -> None: ...

class ReportProgressRequest(_message.Message):
    __slots__ = ["attempt", "has_percent", "job_id", "json", "percent"]
    ATTEMPT_FIELD_NUMBER: _ClassVar[int]
    HAS_PERCENT_FIELD_NUMBER: _ClassVar[int]
    JOB_ID_FIELD_NUMBER: _ClassVar[int]
    JSON_FIELD_NUMBER: _ClassVar[int]
    PERCENT_FIELD_NUMBER: _ClassVar[int]
    attempt: int
    has_percent: bool
    job_id: str
    json: str
    percent: float
    def __init__(self, job_id: _Optional[str] = ..., attempt: _Optional[int] = ..., percent: _Optional[float] = ..., has_percent: bool = ..., json: _Optional[str] = ...) -> None: ...

class ReportProgressResponse(_message.Message):
    __slots__ = ["progress"]
    PROGRESS_FIELD_NUMBER: _ClassVar[int]
    progress: _job_pb2.JobProgress
    def __init__(self, progress: _Optional[_Union[_job_pb2.JobProgress, _Mapping]] = ...) -> None: ...

class ReserveRequest(_message.Message):
    __slots__ = ["lease_duration_ms", "max_jobs", "max_response_bytes", "queues", "wait_timeout_ms", "worker_id"]
    LEASE_DURATION_MS_FIELD_NUMBER: _ClassVar[int]
    MAX_JOBS_FIELD_NUMBER: _ClassVar[int]
    MAX_RESPONSE_BYTES_FIELD_NUMBER: _ClassVar[int]
    QUEUES_FIELD_NUMBER: _ClassVar[int]
    WAIT_TIMEOUT_MS_FIELD_NUMBER: _ClassVar[int]
    WORKER_ID_FIELD_NUMBER: _ClassVar[int]
    lease_duration_ms: int
    max_jobs: int
    max_response_bytes: int
    queues: _containers.RepeatedScalarFieldContainer[str]
    wait_timeout_ms: int
    worker_id: str
    def __init__(self, queues: _Optional[_Iterable[str]] = ..., max_jobs: _Optional[int] = ..., lease_duration_ms: _Optional[int] = ..., wait_timeout_ms: _Optional[int] = ..., worker_id: _Optional[str] = ..., max_response_bytes: _Optional[int] = ...) -> None: ...

class ReserveResponse(_message.Message):
    __slots__ = ["jobs"]
    JOBS_FIELD_NUMBER: _ClassVar[int]
    jobs: _containers.RepeatedCompositeFieldContainer[_job_pb2.LeasedJob]
    def __init__(self, jobs: _Optional[_Iterable[_Union[_job_pb2.LeasedJob, _Mapping]]] = ...) -> None: ...

class WorkRequest(_message.Message):
    __slots__ = ["ack", "batch", "credit", "extend", "nack", "progress", "request_id", "subscribe"]
    class Batch(_message.Message):
        __slots__ = ["credit", "settlements", "stop_delivery"]
        CREDIT_FIELD_NUMBER: _ClassVar[int]
        SETTLEMENTS_FIELD_NUMBER: _ClassVar[int]
        STOP_DELIVERY_FIELD_NUMBER: _ClassVar[int]
        credit: int
        settlements: _containers.RepeatedCompositeFieldContainer[WorkRequest.Settlement]
        stop_delivery: bool
        def __init__(self, settlements: _Optional[_Iterable[_Union[WorkRequest.Settlement, _Mapping]]] = ..., credit: _Optional[int] = ..., stop_delivery: bool = ...) -> None: ...
    class Credit(_message.Message):
        __slots__ = ["jobs"]
        JOBS_FIELD_NUMBER: _ClassVar[int]
        jobs: int
        def __init__(self, jobs: _Optional[int] = ...) -> None: ...
    class Settlement(_message.Message):
        __slots__ = ["ack", "extend", "nack", "progress", "request_id"]
        ACK_FIELD_NUMBER: _ClassVar[int]
        EXTEND_FIELD_NUMBER: _ClassVar[int]
        NACK_FIELD_NUMBER: _ClassVar[int]
        PROGRESS_FIELD_NUMBER: _ClassVar[int]
        REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
        ack: AckRequest
        extend: ExtendRequest
        nack: NackRequest
        progress: ReportProgressRequest
        request_id: int
        def __init__(self, request_id: _Optional[int] = ..., ack: _Optional[_Union[AckRequest, _Mapping]] = ..., nack: _Optional[_Union[NackRequest, _Mapping]] = ..., extend: _Optional[_Union[ExtendRequest, _Mapping]] = ..., progress: _Optional[_Union[ReportProgressRequest, _Mapping]] = ...) -> None: ...
    class Subscribe(_message.Message):
        __slots__ = ["batch_responses", "lease_duration_ms", "queues", "worker_id"]
        BATCH_RESPONSES_FIELD_NUMBER: _ClassVar[int]
        LEASE_DURATION_MS_FIELD_NUMBER: _ClassVar[int]
        QUEUES_FIELD_NUMBER: _ClassVar[int]
        WORKER_ID_FIELD_NUMBER: _ClassVar[int]
        batch_responses: bool
        lease_duration_ms: int
        queues: _containers.RepeatedScalarFieldContainer[str]
        worker_id: str
        def __init__(self, queues: _Optional[_Iterable[str]] = ..., lease_duration_ms: _Optional[int] = ..., worker_id: _Optional[str] = ..., batch_responses: bool = ...) -> None: ...
    ACK_FIELD_NUMBER: _ClassVar[int]
    BATCH_FIELD_NUMBER: _ClassVar[int]
    CREDIT_FIELD_NUMBER: _ClassVar[int]
    EXTEND_FIELD_NUMBER: _ClassVar[int]
    NACK_FIELD_NUMBER: _ClassVar[int]
    PROGRESS_FIELD_NUMBER: _ClassVar[int]
    REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    SUBSCRIBE_FIELD_NUMBER: _ClassVar[int]
    ack: AckRequest
    batch: WorkRequest.Batch
    credit: WorkRequest.Credit
    extend: ExtendRequest
    nack: NackRequest
    progress: ReportProgressRequest
    request_id: int
    subscribe: WorkRequest.Subscribe
    def __init__(self, request_id: _Optional[int] = ..., subscribe: _Optional[_Union[WorkRequest.Subscribe, _Mapping]] = ..., credit: _Optional[_Union[WorkRequest.Credit, _Mapping]] = ..., ack: _Optional[_Union[AckRequest, _Mapping]] = ..., nack: _Optional[_Union[NackRequest, _Mapping]] = ..., extend: _Optional[_Union[ExtendRequest, _Mapping]] = ..., batch: _Optional[_Union[WorkRequest.Batch, _Mapping]] = ..., progress: _Optional[_Union[ReportProgressRequest, _Mapping]] = ...) -> None: ...

class WorkResponse(_message.Message):
    __slots__ = ["batch", "cancel", "job", "settled", "timeout"]
    class Batch(_message.Message):
        __slots__ = ["cancels", "jobs", "settled", "timeouts"]
        CANCELS_FIELD_NUMBER: _ClassVar[int]
        JOBS_FIELD_NUMBER: _ClassVar[int]
        SETTLED_FIELD_NUMBER: _ClassVar[int]
        TIMEOUTS_FIELD_NUMBER: _ClassVar[int]
        cancels: _containers.RepeatedCompositeFieldContainer[WorkResponse.CancelNotice]
        jobs: _containers.RepeatedCompositeFieldContainer[_job_pb2.LeasedJob]
        settled: _containers.RepeatedCompositeFieldContainer[WorkResponse.Settled]
        timeouts: _containers.RepeatedCompositeFieldContainer[WorkResponse.TimeoutNotice]
        def __init__(self, settled: _Optional[_Iterable[_Union[WorkResponse.Settled, _Mapping]]] = ..., jobs: _Optional[_Iterable[_Union[_job_pb2.LeasedJob, _Mapping]]] = ..., cancels: _Optional[_Iterable[_Union[WorkResponse.CancelNotice, _Mapping]]] = ..., timeouts: _Optional[_Iterable[_Union[WorkResponse.TimeoutNotice, _Mapping]]] = ...) -> None: ...
    class CancelNotice(_message.Message):
        __slots__ = ["attempt", "cancelled_at_ms", "cancelled_by", "job_id"]
        ATTEMPT_FIELD_NUMBER: _ClassVar[int]
        CANCELLED_AT_MS_FIELD_NUMBER: _ClassVar[int]
        CANCELLED_BY_FIELD_NUMBER: _ClassVar[int]
        JOB_ID_FIELD_NUMBER: _ClassVar[int]
        attempt: int
        cancelled_at_ms: int
        cancelled_by: str
        job_id: str
        def __init__(self, job_id: _Optional[str] = ..., attempt: _Optional[int] = ..., cancelled_by: _Optional[str] = ..., cancelled_at_ms: _Optional[int] = ...) -> None: ...
    class Settled(_message.Message):
        __slots__ = ["ack", "code", "error_code", "extend", "message", "nack", "progress", "request_id", "retry"]
        ACK_FIELD_NUMBER: _ClassVar[int]
        CODE_FIELD_NUMBER: _ClassVar[int]
        ERROR_CODE_FIELD_NUMBER: _ClassVar[int]
        EXTEND_FIELD_NUMBER: _ClassVar[int]
        MESSAGE_FIELD_NUMBER: _ClassVar[int]
        NACK_FIELD_NUMBER: _ClassVar[int]
        PROGRESS_FIELD_NUMBER: _ClassVar[int]
        REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
        RETRY_FIELD_NUMBER: _ClassVar[int]
        ack: AckResponse
        code: int
        error_code: str
        extend: ExtendResponse
        message: str
        nack: NackResponse
        progress: ReportProgressResponse
        request_id: int
        retry: str
        def __init__(self, request_id: _Optional[int] = ..., code: _Optional[int] = ..., message: _Optional[str] = ..., ack: _Optional[_Union[AckResponse, _Mapping]] = ..., nack: _Optional[_Union[NackResponse, _Mapping]] = ..., extend: _Optional[_Union[ExtendResponse, _Mapping]] = ..., progress: _Optional[_Union[ReportProgressResponse, _Mapping]] = ..., error_code: _Optional[str] = ..., retry: _Optional[str] = ...) -> None: ...
    class TimeoutNotice(_message.Message):
        __slots__ = ["attempt", "job_id", "timeout_at_ms"]
        ATTEMPT_FIELD_NUMBER: _ClassVar[int]
        JOB_ID_FIELD_NUMBER: _ClassVar[int]
        TIMEOUT_AT_MS_FIELD_NUMBER: _ClassVar[int]
        attempt: int
        job_id: str
        timeout_at_ms: int
        def __init__(self, job_id: _Optional[str] = ..., attempt: _Optional[int] = ..., timeout_at_ms: _Optional[int] = ...) -> None: ...
    BATCH_FIELD_NUMBER: _ClassVar[int]
    CANCEL_FIELD_NUMBER: _ClassVar[int]
    JOB_FIELD_NUMBER: _ClassVar[int]
    SETTLED_FIELD_NUMBER: _ClassVar[int]
    TIMEOUT_FIELD_NUMBER: _ClassVar[int]
    batch: WorkResponse.Batch
    cancel: WorkResponse.CancelNotice
    job: _job_pb2.LeasedJob
    settled: WorkResponse.Settled
    timeout: WorkResponse.TimeoutNotice
    def __init__(self, job: _Optional[_Union[_job_pb2.LeasedJob, _Mapping]] = ..., settled: _Optional[_Union[WorkResponse.Settled, _Mapping]] = ..., batch: _Optional[_Union[WorkResponse.Batch, _Mapping]] = ..., cancel: _Optional[_Union[WorkResponse.CancelNotice, _Mapping]] = ..., timeout: _Optional[_Union[WorkResponse.TimeoutNotice, _Mapping]] = ...) -> None: ...

class SettleOutcome(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = []
