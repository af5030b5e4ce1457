from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from typing import ClassVar as _ClassVar, Iterable as _Iterable, Mapping as _Mapping, Optional as _Optional, Union as _Union

DEAD_REASON_ATTEMPTS_EXHAUSTED: DeadReason
DEAD_REASON_DEAD_LETTERED: DeadReason
DEAD_REASON_EXPIRED: DeadReason
DEAD_REASON_LEASE_EXPIRED: DeadReason
DEAD_REASON_TIMEOUT: DeadReason
DEAD_REASON_UNSPECIFIED: DeadReason
DEPENDENCY_EDGE_STATE_COMPLETED: DependencyEdgeState
DEPENDENCY_EDGE_STATE_FAILED: DependencyEdgeState
DEPENDENCY_EDGE_STATE_PENDING: DependencyEdgeState
DEPENDENCY_EDGE_STATE_UNSPECIFIED: DependencyEdgeState
DEPENDENCY_FAILURE_POLICY_CANCEL: DependencyFailurePolicy
DEPENDENCY_FAILURE_POLICY_RUN: DependencyFailurePolicy
DEPENDENCY_FAILURE_POLICY_UNSPECIFIED: DependencyFailurePolicy
DEPENDENCY_FAILURE_POLICY_WAIT: DependencyFailurePolicy
DESCRIPTOR: _descriptor.FileDescriptor
JOB_STATE_CANCELLED: JobState
JOB_STATE_COMPLETED: JobState
JOB_STATE_DEAD: JobState
JOB_STATE_LEASED: JobState
JOB_STATE_READY: JobState
JOB_STATE_SCHEDULED: JobState
JOB_STATE_UNSPECIFIED: JobState
JOB_STATE_WAITING: JobState
REJECTION_REASON_DEPENDENCIES_UNSUPPORTED: RejectionReason
REJECTION_REASON_DEPENDENCY_FAILED: RejectionReason
REJECTION_REASON_INVALID_JOB: RejectionReason
REJECTION_REASON_INVALID_NAME: RejectionReason
REJECTION_REASON_JOB_TYPE_NOT_ALLOWED: RejectionReason
REJECTION_REASON_METADATA_TOO_LARGE: RejectionReason
REJECTION_REASON_PAYLOAD_TOO_LARGE: RejectionReason
REJECTION_REASON_QUEUE_FULL: RejectionReason
REJECTION_REASON_SCHEDULED_TOO_FAR: RejectionReason
REJECTION_REASON_UNKNOWN_DEPENDENCY: RejectionReason
REJECTION_REASON_UNKNOWN_QUEUE: RejectionReason
REJECTION_REASON_UNSPECIFIED: RejectionReason

class AttemptError(_message.Message):
    __slots__ = ["at_ms", "attempt", "error", "error_class", "error_stack"]
    ATTEMPT_FIELD_NUMBER: _ClassVar[int]
    AT_MS_FIELD_NUMBER: _ClassVar[int]
    ERROR_CLASS_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    ERROR_STACK_FIELD_NUMBER: _ClassVar[int]
    at_ms: int
    attempt: int
    error: str
    error_class: str
    error_stack: str
    def __init__(self, attempt: _Optional[int] = ..., at_ms: _Optional[int] = ..., error: _Optional[str] = ..., error_class: _Optional[str] = ..., error_stack: _Optional[str] = ...) -> None: ...

class DependencyResult(_message.Message):
    __slots__ = ["job_id", "name", "result", "result_content_type", "result_omitted", "state"]
    JOB_ID_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    RESULT_CONTENT_TYPE_FIELD_NUMBER: _ClassVar[int]
    RESULT_FIELD_NUMBER: _ClassVar[int]
    RESULT_OMITTED_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    job_id: str
    name: str
    result: bytes
    result_content_type: str
    result_omitted: bool
    state: JobState
    def __init__(self, job_id: _Optional[str] = ..., name: _Optional[str] = ..., state: _Optional[_Union[JobState, str]] = ..., result: _Optional[bytes] = ..., result_content_type: _Optional[str] = ..., result_omitted: bool = ...) -> None: ...

class EnqueueAccepted(_message.Message):
    __slots__ = ["debounced", "deduplicated", "job_id"]
    DEBOUNCED_FIELD_NUMBER: _ClassVar[int]
    DEDUPLICATED_FIELD_NUMBER: _ClassVar[int]
    JOB_ID_FIELD_NUMBER: _ClassVar[int]
    debounced: bool
    deduplicated: bool
    job_id: str
    def __init__(self, job_id: _Optional[str] = ..., deduplicated: bool = ..., debounced: bool = ...) -> None: ...

class EnqueueJob(_message.Message):
    __slots__ = ["content_type", "debounce_key", "debounce_max_ms", "debounce_ms", "delay_ms", "depends_on", "expires_at_ms", "group", "idempotency_key", "max_attempts", "metadata", "on_dependency_failure", "payload", "priority", "queue", "run_at_ms", "timeout_ms", "traceparent", "tracestate", "ttl_ms", "type", "unique_while_active"]
    class MetadataEntry(_message.Message):
        __slots__ = ["key", "value"]
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    CONTENT_TYPE_FIELD_NUMBER: _ClassVar[int]
    DEBOUNCE_KEY_FIELD_NUMBER: _ClassVar[int]
    DEBOUNCE_MAX_MS_FIELD_NUMBER: _ClassVar[int]
    DEBOUNCE_MS_FIELD_NUMBER: _ClassVar[int]
    DELAY_MS_FIELD_NUMBER: _ClassVar[int]
    DEPENDS_ON_FIELD_NUMBER: _ClassVar[int]
    EXPIRES_AT_MS_FIELD_NUMBER: _ClassVar[int]
    GROUP_FIELD_NUMBER: _ClassVar[int]
    IDEMPOTENCY_KEY_FIELD_NUMBER: _ClassVar[int]
    MAX_ATTEMPTS_FIELD_NUMBER: _ClassVar[int]
    METADATA_FIELD_NUMBER: _ClassVar[int]
    ON_DEPENDENCY_FAILURE_FIELD_NUMBER: _ClassVar[int]
    PAYLOAD_FIELD_NUMBER: _ClassVar[int]
    PRIORITY_FIELD_NUMBER: _ClassVar[int]
    QUEUE_FIELD_NUMBER: _ClassVar[int]
    RUN_AT_MS_FIELD_NUMBER: _ClassVar[int]
    TIMEOUT_MS_FIELD_NUMBER: _ClassVar[int]
    TRACEPARENT_FIELD_NUMBER: _ClassVar[int]
    TRACESTATE_FIELD_NUMBER: _ClassVar[int]
    TTL_MS_FIELD_NUMBER: _ClassVar[int]
    TYPE_FIELD_NUMBER: _ClassVar[int]
    UNIQUE_WHILE_ACTIVE_FIELD_NUMBER: _ClassVar[int]
    content_type: str
    debounce_key: str
    debounce_max_ms: int
    debounce_ms: int
    delay_ms: int
    depends_on: _containers.RepeatedScalarFieldContainer[str]
    expires_at_ms: int
    group: str
    idempotency_key: str
    max_attempts: int
    metadata: _containers.ScalarMap[str, str]
    on_dependency_failure: DependencyFailurePolicy
    payload: bytes
    priority: int
    queue: str
    run_at_ms: int
    timeout_ms: int
    traceparent: str
    tracestate: str
    ttl_ms: int
    type: str
    unique_while_active: bool
    def __init__(self, queue: _Optional[str] = ..., type: _Optional[str] = ..., payload: _Optional[bytes] = ..., content_type: _Optional[str] = ..., priority: _Optional[int] = ..., run_at_ms: _Optional[int] = ..., delay_ms: _Optional[int] = ..., max_attempts: _Optional[int] = ..., idempotency_key: _Optional[str] = ..., metadata: _Optional[_Mapping[str, str]] = ..., traceparent: _Optional[str] = ..., tracestate: _Optional[str] = ..., expires_at_ms: _Optional[int] = ..., ttl_ms: _Optional[int] = ..., unique_while_active: bool = ..., group: _Optional[str] = ..., depends_on: _Optional[_Iterable[str]] = ..., on_dependency_failure: _Optional[_Union[DependencyFailurePolicy, str]] = ..., timeout_ms: _Optional[int] = ..., debounce_key: _Optional[str] = ..., debounce_ms: _Optional[int] = ..., debounce_max_ms: _Optional[int] = ...) -> None: ...

class EnqueueResult(_message.Message):
    __slots__ = ["accepted", "rejection"]
    ACCEPTED_FIELD_NUMBER: _ClassVar[int]
    REJECTION_FIELD_NUMBER: _ClassVar[int]
    accepted: EnqueueAccepted
    rejection: JobRejection
    def __init__(self, accepted: _Optional[_Union[EnqueueAccepted, _Mapping]] = ..., rejection: _Optional[_Union[JobRejection, _Mapping]] = ...) -> None: ...

class IndexedRejection(_message.Message):
    __slots__ = ["index", "message", "reason"]
    INDEX_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    index: int
    message: str
    reason: RejectionReason
    def __init__(self, index: _Optional[int] = ..., reason: _Optional[_Union[RejectionReason, str]] = ..., message: _Optional[str] = ...) -> None: ...

class Job(_message.Message):
    __slots__ = ["attempt", "batch_id", "cancelled_at_ms", "cancelled_by", "completed_at_ms", "content_type", "dead_reason", "debounce_key", "debounce_until_ms", "dependencies", "dependents", "enqueued_at_ms", "errors", "expires_at_ms", "failed_at_ms", "group", "idempotency_key", "job_id", "last_error", "lease_deadline_ms", "leased_at_ms", "max_attempts", "metadata", "outcome_only", "payload", "payload_bytes", "priority", "progress", "queue", "result", "result_bytes", "run_at_ms", "state", "timeout_at_ms", "timeout_ms", "traceparent", "tracestate", "type", "worker_id"]
    class MetadataEntry(_message.Message):
        __slots__ = ["key", "value"]
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    ATTEMPT_FIELD_NUMBER: _ClassVar[int]
    BATCH_ID_FIELD_NUMBER: _ClassVar[int]
    CANCELLED_AT_MS_FIELD_NUMBER: _ClassVar[int]
    CANCELLED_BY_FIELD_NUMBER: _ClassVar[int]
    COMPLETED_AT_MS_FIELD_NUMBER: _ClassVar[int]
    CONTENT_TYPE_FIELD_NUMBER: _ClassVar[int]
    DEAD_REASON_FIELD_NUMBER: _ClassVar[int]
    DEBOUNCE_KEY_FIELD_NUMBER: _ClassVar[int]
    DEBOUNCE_UNTIL_MS_FIELD_NUMBER: _ClassVar[int]
    DEPENDENCIES_FIELD_NUMBER: _ClassVar[int]
    DEPENDENTS_FIELD_NUMBER: _ClassVar[int]
    ENQUEUED_AT_MS_FIELD_NUMBER: _ClassVar[int]
    ERRORS_FIELD_NUMBER: _ClassVar[int]
    EXPIRES_AT_MS_FIELD_NUMBER: _ClassVar[int]
    FAILED_AT_MS_FIELD_NUMBER: _ClassVar[int]
    GROUP_FIELD_NUMBER: _ClassVar[int]
    IDEMPOTENCY_KEY_FIELD_NUMBER: _ClassVar[int]
    JOB_ID_FIELD_NUMBER: _ClassVar[int]
    LAST_ERROR_FIELD_NUMBER: _ClassVar[int]
    LEASED_AT_MS_FIELD_NUMBER: _ClassVar[int]
    LEASE_DEADLINE_MS_FIELD_NUMBER: _ClassVar[int]
    MAX_ATTEMPTS_FIELD_NUMBER: _ClassVar[int]
    METADATA_FIELD_NUMBER: _ClassVar[int]
    OUTCOME_ONLY_FIELD_NUMBER: _ClassVar[int]
    PAYLOAD_BYTES_FIELD_NUMBER: _ClassVar[int]
    PAYLOAD_FIELD_NUMBER: _ClassVar[int]
    PRIORITY_FIELD_NUMBER: _ClassVar[int]
    PROGRESS_FIELD_NUMBER: _ClassVar[int]
    QUEUE_FIELD_NUMBER: _ClassVar[int]
    RESULT_BYTES_FIELD_NUMBER: _ClassVar[int]
    RESULT_FIELD_NUMBER: _ClassVar[int]
    RUN_AT_MS_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    TIMEOUT_AT_MS_FIELD_NUMBER: _ClassVar[int]
    TIMEOUT_MS_FIELD_NUMBER: _ClassVar[int]
    TRACEPARENT_FIELD_NUMBER: _ClassVar[int]
    TRACESTATE_FIELD_NUMBER: _ClassVar[int]
    TYPE_FIELD_NUMBER: _ClassVar[int]
    WORKER_ID_FIELD_NUMBER: _ClassVar[int]
    attempt: int
    batch_id: str
    cancelled_at_ms: int
    cancelled_by: str
    completed_at_ms: int
    content_type: str
    dead_reason: DeadReason
    debounce_key: str
    debounce_until_ms: int
    dependencies: _containers.RepeatedCompositeFieldContainer[JobLink]
    dependents: _containers.RepeatedCompositeFieldContainer[JobLink]
    enqueued_at_ms: int
    errors: _containers.RepeatedCompositeFieldContainer[AttemptError]
    expires_at_ms: int
    failed_at_ms: int
    group: str
    idempotency_key: str
    job_id: str
    last_error: str
    lease_deadline_ms: int
    leased_at_ms: int
    max_attempts: int
    metadata: _containers.ScalarMap[str, str]
    outcome_only: bool
    payload: bytes
    payload_bytes: int
    priority: int
    progress: JobProgress
    queue: str
    result: JobResult
    result_bytes: int
    run_at_ms: int
    state: JobState
    timeout_at_ms: int
    timeout_ms: int
    traceparent: str
    tracestate: str
    type: str
    worker_id: str
    def __init__(self, job_id: _Optional[str] = ..., queue: _Optional[str] = ..., type: _Optional[str] = ..., state: _Optional[_Union[JobState, str]] = ..., priority: _Optional[int] = ..., payload: _Optional[bytes] = ..., payload_bytes: _Optional[int] = ..., content_type: _Optional[str] = ..., attempt: _Optional[int] = ..., max_attempts: _Optional[int] = ..., idempotency_key: _Optional[str] = ..., metadata: _Optional[_Mapping[str, str]] = ..., traceparent: _Optional[str] = ..., tracestate: _Optional[str] = ..., enqueued_at_ms: _Optional[int] = ..., run_at_ms: _Optional[int] = ..., leased_at_ms: _Optional[int] = ..., lease_deadline_ms: _Optional[int] = ..., worker_id: _Optional[str] = ..., last_error: _Optional[str] = ..., errors: _Optional[_Iterable[_Union[AttemptError, _Mapping]]] = ..., dead_reason: _Optional[_Union[DeadReason, str]] = ..., failed_at_ms: _Optional[int] = ..., completed_at_ms: _Optional[int] = ..., expires_at_ms: _Optional[int] = ..., cancelled_at_ms: _Optional[int] = ..., cancelled_by: _Optional[str] = ..., result: _Optional[_Union[JobResult, _Mapping]] = ..., result_bytes: _Optional[int] = ..., progress: _Optional[_Union[JobProgress, _Mapping]] = ..., timeout_ms: _Optional[int] = ..., timeout_at_ms: _Optional[int] = ..., debounce_key: _Optional[str] = ..., debounce_until_ms: _Optional[int] = ..., group: _Optional[str] = ..., dependencies: _Optional[_Iterable[_Union[JobLink, _Mapping]]] = ..., dependents: _Optional[_Iterable[_Union[JobLink, _Mapping]]] = ..., batch_id: _Optional[str] = ..., outcome_only: bool = ...) -> None: ...

class JobLink(_message.Message):
    __slots__ = ["edge", "job_id", "name", "queue", "state", "type"]
    EDGE_FIELD_NUMBER: _ClassVar[int]
    JOB_ID_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    QUEUE_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    TYPE_FIELD_NUMBER: _ClassVar[int]
    edge: DependencyEdgeState
    job_id: str
    name: str
    queue: str
    state: JobState
    type: str
    def __init__(self, job_id: _Optional[str] = ..., queue: _Optional[str] = ..., type: _Optional[str] = ..., state: _Optional[_Union[JobState, str]] = ..., edge: _Optional[_Union[DependencyEdgeState, str]] = ..., name: _Optional[str] = ...) -> None: ...

class JobProgress(_message.Message):
    __slots__ = ["has_percent", "json", "percent", "reported_at_ms"]
    HAS_PERCENT_FIELD_NUMBER: _ClassVar[int]
    JSON_FIELD_NUMBER: _ClassVar[int]
    PERCENT_FIELD_NUMBER: _ClassVar[int]
    REPORTED_AT_MS_FIELD_NUMBER: _ClassVar[int]
    has_percent: bool
    json: str
    percent: float
    reported_at_ms: int
    def __init__(self, percent: _Optional[float] = ..., has_percent: bool = ..., json: _Optional[str] = ..., reported_at_ms: _Optional[int] = ...) -> None: ...

class JobRejection(_message.Message):
    __slots__ = ["message", "reason"]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    message: str
    reason: RejectionReason
    def __init__(self, reason: _Optional[_Union[RejectionReason, str]] = ..., message: _Optional[str] = ...) -> None: ...

class JobResult(_message.Message):
    __slots__ = ["content_type", "data"]
    CONTENT_TYPE_FIELD_NUMBER: _ClassVar[int]
    DATA_FIELD_NUMBER: _ClassVar[int]
    content_type: str
    data: bytes
    def __init__(self, data: _Optional[bytes] = ..., content_type: _Optional[str] = ...) -> None: ...

class LeasedJob(_message.Message):
    __slots__ = ["attempt", "batch_id", "content_type", "dependency_results", "enqueued_at_ms", "flow_limited", "group", "idempotency_key", "job_id", "last_error", "lease_deadline_ms", "lease_token", "max_attempts", "metadata", "payload", "priority", "queue", "run_at_ms", "timeout_at_ms", "traceparent", "tracestate", "type"]
    class MetadataEntry(_message.Message):
        __slots__ = ["key", "value"]
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    ATTEMPT_FIELD_NUMBER: _ClassVar[int]
    BATCH_ID_FIELD_NUMBER: _ClassVar[int]
    CONTENT_TYPE_FIELD_NUMBER: _ClassVar[int]
    DEPENDENCY_RESULTS_FIELD_NUMBER: _ClassVar[int]
    ENQUEUED_AT_MS_FIELD_NUMBER: _ClassVar[int]
    FLOW_LIMITED_FIELD_NUMBER: _ClassVar[int]
    GROUP_FIELD_NUMBER: _ClassVar[int]
    IDEMPOTENCY_KEY_FIELD_NUMBER: _ClassVar[int]
    JOB_ID_FIELD_NUMBER: _ClassVar[int]
    LAST_ERROR_FIELD_NUMBER: _ClassVar[int]
    LEASE_DEADLINE_MS_FIELD_NUMBER: _ClassVar[int]
    LEASE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    MAX_ATTEMPTS_FIELD_NUMBER: _ClassVar[int]
    METADATA_FIELD_NUMBER: _ClassVar[int]
    PAYLOAD_FIELD_NUMBER: _ClassVar[int]
    PRIORITY_FIELD_NUMBER: _ClassVar[int]
    QUEUE_FIELD_NUMBER: _ClassVar[int]
    RUN_AT_MS_FIELD_NUMBER: _ClassVar[int]
    TIMEOUT_AT_MS_FIELD_NUMBER: _ClassVar[int]
    TRACEPARENT_FIELD_NUMBER: _ClassVar[int]
    TRACESTATE_FIELD_NUMBER: _ClassVar[int]
    TYPE_FIELD_NUMBER: _ClassVar[int]
    attempt: int
    batch_id: str
    content_type: str
    dependency_results: _containers.RepeatedCompositeFieldContainer[DependencyResult]
    enqueued_at_ms: int
    flow_limited: bool
    group: str
    idempotency_key: str
    job_id: str
    last_error: str
    lease_deadline_ms: int
    lease_token: str
    max_attempts: int
    metadata: _containers.ScalarMap[str, str]
    payload: bytes
    priority: int
    queue: str
    run_at_ms: int
    timeout_at_ms: int
    traceparent: str
    tracestate: str
    type: str
    def __init__(self, job_id: _Optional[str] = ..., queue: _Optional[str] = ..., type: _Optional[str] = ..., payload: _Optional[bytes] = ..., content_type: _Optional[str] = ..., priority: _Optional[int] = ..., attempt: _Optional[int] = ..., max_attempts: _Optional[int] = ..., lease_deadline_ms: _Optional[int] = ..., enqueued_at_ms: _Optional[int] = ..., run_at_ms: _Optional[int] = ..., metadata: _Optional[_Mapping[str, str]] = ..., traceparent: _Optional[str] = ..., tracestate: _Optional[str] = ..., idempotency_key: _Optional[str] = ..., last_error: _Optional[str] = ..., group: _Optional[str] = ..., dependency_results: _Optional[_Iterable[_Union[DependencyResult, _Mapping]]] = ..., batch_id: _Optional[str] = ..., lease_token: _Optional[str] = ..., timeout_at_ms: _Optional[int] = ..., flow_limited: bool = ...) -> None: ...

class JobState(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = []

class DependencyFailurePolicy(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = []

class DeadReason(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = []

class RejectionReason(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = []

class DependencyEdgeState(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = []
