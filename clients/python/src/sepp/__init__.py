"""sepp's Python client: a Client for every RPC, with enqueues from all threads
coalesced onto one Produce stream, and a Worker on the Work stream.

    import sepp

    client = sepp.Client("127.0.0.1:50051")
    client.enqueue("emails", "send", json={"to": "ada@example.com"})

    def send(job: sepp.WorkerJob) -> None:
        print("sending to", job.data["to"])

    client.worker(["emails"], handlers={"send": send}).run()

See docs/python.md in the sepp repository for every option.
"""
from ._connection import RetryOptions, TlsOptions
from ._job_control import (
    AuditEntry,
    AuditLog,
    AuditPage,
    BulkAction,
    BulkOperation,
    BulkResult,
    CancelJobsResult,
    CancelResult,
    Jobs,
    MatchCount,
)
from ._queue_admin import DeadLetters, Queues
from .client import Client
from .errors import (
    JobCancelledError,
    JobTimeoutError,
    JobRejectedError,
    JobRejection,
    LeaseLostError,
    QueueFullError,
    RejectionReason,
    SeppError,
    SeppErrorCode,
    UnavailableError,
)
from ._wait import JobOutcome
from .events import EventPosition, EventStream, JobEvent, JobEventKind
from .handler import DeadLetter, Handler, RetryAfter, WorkerEvent, WorkerJob
from .jobs import DeadLetterPage, DependencyResult, EdgeState, Job, JobLink, LeasedJob
from .models import (
    UNSET,
    AckResult,
    AttemptError,
    BackoffSettings,
    ClientStats,
    DeadReason,
    DependencyPolicy,
    Enqueued,
    EnqueueOutcome,
    ErrorGroup,
    JobSpec,
    JobState,
    Lease,
    LeaseRef,
    NackResult,
    Payload,
    QueueInfo,
    QueueSettings,
    RateLimit,
    ReloadReport,
    ServerInfo,
    ServerLimits,
    SettingSource,
    SettingValue,
    StateCounts,
    StoreInfo,
    TimeInput,
    TopErrors,
    WorkerInfo,
)
from .results import JobProgress, JobResult
from .schedules import (
    MisfirePolicy,
    OverlapPolicy,
    Schedule,
    ScheduleJob,
    ScheduleJobInfo,
    ScheduleOutcome,
    Schedules,
    ScheduleRun,
)
from .worker import Worker
from .workflows import (
    Batch,
    BatchAdded,
    BatchMember,
    BatchState,
    Flow,
    FlowEdge,
    FlowGraph,
    FlowNode,
    MemberState,
    WorkflowCancelled,
)

__version__ = "0.1.0"

__all__ = [
    "UNSET",
    "AckResult",
    "AttemptError",
    "AuditEntry",
    "AuditLog",
    "AuditPage",
    "BackoffSettings",
    "Batch",
    "BatchAdded",
    "BatchMember",
    "BatchState",
    "BulkAction",
    "BulkOperation",
    "BulkResult",
    "CancelJobsResult",
    "CancelResult",
    "Client",
    "ClientStats",
    "DeadLetter",
    "DeadLetterPage",
    "DeadLetters",
    "DeadReason",
    "DependencyPolicy",
    "DependencyResult",
    "EdgeState",
    "EnqueueOutcome",
    "ErrorGroup",
    "Enqueued",
    "EventPosition",
    "EventStream",
    "Flow",
    "FlowEdge",
    "FlowGraph",
    "FlowNode",
    "Handler",
    "Job",
    "JobCancelledError",
    "JobTimeoutError",
    "JobEvent",
    "JobEventKind",
    "JobLink",
    "JobOutcome",
    "JobProgress",
    "JobRejectedError",
    "JobRejection",
    "JobResult",
    "JobSpec",
    "JobState",
    "Jobs",
    "Lease",
    "LeaseLostError",
    "LeaseRef",
    "LeasedJob",
    "MatchCount",
    "MemberState",
    "MisfirePolicy",
    "NackResult",
    "OverlapPolicy",
    "Payload",
    "QueueFullError",
    "QueueInfo",
    "QueueSettings",
    "Queues",
    "RateLimit",
    "RejectionReason",
    "ReloadReport",
    "RetryAfter",
    "RetryOptions",
    "Schedule",
    "ScheduleRun",
    "ScheduleJob",
    "ScheduleJobInfo",
    "ScheduleOutcome",
    "Schedules",
    "SeppError",
    "SeppErrorCode",
    "ServerInfo",
    "ServerLimits",
    "SettingSource",
    "SettingValue",
    "StateCounts",
    "StoreInfo",
    "TimeInput",
    "TopErrors",
    "TlsOptions",
    "UnavailableError",
    "Worker",
    "WorkerEvent",
    "WorkerInfo",
    "WorkerJob",
    "WorkflowCancelled",
    "__version__",
]
