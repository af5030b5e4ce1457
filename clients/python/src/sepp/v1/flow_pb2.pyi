from sepp.v1 import job_pb2 as _job_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from typing import ClassVar as _ClassVar, Iterable as _Iterable, Mapping as _Mapping, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

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
