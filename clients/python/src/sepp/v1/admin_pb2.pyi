from sepp.v1 import bulk_operation_pb2 as _bulk_operation_pb2
from sepp.v1 import job_pb2 as _job_pb2
from sepp.v1 import queue_pb2 as _queue_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from typing import ClassVar as _ClassVar, Iterable as _Iterable, Mapping as _Mapping, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor
DURABILITY_MODE_FULL: DurabilityMode
DURABILITY_MODE_RELAXED: DurabilityMode
DURABILITY_MODE_UNSPECIFIED: DurabilityMode

class AuditEntry(_message.Message):
    __slots__ = ["action", "actor", "at_ms", "details_json", "id", "target"]
    ACTION_FIELD_NUMBER: _ClassVar[int]
    ACTOR_FIELD_NUMBER: _ClassVar[int]
    AT_MS_FIELD_NUMBER: _ClassVar[int]
    DETAILS_JSON_FIELD_NUMBER: _ClassVar[int]
    ID_FIELD_NUMBER: _ClassVar[int]
    TARGET_FIELD_NUMBER: _ClassVar[int]
    action: str
    actor: str
    at_ms: int
    details_json: str
    id: int
    target: str
    def __init__(self, id: _Optional[int] = ..., at_ms: _Optional[int] = ..., actor: _Optional[str] = ..., action: _Optional[str] = ..., target: _Optional[str] = ..., details_json: _Optional[str] = ...) -> None: ...

class BackupChunk(_message.Message):
    __slots__ = ["data", "done", "progress"]
    DATA_FIELD_NUMBER: _ClassVar[int]
    DONE_FIELD_NUMBER: _ClassVar[int]
    PROGRESS_FIELD_NUMBER: _ClassVar[int]
    data: bytes
    done: BackupDone
    progress: BackupProgress
    def __init__(self, progress: _Optional[_Union[BackupProgress, _Mapping]] = ..., data: _Optional[bytes] = ..., done: _Optional[_Union[BackupDone, _Mapping]] = ...) -> None: ...

class BackupDone(_message.Message):
    __slots__ = ["sha256", "size_bytes"]
    SHA256_FIELD_NUMBER: _ClassVar[int]
    SIZE_BYTES_FIELD_NUMBER: _ClassVar[int]
    sha256: str
    size_bytes: int
    def __init__(self, size_bytes: _Optional[int] = ..., sha256: _Optional[str] = ...) -> None: ...

class BackupProgress(_message.Message):
    __slots__ = ["pages_done", "pages_total"]
    PAGES_DONE_FIELD_NUMBER: _ClassVar[int]
    PAGES_TOTAL_FIELD_NUMBER: _ClassVar[int]
    pages_done: int
    pages_total: int
    def __init__(self, pages_done: _Optional[int] = ..., pages_total: _Optional[int] = ...) -> None: ...

class BackupRequest(_message.Message):
    __slots__ = []
    def __init__(self) -> None: ...

class CancelJobRequest(_message.Message):
    __slots__ = ["job_id"]
    JOB_ID_FIELD_NUMBER: _ClassVar[int]
    job_id: str
    def __init__(self, job_id: _Optional[str] = ...) -> None: ...

class CancelJobResponse(_message.Message):
    __slots__ = ["previous_state", "state"]
    PREVIOUS_STATE_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    previous_state: _job_pb2.JobState
    state: _job_pb2.JobState
    def __init__(self, previous_state: _Optional[_Union[_job_pb2.JobState, str]] = ..., state: _Optional[_Union[_job_pb2.JobState, str]] = ...) -> None: ...

class CancelJobsRequest(_message.Message):
    __slots__ = ["background", "dry_run", "filter", "request_key"]
    BACKGROUND_FIELD_NUMBER: _ClassVar[int]
    DRY_RUN_FIELD_NUMBER: _ClassVar[int]
    FILTER_FIELD_NUMBER: _ClassVar[int]
    REQUEST_KEY_FIELD_NUMBER: _ClassVar[int]
    background: bool
    dry_run: bool
    filter: JobFilter
    request_key: str
    def __init__(self, filter: _Optional[_Union[JobFilter, _Mapping]] = ..., dry_run: bool = ..., background: bool = ..., request_key: _Optional[str] = ...) -> None: ...

class CancelJobsResponse(_message.Message):
    __slots__ = ["cancel_requested_count", "cancelled_count", "matched_at_least", "matched_count", "operation"]
    CANCELLED_COUNT_FIELD_NUMBER: _ClassVar[int]
    CANCEL_REQUESTED_COUNT_FIELD_NUMBER: _ClassVar[int]
    MATCHED_AT_LEAST_FIELD_NUMBER: _ClassVar[int]
    MATCHED_COUNT_FIELD_NUMBER: _ClassVar[int]
    OPERATION_FIELD_NUMBER: _ClassVar[int]
    cancel_requested_count: int
    cancelled_count: int
    matched_at_least: bool
    matched_count: int
    operation: _bulk_operation_pb2.BulkOperation
    def __init__(self, cancelled_count: _Optional[int] = ..., cancel_requested_count: _Optional[int] = ..., matched_count: _Optional[int] = ..., matched_at_least: bool = ..., operation: _Optional[_Union[_bulk_operation_pb2.BulkOperation, _Mapping]] = ...) -> None: ...

class ConfigProblem(_message.Message):
    __slots__ = ["key", "message"]
    KEY_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    key: str
    message: str
    def __init__(self, key: _Optional[str] = ..., message: _Optional[str] = ...) -> None: ...

class DeleteDeadLettersRequest(_message.Message):
    __slots__ = ["all", "background", "error_text", "job_ids", "queue", "reason", "request_key"]
    ALL_FIELD_NUMBER: _ClassVar[int]
    BACKGROUND_FIELD_NUMBER: _ClassVar[int]
    ERROR_TEXT_FIELD_NUMBER: _ClassVar[int]
    JOB_IDS_FIELD_NUMBER: _ClassVar[int]
    QUEUE_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    REQUEST_KEY_FIELD_NUMBER: _ClassVar[int]
    all: bool
    background: bool
    error_text: str
    job_ids: _containers.RepeatedScalarFieldContainer[str]
    queue: str
    reason: _job_pb2.DeadReason
    request_key: str
    def __init__(self, queue: _Optional[str] = ..., job_ids: _Optional[_Iterable[str]] = ..., all: bool = ..., reason: _Optional[_Union[_job_pb2.DeadReason, str]] = ..., error_text: _Optional[str] = ..., background: bool = ..., request_key: _Optional[str] = ...) -> None: ...

class DeleteDeadLettersResponse(_message.Message):
    __slots__ = ["deleted_count", "operation"]
    DELETED_COUNT_FIELD_NUMBER: _ClassVar[int]
    OPERATION_FIELD_NUMBER: _ClassVar[int]
    deleted_count: int
    operation: _bulk_operation_pb2.BulkOperation
    def __init__(self, deleted_count: _Optional[int] = ..., operation: _Optional[_Union[_bulk_operation_pb2.BulkOperation, _Mapping]] = ...) -> None: ...

class DeleteQueueRequest(_message.Message):
    __slots__ = ["queue"]
    QUEUE_FIELD_NUMBER: _ClassVar[int]
    queue: str
    def __init__(self, queue: _Optional[str] = ...) -> None: ...

class DeleteQueueResponse(_message.Message):
    __slots__ = []
    def __init__(self) -> None: ...

class ErrorGroup(_message.Message):
    __slots__ = ["first_failed_at_ms", "jobs", "key", "last_failed_at_ms"]
    FIRST_FAILED_AT_MS_FIELD_NUMBER: _ClassVar[int]
    JOBS_FIELD_NUMBER: _ClassVar[int]
    KEY_FIELD_NUMBER: _ClassVar[int]
    LAST_FAILED_AT_MS_FIELD_NUMBER: _ClassVar[int]
    first_failed_at_ms: int
    jobs: int
    key: ErrorGroupKey
    last_failed_at_ms: int
    def __init__(self, key: _Optional[_Union[ErrorGroupKey, _Mapping]] = ..., jobs: _Optional[int] = ..., first_failed_at_ms: _Optional[int] = ..., last_failed_at_ms: _Optional[int] = ...) -> None: ...

class ErrorGroupKey(_message.Message):
    __slots__ = ["error_class", "first_line"]
    ERROR_CLASS_FIELD_NUMBER: _ClassVar[int]
    FIRST_LINE_FIELD_NUMBER: _ClassVar[int]
    error_class: str
    first_line: str
    def __init__(self, error_class: _Optional[str] = ..., first_line: _Optional[str] = ...) -> None: ...

class GetJobRequest(_message.Message):
    __slots__ = ["job_id"]
    JOB_ID_FIELD_NUMBER: _ClassVar[int]
    job_id: str
    def __init__(self, job_id: _Optional[str] = ...) -> None: ...

class GetJobResponse(_message.Message):
    __slots__ = ["job"]
    JOB_FIELD_NUMBER: _ClassVar[int]
    job: _job_pb2.Job
    def __init__(self, job: _Optional[_Union[_job_pb2.Job, _Mapping]] = ...) -> None: ...

class GetServerInfoRequest(_message.Message):
    __slots__ = []
    def __init__(self) -> None: ...

class GetServerInfoResponse(_message.Message):
    __slots__ = ["durability", "features", "git_commit", "identity", "limits", "queue_defaults", "server_time_ms", "started_at_ms", "store", "strict_queues", "version"]
    DURABILITY_FIELD_NUMBER: _ClassVar[int]
    FEATURES_FIELD_NUMBER: _ClassVar[int]
    GIT_COMMIT_FIELD_NUMBER: _ClassVar[int]
    IDENTITY_FIELD_NUMBER: _ClassVar[int]
    LIMITS_FIELD_NUMBER: _ClassVar[int]
    QUEUE_DEFAULTS_FIELD_NUMBER: _ClassVar[int]
    SERVER_TIME_MS_FIELD_NUMBER: _ClassVar[int]
    STARTED_AT_MS_FIELD_NUMBER: _ClassVar[int]
    STORE_FIELD_NUMBER: _ClassVar[int]
    STRICT_QUEUES_FIELD_NUMBER: _ClassVar[int]
    VERSION_FIELD_NUMBER: _ClassVar[int]
    durability: DurabilityMode
    features: _containers.RepeatedScalarFieldContainer[str]
    git_commit: str
    identity: ServerIdentity
    limits: ServerLimits
    queue_defaults: _queue_pb2.QueueSettings
    server_time_ms: int
    started_at_ms: int
    store: StoreInfo
    strict_queues: bool
    version: str
    def __init__(self, version: _Optional[str] = ..., git_commit: _Optional[str] = ..., durability: _Optional[_Union[DurabilityMode, str]] = ..., server_time_ms: _Optional[int] = ..., started_at_ms: _Optional[int] = ..., limits: _Optional[_Union[ServerLimits, _Mapping]] = ..., queue_defaults: _Optional[_Union[_queue_pb2.QueueSettings, _Mapping]] = ..., strict_queues: bool = ..., store: _Optional[_Union[StoreInfo, _Mapping]] = ..., identity: _Optional[_Union[ServerIdentity, _Mapping]] = ..., features: _Optional[_Iterable[str]] = ...) -> None: ...

class JobChanges(_message.Message):
    __slots__ = ["delay_ms", "group", "priority", "run_at_ms", "run_now"]
    DELAY_MS_FIELD_NUMBER: _ClassVar[int]
    GROUP_FIELD_NUMBER: _ClassVar[int]
    PRIORITY_FIELD_NUMBER: _ClassVar[int]
    RUN_AT_MS_FIELD_NUMBER: _ClassVar[int]
    RUN_NOW_FIELD_NUMBER: _ClassVar[int]
    delay_ms: int
    group: str
    priority: int
    run_at_ms: int
    run_now: bool
    def __init__(self, priority: _Optional[int] = ..., run_at_ms: _Optional[int] = ..., delay_ms: _Optional[int] = ..., run_now: bool = ..., group: _Optional[str] = ...) -> None: ...

class JobFilter(_message.Message):
    __slots__ = ["all_queues", "dead_reason", "enqueued_before_ms", "enqueued_from_ms", "error_group", "error_text", "group", "metadata_key", "metadata_value", "queue", "retries_only", "states", "type", "type_prefix"]
    ALL_QUEUES_FIELD_NUMBER: _ClassVar[int]
    DEAD_REASON_FIELD_NUMBER: _ClassVar[int]
    ENQUEUED_BEFORE_MS_FIELD_NUMBER: _ClassVar[int]
    ENQUEUED_FROM_MS_FIELD_NUMBER: _ClassVar[int]
    ERROR_GROUP_FIELD_NUMBER: _ClassVar[int]
    ERROR_TEXT_FIELD_NUMBER: _ClassVar[int]
    GROUP_FIELD_NUMBER: _ClassVar[int]
    METADATA_KEY_FIELD_NUMBER: _ClassVar[int]
    METADATA_VALUE_FIELD_NUMBER: _ClassVar[int]
    QUEUE_FIELD_NUMBER: _ClassVar[int]
    RETRIES_ONLY_FIELD_NUMBER: _ClassVar[int]
    STATES_FIELD_NUMBER: _ClassVar[int]
    TYPE_FIELD_NUMBER: _ClassVar[int]
    TYPE_PREFIX_FIELD_NUMBER: _ClassVar[int]
    all_queues: bool
    dead_reason: _job_pb2.DeadReason
    enqueued_before_ms: int
    enqueued_from_ms: int
    error_group: ErrorGroupKey
    error_text: str
    group: str
    metadata_key: str
    metadata_value: str
    queue: str
    retries_only: bool
    states: _containers.RepeatedScalarFieldContainer[_job_pb2.JobState]
    type: str
    type_prefix: str
    def __init__(self, queue: _Optional[str] = ..., type: _Optional[str] = ..., states: _Optional[_Iterable[_Union[_job_pb2.JobState, str]]] = ..., group: _Optional[str] = ..., all_queues: bool = ..., type_prefix: _Optional[str] = ..., error_text: _Optional[str] = ..., metadata_key: _Optional[str] = ..., metadata_value: _Optional[str] = ..., enqueued_from_ms: _Optional[int] = ..., enqueued_before_ms: _Optional[int] = ..., dead_reason: _Optional[_Union[_job_pb2.DeadReason, str]] = ..., retries_only: bool = ..., error_group: _Optional[_Union[ErrorGroupKey, _Mapping]] = ...) -> None: ...

class ListAuditEntriesRequest(_message.Message):
    __slots__ = ["action", "actor", "page_size", "page_token", "target"]
    ACTION_FIELD_NUMBER: _ClassVar[int]
    ACTOR_FIELD_NUMBER: _ClassVar[int]
    PAGE_SIZE_FIELD_NUMBER: _ClassVar[int]
    PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    TARGET_FIELD_NUMBER: _ClassVar[int]
    action: str
    actor: str
    page_size: int
    page_token: str
    target: str
    def __init__(self, actor: _Optional[str] = ..., action: _Optional[str] = ..., target: _Optional[str] = ..., page_size: _Optional[int] = ..., page_token: _Optional[str] = ...) -> None: ...

class ListAuditEntriesResponse(_message.Message):
    __slots__ = ["entries", "next_page_token"]
    ENTRIES_FIELD_NUMBER: _ClassVar[int]
    NEXT_PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    entries: _containers.RepeatedCompositeFieldContainer[AuditEntry]
    next_page_token: str
    def __init__(self, entries: _Optional[_Iterable[_Union[AuditEntry, _Mapping]]] = ..., next_page_token: _Optional[str] = ...) -> None: ...

class ListDeadLettersRequest(_message.Message):
    __slots__ = ["page_size", "page_token", "queue", "reason"]
    PAGE_SIZE_FIELD_NUMBER: _ClassVar[int]
    PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    QUEUE_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    page_size: int
    page_token: str
    queue: str
    reason: _job_pb2.DeadReason
    def __init__(self, queue: _Optional[str] = ..., page_size: _Optional[int] = ..., page_token: _Optional[str] = ..., reason: _Optional[_Union[_job_pb2.DeadReason, str]] = ...) -> None: ...

class ListDeadLettersResponse(_message.Message):
    __slots__ = ["jobs", "next_page_token"]
    JOBS_FIELD_NUMBER: _ClassVar[int]
    NEXT_PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    jobs: _containers.RepeatedCompositeFieldContainer[_job_pb2.Job]
    next_page_token: str
    def __init__(self, jobs: _Optional[_Iterable[_Union[_job_pb2.Job, _Mapping]]] = ..., next_page_token: _Optional[str] = ...) -> None: ...

class ListQueuesRequest(_message.Message):
    __slots__ = ["page_size", "page_token"]
    PAGE_SIZE_FIELD_NUMBER: _ClassVar[int]
    PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    page_size: int
    page_token: str
    def __init__(self, page_size: _Optional[int] = ..., page_token: _Optional[str] = ...) -> None: ...

class ListQueuesResponse(_message.Message):
    __slots__ = ["next_page_token", "queues"]
    NEXT_PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    QUEUES_FIELD_NUMBER: _ClassVar[int]
    next_page_token: str
    queues: _containers.RepeatedCompositeFieldContainer[_queue_pb2.QueueInfo]
    def __init__(self, queues: _Optional[_Iterable[_Union[_queue_pb2.QueueInfo, _Mapping]]] = ..., next_page_token: _Optional[str] = ...) -> None: ...

class ListTopErrorsRequest(_message.Message):
    __slots__ = ["limit", "queue"]
    LIMIT_FIELD_NUMBER: _ClassVar[int]
    QUEUE_FIELD_NUMBER: _ClassVar[int]
    limit: int
    queue: str
    def __init__(self, queue: _Optional[str] = ..., limit: _Optional[int] = ...) -> None: ...

class ListTopErrorsResponse(_message.Message):
    __slots__ = ["complete", "dead_total", "group_count", "groups", "scanned"]
    COMPLETE_FIELD_NUMBER: _ClassVar[int]
    DEAD_TOTAL_FIELD_NUMBER: _ClassVar[int]
    GROUPS_FIELD_NUMBER: _ClassVar[int]
    GROUP_COUNT_FIELD_NUMBER: _ClassVar[int]
    SCANNED_FIELD_NUMBER: _ClassVar[int]
    complete: bool
    dead_total: int
    group_count: int
    groups: _containers.RepeatedCompositeFieldContainer[ErrorGroup]
    scanned: int
    def __init__(self, groups: _Optional[_Iterable[_Union[ErrorGroup, _Mapping]]] = ..., group_count: _Optional[int] = ..., scanned: _Optional[int] = ..., dead_total: _Optional[int] = ..., complete: bool = ...) -> None: ...

class PauseQueueRequest(_message.Message):
    __slots__ = ["allow_missing", "queue"]
    ALLOW_MISSING_FIELD_NUMBER: _ClassVar[int]
    QUEUE_FIELD_NUMBER: _ClassVar[int]
    allow_missing: bool
    queue: str
    def __init__(self, queue: _Optional[str] = ..., allow_missing: bool = ...) -> None: ...

class PauseQueueResponse(_message.Message):
    __slots__ = []
    def __init__(self) -> None: ...

class PurgeQueueRequest(_message.Message):
    __slots__ = ["background", "queue", "request_key"]
    BACKGROUND_FIELD_NUMBER: _ClassVar[int]
    QUEUE_FIELD_NUMBER: _ClassVar[int]
    REQUEST_KEY_FIELD_NUMBER: _ClassVar[int]
    background: bool
    queue: str
    request_key: str
    def __init__(self, queue: _Optional[str] = ..., background: bool = ..., request_key: _Optional[str] = ...) -> None: ...

class PurgeQueueResponse(_message.Message):
    __slots__ = ["deleted_count", "operation"]
    DELETED_COUNT_FIELD_NUMBER: _ClassVar[int]
    OPERATION_FIELD_NUMBER: _ClassVar[int]
    deleted_count: int
    operation: _bulk_operation_pb2.BulkOperation
    def __init__(self, deleted_count: _Optional[int] = ..., operation: _Optional[_Union[_bulk_operation_pb2.BulkOperation, _Mapping]] = ...) -> None: ...

class ReloadConfigRequest(_message.Message):
    __slots__ = ["allow_security_downgrade", "dry_run"]
    ALLOW_SECURITY_DOWNGRADE_FIELD_NUMBER: _ClassVar[int]
    DRY_RUN_FIELD_NUMBER: _ClassVar[int]
    allow_security_downgrade: bool
    dry_run: bool
    def __init__(self, dry_run: bool = ..., allow_security_downgrade: bool = ...) -> None: ...

class ReloadConfigResponse(_message.Message):
    __slots__ = ["applied", "changed", "changes", "config_file", "problems", "restart_required", "security_downgrades"]
    APPLIED_FIELD_NUMBER: _ClassVar[int]
    CHANGED_FIELD_NUMBER: _ClassVar[int]
    CHANGES_FIELD_NUMBER: _ClassVar[int]
    CONFIG_FILE_FIELD_NUMBER: _ClassVar[int]
    PROBLEMS_FIELD_NUMBER: _ClassVar[int]
    RESTART_REQUIRED_FIELD_NUMBER: _ClassVar[int]
    SECURITY_DOWNGRADES_FIELD_NUMBER: _ClassVar[int]
    applied: bool
    changed: _containers.RepeatedScalarFieldContainer[str]
    changes: _containers.RepeatedCompositeFieldContainer[SettingChange]
    config_file: str
    problems: _containers.RepeatedCompositeFieldContainer[ConfigProblem]
    restart_required: _containers.RepeatedScalarFieldContainer[str]
    security_downgrades: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, applied: bool = ..., changed: _Optional[_Iterable[str]] = ..., restart_required: _Optional[_Iterable[str]] = ..., problems: _Optional[_Iterable[_Union[ConfigProblem, _Mapping]]] = ..., config_file: _Optional[str] = ..., changes: _Optional[_Iterable[_Union[SettingChange, _Mapping]]] = ..., security_downgrades: _Optional[_Iterable[str]] = ...) -> None: ...

class RequeueDeadLettersRequest(_message.Message):
    __slots__ = ["all", "background", "error_text", "job_ids", "queue", "reason", "request_key"]
    ALL_FIELD_NUMBER: _ClassVar[int]
    BACKGROUND_FIELD_NUMBER: _ClassVar[int]
    ERROR_TEXT_FIELD_NUMBER: _ClassVar[int]
    JOB_IDS_FIELD_NUMBER: _ClassVar[int]
    QUEUE_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    REQUEST_KEY_FIELD_NUMBER: _ClassVar[int]
    all: bool
    background: bool
    error_text: str
    job_ids: _containers.RepeatedScalarFieldContainer[str]
    queue: str
    reason: _job_pb2.DeadReason
    request_key: str
    def __init__(self, queue: _Optional[str] = ..., job_ids: _Optional[_Iterable[str]] = ..., all: bool = ..., reason: _Optional[_Union[_job_pb2.DeadReason, str]] = ..., error_text: _Optional[str] = ..., background: bool = ..., request_key: _Optional[str] = ...) -> None: ...

class RequeueDeadLettersResponse(_message.Message):
    __slots__ = ["operation", "requeued_count"]
    OPERATION_FIELD_NUMBER: _ClassVar[int]
    REQUEUED_COUNT_FIELD_NUMBER: _ClassVar[int]
    operation: _bulk_operation_pb2.BulkOperation
    requeued_count: int
    def __init__(self, requeued_count: _Optional[int] = ..., operation: _Optional[_Union[_bulk_operation_pb2.BulkOperation, _Mapping]] = ...) -> None: ...

class ResetQueueSettingsRequest(_message.Message):
    __slots__ = ["all", "keys", "queue"]
    ALL_FIELD_NUMBER: _ClassVar[int]
    KEYS_FIELD_NUMBER: _ClassVar[int]
    QUEUE_FIELD_NUMBER: _ClassVar[int]
    all: bool
    keys: _containers.RepeatedScalarFieldContainer[str]
    queue: str
    def __init__(self, queue: _Optional[str] = ..., keys: _Optional[_Iterable[str]] = ..., all: bool = ...) -> None: ...

class ResetQueueSettingsResponse(_message.Message):
    __slots__ = ["queue"]
    QUEUE_FIELD_NUMBER: _ClassVar[int]
    queue: _queue_pb2.QueueInfo
    def __init__(self, queue: _Optional[_Union[_queue_pb2.QueueInfo, _Mapping]] = ...) -> None: ...

class ResumeQueueRequest(_message.Message):
    __slots__ = ["allow_missing", "queue"]
    ALLOW_MISSING_FIELD_NUMBER: _ClassVar[int]
    QUEUE_FIELD_NUMBER: _ClassVar[int]
    allow_missing: bool
    queue: str
    def __init__(self, queue: _Optional[str] = ..., allow_missing: bool = ...) -> None: ...

class ResumeQueueResponse(_message.Message):
    __slots__ = []
    def __init__(self) -> None: ...

class ServerIdentity(_message.Message):
    __slots__ = ["admin_address", "grpc_address", "host_name", "http_address", "instance_id", "pid"]
    ADMIN_ADDRESS_FIELD_NUMBER: _ClassVar[int]
    GRPC_ADDRESS_FIELD_NUMBER: _ClassVar[int]
    HOST_NAME_FIELD_NUMBER: _ClassVar[int]
    HTTP_ADDRESS_FIELD_NUMBER: _ClassVar[int]
    INSTANCE_ID_FIELD_NUMBER: _ClassVar[int]
    PID_FIELD_NUMBER: _ClassVar[int]
    admin_address: str
    grpc_address: str
    host_name: str
    http_address: str
    instance_id: str
    pid: int
    def __init__(self, host_name: _Optional[str] = ..., instance_id: _Optional[str] = ..., pid: _Optional[int] = ..., grpc_address: _Optional[str] = ..., admin_address: _Optional[str] = ..., http_address: _Optional[str] = ...) -> None: ...

class ServerLimits(_message.Message):
    __slots__ = ["batch_retention_ms", "event_backlog_bytes", "event_backlog_events", "event_resume_window_ms", "finished_outcome_ms", "first_message_timeout_ms", "handshake_timeout_ms", "idle_timeout_ms", "keepalive_ms", "keepalive_timeout_ms", "max_batch_jobs", "max_bytes_in_flight_per_connection", "max_bytes_in_flight_per_key", "max_connections", "max_dependencies_per_job", "max_dependency_results_bytes", "max_dependents_per_job", "max_error_bytes", "max_error_history", "max_event_subscribers", "max_event_subscribers_per_key", "max_flow_depth", "max_flow_jobs", "max_idempotency_key_bytes", "max_message_bytes", "max_metadata_bytes", "max_metadata_entries", "max_name_length", "max_open_batches_per_key", "max_page_size", "max_progress_bytes", "max_queues", "max_reserve_jobs", "max_reserve_queues", "max_result_bytes", "max_schedule_ahead_ms", "max_schedules", "max_streams_per_connection", "max_wait_ms", "max_waiters", "max_worker_id_bytes"]
    BATCH_RETENTION_MS_FIELD_NUMBER: _ClassVar[int]
    EVENT_BACKLOG_BYTES_FIELD_NUMBER: _ClassVar[int]
    EVENT_BACKLOG_EVENTS_FIELD_NUMBER: _ClassVar[int]
    EVENT_RESUME_WINDOW_MS_FIELD_NUMBER: _ClassVar[int]
    FINISHED_OUTCOME_MS_FIELD_NUMBER: _ClassVar[int]
    FIRST_MESSAGE_TIMEOUT_MS_FIELD_NUMBER: _ClassVar[int]
    HANDSHAKE_TIMEOUT_MS_FIELD_NUMBER: _ClassVar[int]
    IDLE_TIMEOUT_MS_FIELD_NUMBER: _ClassVar[int]
    KEEPALIVE_MS_FIELD_NUMBER: _ClassVar[int]
    KEEPALIVE_TIMEOUT_MS_FIELD_NUMBER: _ClassVar[int]
    MAX_BATCH_JOBS_FIELD_NUMBER: _ClassVar[int]
    MAX_BYTES_IN_FLIGHT_PER_CONNECTION_FIELD_NUMBER: _ClassVar[int]
    MAX_BYTES_IN_FLIGHT_PER_KEY_FIELD_NUMBER: _ClassVar[int]
    MAX_CONNECTIONS_FIELD_NUMBER: _ClassVar[int]
    MAX_DEPENDENCIES_PER_JOB_FIELD_NUMBER: _ClassVar[int]
    MAX_DEPENDENCY_RESULTS_BYTES_FIELD_NUMBER: _ClassVar[int]
    MAX_DEPENDENTS_PER_JOB_FIELD_NUMBER: _ClassVar[int]
    MAX_ERROR_BYTES_FIELD_NUMBER: _ClassVar[int]
    MAX_ERROR_HISTORY_FIELD_NUMBER: _ClassVar[int]
    MAX_EVENT_SUBSCRIBERS_FIELD_NUMBER: _ClassVar[int]
    MAX_EVENT_SUBSCRIBERS_PER_KEY_FIELD_NUMBER: _ClassVar[int]
    MAX_FLOW_DEPTH_FIELD_NUMBER: _ClassVar[int]
    MAX_FLOW_JOBS_FIELD_NUMBER: _ClassVar[int]
    MAX_IDEMPOTENCY_KEY_BYTES_FIELD_NUMBER: _ClassVar[int]
    MAX_MESSAGE_BYTES_FIELD_NUMBER: _ClassVar[int]
    MAX_METADATA_BYTES_FIELD_NUMBER: _ClassVar[int]
    MAX_METADATA_ENTRIES_FIELD_NUMBER: _ClassVar[int]
    MAX_NAME_LENGTH_FIELD_NUMBER: _ClassVar[int]
    MAX_OPEN_BATCHES_PER_KEY_FIELD_NUMBER: _ClassVar[int]
    MAX_PAGE_SIZE_FIELD_NUMBER: _ClassVar[int]
    MAX_PROGRESS_BYTES_FIELD_NUMBER: _ClassVar[int]
    MAX_QUEUES_FIELD_NUMBER: _ClassVar[int]
    MAX_RESERVE_JOBS_FIELD_NUMBER: _ClassVar[int]
    MAX_RESERVE_QUEUES_FIELD_NUMBER: _ClassVar[int]
    MAX_RESULT_BYTES_FIELD_NUMBER: _ClassVar[int]
    MAX_SCHEDULES_FIELD_NUMBER: _ClassVar[int]
    MAX_SCHEDULE_AHEAD_MS_FIELD_NUMBER: _ClassVar[int]
    MAX_STREAMS_PER_CONNECTION_FIELD_NUMBER: _ClassVar[int]
    MAX_WAITERS_FIELD_NUMBER: _ClassVar[int]
    MAX_WAIT_MS_FIELD_NUMBER: _ClassVar[int]
    MAX_WORKER_ID_BYTES_FIELD_NUMBER: _ClassVar[int]
    batch_retention_ms: int
    event_backlog_bytes: int
    event_backlog_events: int
    event_resume_window_ms: int
    finished_outcome_ms: int
    first_message_timeout_ms: int
    handshake_timeout_ms: int
    idle_timeout_ms: int
    keepalive_ms: int
    keepalive_timeout_ms: int
    max_batch_jobs: int
    max_bytes_in_flight_per_connection: int
    max_bytes_in_flight_per_key: int
    max_connections: int
    max_dependencies_per_job: int
    max_dependency_results_bytes: int
    max_dependents_per_job: int
    max_error_bytes: int
    max_error_history: int
    max_event_subscribers: int
    max_event_subscribers_per_key: int
    max_flow_depth: int
    max_flow_jobs: int
    max_idempotency_key_bytes: int
    max_message_bytes: int
    max_metadata_bytes: int
    max_metadata_entries: int
    max_name_length: int
    max_open_batches_per_key: int
    max_page_size: int
    max_progress_bytes: int
    max_queues: int
    max_reserve_jobs: int
    max_reserve_queues: int
    max_result_bytes: int
    max_schedule_ahead_ms: int
    max_schedules: int
    max_streams_per_connection: int
    max_wait_ms: int
    max_waiters: int
    max_worker_id_bytes: int
    def __init__(self, max_name_length: _Optional[int] = ..., max_metadata_bytes: _Optional[int] = ..., max_metadata_entries: _Optional[int] = ..., max_idempotency_key_bytes: _Optional[int] = ..., max_worker_id_bytes: _Optional[int] = ..., max_error_bytes: _Optional[int] = ..., max_error_history: _Optional[int] = ..., max_batch_jobs: _Optional[int] = ..., max_reserve_jobs: _Optional[int] = ..., max_schedule_ahead_ms: _Optional[int] = ..., max_wait_ms: _Optional[int] = ..., max_waiters: _Optional[int] = ..., max_page_size: _Optional[int] = ..., max_message_bytes: _Optional[int] = ..., max_reserve_queues: _Optional[int] = ..., max_connections: _Optional[int] = ..., max_streams_per_connection: _Optional[int] = ..., handshake_timeout_ms: _Optional[int] = ..., idle_timeout_ms: _Optional[int] = ..., keepalive_ms: _Optional[int] = ..., keepalive_timeout_ms: _Optional[int] = ..., first_message_timeout_ms: _Optional[int] = ..., max_result_bytes: _Optional[int] = ..., max_progress_bytes: _Optional[int] = ..., max_event_subscribers: _Optional[int] = ..., event_backlog_events: _Optional[int] = ..., event_backlog_bytes: _Optional[int] = ..., event_resume_window_ms: _Optional[int] = ..., max_schedules: _Optional[int] = ..., max_event_subscribers_per_key: _Optional[int] = ..., max_bytes_in_flight_per_connection: _Optional[int] = ..., max_bytes_in_flight_per_key: _Optional[int] = ..., finished_outcome_ms: _Optional[int] = ..., max_queues: _Optional[int] = ..., max_dependencies_per_job: _Optional[int] = ..., max_flow_jobs: _Optional[int] = ..., max_flow_depth: _Optional[int] = ..., max_dependency_results_bytes: _Optional[int] = ..., max_open_batches_per_key: _Optional[int] = ..., batch_retention_ms: _Optional[int] = ..., max_dependents_per_job: _Optional[int] = ...) -> None: ...

class SetQueueSettingsRequest(_message.Message):
    __slots__ = ["queue", "settings"]
    class SettingsEntry(_message.Message):
        __slots__ = ["key", "value"]
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    QUEUE_FIELD_NUMBER: _ClassVar[int]
    SETTINGS_FIELD_NUMBER: _ClassVar[int]
    queue: str
    settings: _containers.ScalarMap[str, str]
    def __init__(self, queue: _Optional[str] = ..., settings: _Optional[_Mapping[str, str]] = ...) -> None: ...

class SetQueueSettingsResponse(_message.Message):
    __slots__ = ["queue"]
    QUEUE_FIELD_NUMBER: _ClassVar[int]
    queue: _queue_pb2.QueueInfo
    def __init__(self, queue: _Optional[_Union[_queue_pb2.QueueInfo, _Mapping]] = ...) -> None: ...

class SettingChange(_message.Message):
    __slots__ = ["key", "new_value", "old_value", "restart_required", "summary"]
    KEY_FIELD_NUMBER: _ClassVar[int]
    NEW_VALUE_FIELD_NUMBER: _ClassVar[int]
    OLD_VALUE_FIELD_NUMBER: _ClassVar[int]
    RESTART_REQUIRED_FIELD_NUMBER: _ClassVar[int]
    SUMMARY_FIELD_NUMBER: _ClassVar[int]
    key: str
    new_value: str
    old_value: str
    restart_required: bool
    summary: str
    def __init__(self, key: _Optional[str] = ..., old_value: _Optional[str] = ..., new_value: _Optional[str] = ..., summary: _Optional[str] = ..., restart_required: bool = ...) -> None: ...

class StoreInfo(_message.Message):
    __slots__ = ["database", "host", "kind", "max_waiting_reads", "max_waiting_reads_per_key", "pool_size", "replication", "schema", "signals_connected", "standbys", "statement_timeout_ms"]
    DATABASE_FIELD_NUMBER: _ClassVar[int]
    HOST_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    MAX_WAITING_READS_FIELD_NUMBER: _ClassVar[int]
    MAX_WAITING_READS_PER_KEY_FIELD_NUMBER: _ClassVar[int]
    POOL_SIZE_FIELD_NUMBER: _ClassVar[int]
    REPLICATION_FIELD_NUMBER: _ClassVar[int]
    SCHEMA_FIELD_NUMBER: _ClassVar[int]
    SIGNALS_CONNECTED_FIELD_NUMBER: _ClassVar[int]
    STANDBYS_FIELD_NUMBER: _ClassVar[int]
    STATEMENT_TIMEOUT_MS_FIELD_NUMBER: _ClassVar[int]
    database: str
    host: str
    kind: str
    max_waiting_reads: int
    max_waiting_reads_per_key: int
    pool_size: int
    replication: str
    schema: str
    signals_connected: bool
    standbys: int
    statement_timeout_ms: int
    def __init__(self, kind: _Optional[str] = ..., host: _Optional[str] = ..., database: _Optional[str] = ..., schema: _Optional[str] = ..., signals_connected: bool = ..., replication: _Optional[str] = ..., standbys: _Optional[int] = ..., pool_size: _Optional[int] = ..., max_waiting_reads: _Optional[int] = ..., max_waiting_reads_per_key: _Optional[int] = ..., statement_timeout_ms: _Optional[int] = ...) -> None: ...

class UpdateJobRequest(_message.Message):
    __slots__ = ["changes", "job_id"]
    CHANGES_FIELD_NUMBER: _ClassVar[int]
    JOB_ID_FIELD_NUMBER: _ClassVar[int]
    changes: JobChanges
    job_id: str
    def __init__(self, job_id: _Optional[str] = ..., changes: _Optional[_Union[JobChanges, _Mapping]] = ...) -> None: ...

class UpdateJobResponse(_message.Message):
    __slots__ = ["job"]
    JOB_FIELD_NUMBER: _ClassVar[int]
    job: _job_pb2.Job
    def __init__(self, job: _Optional[_Union[_job_pb2.Job, _Mapping]] = ...) -> None: ...

class UpdateJobsRequest(_message.Message):
    __slots__ = ["background", "changes", "dry_run", "filter", "request_key"]
    BACKGROUND_FIELD_NUMBER: _ClassVar[int]
    CHANGES_FIELD_NUMBER: _ClassVar[int]
    DRY_RUN_FIELD_NUMBER: _ClassVar[int]
    FILTER_FIELD_NUMBER: _ClassVar[int]
    REQUEST_KEY_FIELD_NUMBER: _ClassVar[int]
    background: bool
    changes: JobChanges
    dry_run: bool
    filter: JobFilter
    request_key: str
    def __init__(self, filter: _Optional[_Union[JobFilter, _Mapping]] = ..., changes: _Optional[_Union[JobChanges, _Mapping]] = ..., dry_run: bool = ..., background: bool = ..., request_key: _Optional[str] = ...) -> None: ...

class UpdateJobsResponse(_message.Message):
    __slots__ = ["matched_at_least", "matched_count", "operation", "updated_count"]
    MATCHED_AT_LEAST_FIELD_NUMBER: _ClassVar[int]
    MATCHED_COUNT_FIELD_NUMBER: _ClassVar[int]
    OPERATION_FIELD_NUMBER: _ClassVar[int]
    UPDATED_COUNT_FIELD_NUMBER: _ClassVar[int]
    matched_at_least: bool
    matched_count: int
    operation: _bulk_operation_pb2.BulkOperation
    updated_count: int
    def __init__(self, updated_count: _Optional[int] = ..., matched_count: _Optional[int] = ..., matched_at_least: bool = ..., operation: _Optional[_Union[_bulk_operation_pb2.BulkOperation, _Mapping]] = ...) -> None: ...

class DurabilityMode(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = []
