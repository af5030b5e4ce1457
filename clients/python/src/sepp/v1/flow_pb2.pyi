from sepp.v1 import job_pb2 as _job_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from typing import ClassVar as _ClassVar, Iterable as _Iterable, Mapping as _Mapping, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class CancelFlowRequest(_message.Message):
    __slots__ = ["job_id"]
    JOB_ID_FIELD_NUMBER: _ClassVar[int]
    job_id: str
    def __init__(self, job_id: _Optional[str] = ...) -> None: ...

class CancelFlowResponse(_message.Message):
    __slots__ = ["cancel_requested", "cancelled"]
    CANCELLED_FIELD_NUMBER: _ClassVar[int]
    CANCEL_REQUESTED_FIELD_NUMBER: _ClassVar[int]
    cancel_requested: int
    cancelled: int
    def __init__(self, cancelled: _Optional[int] = ..., cancel_requested: _Optional[int] = ...) -> None: ...

class EnqueueFlowRequest(_message.Message):
    __slots__ = ["jobs"]
    JOBS_FIELD_NUMBER: _ClassVar[int]
    jobs: _containers.RepeatedCompositeFieldContainer[FlowJob]
    def __init__(self, jobs: _Optional[_Iterable[_Union[FlowJob, _Mapping]]] = ...) -> None: ...

class EnqueueFlowResponse(_message.Message):
    __slots__ = ["committed", "jobs", "rejections"]
    COMMITTED_FIELD_NUMBER: _ClassVar[int]
    JOBS_FIELD_NUMBER: _ClassVar[int]
    REJECTIONS_FIELD_NUMBER: _ClassVar[int]
    committed: bool
    jobs: _containers.RepeatedCompositeFieldContainer[FlowJobId]
    rejections: _containers.RepeatedCompositeFieldContainer[_job_pb2.IndexedRejection]
    def __init__(self, committed: bool = ..., jobs: _Optional[_Iterable[_Union[FlowJobId, _Mapping]]] = ..., rejections: _Optional[_Iterable[_Union[_job_pb2.IndexedRejection, _Mapping]]] = ...) -> None: ...

class FlowEdge(_message.Message):
    __slots__ = ["depends_on", "job_id", "name", "state"]
    DEPENDS_ON_FIELD_NUMBER: _ClassVar[int]
    JOB_ID_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    depends_on: str
    job_id: str
    name: str
    state: _job_pb2.DependencyEdgeState
    def __init__(self, job_id: _Optional[str] = ..., depends_on: _Optional[str] = ..., state: _Optional[_Union[_job_pb2.DependencyEdgeState, str]] = ..., name: _Optional[str] = ...) -> None: ...

class FlowJob(_message.Message):
    __slots__ = ["after", "job", "name"]
    AFTER_FIELD_NUMBER: _ClassVar[int]
    JOB_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    after: _containers.RepeatedScalarFieldContainer[str]
    job: _job_pb2.EnqueueJob
    name: str
    def __init__(self, name: _Optional[str] = ..., job: _Optional[_Union[_job_pb2.EnqueueJob, _Mapping]] = ..., after: _Optional[_Iterable[str]] = ...) -> None: ...

class FlowJobId(_message.Message):
    __slots__ = ["deduplicated", "job_id", "name"]
    DEDUPLICATED_FIELD_NUMBER: _ClassVar[int]
    JOB_ID_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    deduplicated: bool
    job_id: str
    name: str
    def __init__(self, name: _Optional[str] = ..., job_id: _Optional[str] = ..., deduplicated: bool = ...) -> None: ...

class FlowNode(_message.Message):
    __slots__ = ["job_id", "name", "queue", "state", "type"]
    JOB_ID_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    QUEUE_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    TYPE_FIELD_NUMBER: _ClassVar[int]
    job_id: str
    name: str
    queue: str
    state: _job_pb2.JobState
    type: str
    def __init__(self, job_id: _Optional[str] = ..., queue: _Optional[str] = ..., type: _Optional[str] = ..., state: _Optional[_Union[_job_pb2.JobState, str]] = ..., name: _Optional[str] = ...) -> None: ...

class GetFlowRequest(_message.Message):
    __slots__ = ["job_id", "limit"]
    JOB_ID_FIELD_NUMBER: _ClassVar[int]
    LIMIT_FIELD_NUMBER: _ClassVar[int]
    job_id: str
    limit: int
    def __init__(self, job_id: _Optional[str] = ..., limit: _Optional[int] = ...) -> None: ...

class GetFlowResponse(_message.Message):
    __slots__ = ["edges", "edges_limited", "jobs", "truncated"]
    EDGES_FIELD_NUMBER: _ClassVar[int]
    EDGES_LIMITED_FIELD_NUMBER: _ClassVar[int]
    JOBS_FIELD_NUMBER: _ClassVar[int]
    TRUNCATED_FIELD_NUMBER: _ClassVar[int]
    edges: _containers.RepeatedCompositeFieldContainer[FlowEdge]
    edges_limited: bool
    jobs: _containers.RepeatedCompositeFieldContainer[FlowNode]
    truncated: bool
    def __init__(self, jobs: _Optional[_Iterable[_Union[FlowNode, _Mapping]]] = ..., edges: _Optional[_Iterable[_Union[FlowEdge, _Mapping]]] = ..., truncated: bool = ..., edges_limited: bool = ...) -> None: ...
