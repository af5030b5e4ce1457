from sepp.v1 import job_pb2 as _job_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from typing import ClassVar as _ClassVar, Iterable as _Iterable, Mapping as _Mapping, Optional as _Optional, Union as _Union

BATCH_MEMBER_STATE_CANCELLED: BatchMemberState
BATCH_MEMBER_STATE_COMPLETED: BatchMemberState
BATCH_MEMBER_STATE_DEAD: BatchMemberState
BATCH_MEMBER_STATE_PENDING: BatchMemberState
BATCH_MEMBER_STATE_UNSPECIFIED: BatchMemberState
BATCH_STATE_ENDED: BatchState
BATCH_STATE_OPEN: BatchState
BATCH_STATE_SEALED: BatchState
BATCH_STATE_UNSPECIFIED: BatchState
DESCRIPTOR: _descriptor.FileDescriptor

class AddToBatchRequest(_message.Message):
    __slots__ = ["batch_id", "from_member", "from_member_attempt", "from_member_token", "jobs", "seal", "seal_if_all_stored"]
    BATCH_ID_FIELD_NUMBER: _ClassVar[int]
    FROM_MEMBER_ATTEMPT_FIELD_NUMBER: _ClassVar[int]
    FROM_MEMBER_FIELD_NUMBER: _ClassVar[int]
    FROM_MEMBER_TOKEN_FIELD_NUMBER: _ClassVar[int]
    JOBS_FIELD_NUMBER: _ClassVar[int]
    SEAL_FIELD_NUMBER: _ClassVar[int]
    SEAL_IF_ALL_STORED_FIELD_NUMBER: _ClassVar[int]
    batch_id: str
    from_member: str
    from_member_attempt: int
    from_member_token: str
    jobs: _containers.RepeatedCompositeFieldContainer[_job_pb2.EnqueueJob]
    seal: bool
    seal_if_all_stored: bool
    def __init__(self, batch_id: _Optional[str] = ..., jobs: _Optional[_Iterable[_Union[_job_pb2.EnqueueJob, _Mapping]]] = ..., seal: bool = ..., from_member: _Optional[str] = ..., from_member_attempt: _Optional[int] = ..., from_member_token: _Optional[str] = ..., seal_if_all_stored: bool = ...) -> None: ...

class AddToBatchResponse(_message.Message):
    __slots__ = ["batch", "results"]
    BATCH_FIELD_NUMBER: _ClassVar[int]
    RESULTS_FIELD_NUMBER: _ClassVar[int]
    batch: Batch
    results: _containers.RepeatedCompositeFieldContainer[_job_pb2.EnqueueResult]
    def __init__(self, batch: _Optional[_Union[Batch, _Mapping]] = ..., results: _Optional[_Iterable[_Union[_job_pb2.EnqueueResult, _Mapping]]] = ...) -> None: ...

class Batch(_message.Message):
    __slots__ = ["cancelled", "complete_job_id", "completed", "completion_error", "created_at_ms", "dead", "death_job_id", "ended_at_ms", "first_dead_id", "has_on_complete", "has_on_death", "has_on_success", "id", "members", "owner", "pending", "sealed_at_ms", "state", "success_job_id"]
    CANCELLED_FIELD_NUMBER: _ClassVar[int]
    COMPLETED_FIELD_NUMBER: _ClassVar[int]
    COMPLETE_JOB_ID_FIELD_NUMBER: _ClassVar[int]
    COMPLETION_ERROR_FIELD_NUMBER: _ClassVar[int]
    CREATED_AT_MS_FIELD_NUMBER: _ClassVar[int]
    DEAD_FIELD_NUMBER: _ClassVar[int]
    DEATH_JOB_ID_FIELD_NUMBER: _ClassVar[int]
    ENDED_AT_MS_FIELD_NUMBER: _ClassVar[int]
    FIRST_DEAD_ID_FIELD_NUMBER: _ClassVar[int]
    HAS_ON_COMPLETE_FIELD_NUMBER: _ClassVar[int]
    HAS_ON_DEATH_FIELD_NUMBER: _ClassVar[int]
    HAS_ON_SUCCESS_FIELD_NUMBER: _ClassVar[int]
    ID_FIELD_NUMBER: _ClassVar[int]
    MEMBERS_FIELD_NUMBER: _ClassVar[int]
    OWNER_FIELD_NUMBER: _ClassVar[int]
    PENDING_FIELD_NUMBER: _ClassVar[int]
    SEALED_AT_MS_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    SUCCESS_JOB_ID_FIELD_NUMBER: _ClassVar[int]
    cancelled: int
    complete_job_id: str
    completed: int
    completion_error: str
    created_at_ms: int
    dead: int
    death_job_id: str
    ended_at_ms: int
    first_dead_id: str
    has_on_complete: bool
    has_on_death: bool
    has_on_success: bool
    id: str
    members: int
    owner: str
    pending: int
    sealed_at_ms: int
    state: BatchState
    success_job_id: str
    def __init__(self, id: _Optional[str] = ..., state: _Optional[_Union[BatchState, str]] = ..., created_at_ms: _Optional[int] = ..., sealed_at_ms: _Optional[int] = ..., ended_at_ms: _Optional[int] = ..., members: _Optional[int] = ..., pending: _Optional[int] = ..., completed: _Optional[int] = ..., dead: _Optional[int] = ..., cancelled: _Optional[int] = ..., has_on_complete: bool = ..., has_on_success: bool = ..., complete_job_id: _Optional[str] = ..., success_job_id: _Optional[str] = ..., completion_error: _Optional[str] = ..., owner: _Optional[str] = ..., has_on_death: bool = ..., first_dead_id: _Optional[str] = ..., death_job_id: _Optional[str] = ...) -> None: ...

class BatchMember(_message.Message):
    __slots__ = ["job_id", "job_state", "member_state", "position"]
    JOB_ID_FIELD_NUMBER: _ClassVar[int]
    JOB_STATE_FIELD_NUMBER: _ClassVar[int]
    MEMBER_STATE_FIELD_NUMBER: _ClassVar[int]
    POSITION_FIELD_NUMBER: _ClassVar[int]
    job_id: str
    job_state: _job_pb2.JobState
    member_state: BatchMemberState
    position: int
    def __init__(self, job_id: _Optional[str] = ..., position: _Optional[int] = ..., member_state: _Optional[_Union[BatchMemberState, str]] = ..., job_state: _Optional[_Union[_job_pb2.JobState, str]] = ...) -> None: ...

class CancelBatchRequest(_message.Message):
    __slots__ = ["batch_id"]
    BATCH_ID_FIELD_NUMBER: _ClassVar[int]
    batch_id: str
    def __init__(self, batch_id: _Optional[str] = ...) -> None: ...

class CancelBatchResponse(_message.Message):
    __slots__ = ["cancel_requested", "cancelled"]
    CANCELLED_FIELD_NUMBER: _ClassVar[int]
    CANCEL_REQUESTED_FIELD_NUMBER: _ClassVar[int]
    cancel_requested: int
    cancelled: int
    def __init__(self, cancelled: _Optional[int] = ..., cancel_requested: _Optional[int] = ...) -> None: ...

class CreateBatchRequest(_message.Message):
    __slots__ = ["jobs", "on_complete", "on_death", "on_success", "seal", "seal_if_all_stored"]
    JOBS_FIELD_NUMBER: _ClassVar[int]
    ON_COMPLETE_FIELD_NUMBER: _ClassVar[int]
    ON_DEATH_FIELD_NUMBER: _ClassVar[int]
    ON_SUCCESS_FIELD_NUMBER: _ClassVar[int]
    SEAL_FIELD_NUMBER: _ClassVar[int]
    SEAL_IF_ALL_STORED_FIELD_NUMBER: _ClassVar[int]
    jobs: _containers.RepeatedCompositeFieldContainer[_job_pb2.EnqueueJob]
    on_complete: _job_pb2.EnqueueJob
    on_death: _job_pb2.EnqueueJob
    on_success: _job_pb2.EnqueueJob
    seal: bool
    seal_if_all_stored: bool
    def __init__(self, on_complete: _Optional[_Union[_job_pb2.EnqueueJob, _Mapping]] = ..., on_success: _Optional[_Union[_job_pb2.EnqueueJob, _Mapping]] = ..., jobs: _Optional[_Iterable[_Union[_job_pb2.EnqueueJob, _Mapping]]] = ..., seal: bool = ..., on_death: _Optional[_Union[_job_pb2.EnqueueJob, _Mapping]] = ..., seal_if_all_stored: bool = ...) -> None: ...

class CreateBatchResponse(_message.Message):
    __slots__ = ["batch", "results"]
    BATCH_FIELD_NUMBER: _ClassVar[int]
    RESULTS_FIELD_NUMBER: _ClassVar[int]
    batch: Batch
    results: _containers.RepeatedCompositeFieldContainer[_job_pb2.EnqueueResult]
    def __init__(self, batch: _Optional[_Union[Batch, _Mapping]] = ..., results: _Optional[_Iterable[_Union[_job_pb2.EnqueueResult, _Mapping]]] = ...) -> None: ...

class GetBatchRequest(_message.Message):
    __slots__ = ["batch_id", "members_after", "members_after_set", "members_limit"]
    BATCH_ID_FIELD_NUMBER: _ClassVar[int]
    MEMBERS_AFTER_FIELD_NUMBER: _ClassVar[int]
    MEMBERS_AFTER_SET_FIELD_NUMBER: _ClassVar[int]
    MEMBERS_LIMIT_FIELD_NUMBER: _ClassVar[int]
    batch_id: str
    members_after: int
    members_after_set: bool
    members_limit: int
    def __init__(self, batch_id: _Optional[str] = ..., members_after: _Optional[int] = ..., members_after_set: bool = ..., members_limit: _Optional[int] = ...) -> None: ...

class GetBatchResponse(_message.Message):
    __slots__ = ["batch", "members"]
    BATCH_FIELD_NUMBER: _ClassVar[int]
    MEMBERS_FIELD_NUMBER: _ClassVar[int]
    batch: Batch
    members: _containers.RepeatedCompositeFieldContainer[BatchMember]
    def __init__(self, batch: _Optional[_Union[Batch, _Mapping]] = ..., members: _Optional[_Iterable[_Union[BatchMember, _Mapping]]] = ...) -> None: ...

class ListBatchesRequest(_message.Message):
    __slots__ = ["owner", "owner_set", "page_size", "page_token", "state"]
    OWNER_FIELD_NUMBER: _ClassVar[int]
    OWNER_SET_FIELD_NUMBER: _ClassVar[int]
    PAGE_SIZE_FIELD_NUMBER: _ClassVar[int]
    PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    owner: str
    owner_set: bool
    page_size: int
    page_token: str
    state: BatchState
    def __init__(self, state: _Optional[_Union[BatchState, str]] = ..., owner: _Optional[str] = ..., owner_set: bool = ..., page_size: _Optional[int] = ..., page_token: _Optional[str] = ...) -> None: ...

class ListBatchesResponse(_message.Message):
    __slots__ = ["batches", "next_page_token"]
    BATCHES_FIELD_NUMBER: _ClassVar[int]
    NEXT_PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    batches: _containers.RepeatedCompositeFieldContainer[Batch]
    next_page_token: str
    def __init__(self, batches: _Optional[_Iterable[_Union[Batch, _Mapping]]] = ..., next_page_token: _Optional[str] = ...) -> None: ...

class SealBatchRequest(_message.Message):
    __slots__ = ["batch_id"]
    BATCH_ID_FIELD_NUMBER: _ClassVar[int]
    batch_id: str
    def __init__(self, batch_id: _Optional[str] = ...) -> None: ...

class SealBatchResponse(_message.Message):
    __slots__ = ["batch"]
    BATCH_FIELD_NUMBER: _ClassVar[int]
    batch: Batch
    def __init__(self, batch: _Optional[_Union[Batch, _Mapping]] = ...) -> None: ...

class BatchState(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = []

class BatchMemberState(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = []
