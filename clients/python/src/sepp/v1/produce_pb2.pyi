from sepp.v1 import flow_pb2 as _flow_pb2
from sepp.v1 import job_pb2 as _job_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from typing import ClassVar as _ClassVar, Iterable as _Iterable, Mapping as _Mapping, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class EnqueueAtomicRequest(_message.Message):
    __slots__ = ["jobs"]
    JOBS_FIELD_NUMBER: _ClassVar[int]
    jobs: _containers.RepeatedCompositeFieldContainer[_job_pb2.EnqueueJob]
    def __init__(self, jobs: _Optional[_Iterable[_Union[_job_pb2.EnqueueJob, _Mapping]]] = ...) -> None: ...

class EnqueueAtomicResponse(_message.Message):
    __slots__ = ["committed", "rejections", "results"]
    COMMITTED_FIELD_NUMBER: _ClassVar[int]
    REJECTIONS_FIELD_NUMBER: _ClassVar[int]
    RESULTS_FIELD_NUMBER: _ClassVar[int]
    committed: bool
    rejections: _containers.RepeatedCompositeFieldContainer[_job_pb2.IndexedRejection]
    results: _containers.RepeatedCompositeFieldContainer[_job_pb2.EnqueueAccepted]
    def __init__(self, committed: bool = ..., results: _Optional[_Iterable[_Union[_job_pb2.EnqueueAccepted, _Mapping]]] = ..., rejections: _Optional[_Iterable[_Union[_job_pb2.IndexedRejection, _Mapping]]] = ...) -> None: ...

class EnqueueBatchRequest(_message.Message):
    __slots__ = ["jobs"]
    JOBS_FIELD_NUMBER: _ClassVar[int]
    jobs: _containers.RepeatedCompositeFieldContainer[_job_pb2.EnqueueJob]
    def __init__(self, jobs: _Optional[_Iterable[_Union[_job_pb2.EnqueueJob, _Mapping]]] = ...) -> None: ...

class EnqueueBatchResponse(_message.Message):
    __slots__ = ["results"]
    RESULTS_FIELD_NUMBER: _ClassVar[int]
    results: _containers.RepeatedCompositeFieldContainer[_job_pb2.EnqueueResult]
    def __init__(self, results: _Optional[_Iterable[_Union[_job_pb2.EnqueueResult, _Mapping]]] = ...) -> None: ...

class EnqueueRequest(_message.Message):
    __slots__ = ["job"]
    JOB_FIELD_NUMBER: _ClassVar[int]
    job: _job_pb2.EnqueueJob
    def __init__(self, job: _Optional[_Union[_job_pb2.EnqueueJob, _Mapping]] = ...) -> None: ...

class EnqueueResponse(_message.Message):
    __slots__ = ["deduplicated", "job_id"]
    DEDUPLICATED_FIELD_NUMBER: _ClassVar[int]
    JOB_ID_FIELD_NUMBER: _ClassVar[int]
    deduplicated: bool
    job_id: str
    def __init__(self, job_id: _Optional[str] = ..., deduplicated: bool = ...) -> None: ...

class ProduceFlowAnswer(_message.Message):
    __slots__ = ["code", "flow", "message", "retry"]
    CODE_FIELD_NUMBER: _ClassVar[int]
    FLOW_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    RETRY_FIELD_NUMBER: _ClassVar[int]
    code: int
    flow: _flow_pb2.EnqueueFlowResponse
    message: str
    retry: str
    def __init__(self, code: _Optional[int] = ..., message: _Optional[str] = ..., flow: _Optional[_Union[_flow_pb2.EnqueueFlowResponse, _Mapping]] = ..., retry: _Optional[str] = ...) -> None: ...

class ProduceFlowAnswers(_message.Message):
    __slots__ = ["answers"]
    ANSWERS_FIELD_NUMBER: _ClassVar[int]
    answers: _containers.RepeatedCompositeFieldContainer[ProduceFlowAnswer]
    def __init__(self, answers: _Optional[_Iterable[_Union[ProduceFlowAnswer, _Mapping]]] = ...) -> None: ...

class ProduceFlows(_message.Message):
    __slots__ = ["flows"]
    FLOWS_FIELD_NUMBER: _ClassVar[int]
    flows: _containers.RepeatedCompositeFieldContainer[_flow_pb2.EnqueueFlowRequest]
    def __init__(self, flows: _Optional[_Iterable[_Union[_flow_pb2.EnqueueFlowRequest, _Mapping]]] = ...) -> None: ...

class ProduceRequest(_message.Message):
    __slots__ = ["atomic", "flow", "flows", "jobs", "sequence"]
    ATOMIC_FIELD_NUMBER: _ClassVar[int]
    FLOWS_FIELD_NUMBER: _ClassVar[int]
    FLOW_FIELD_NUMBER: _ClassVar[int]
    JOBS_FIELD_NUMBER: _ClassVar[int]
    SEQUENCE_FIELD_NUMBER: _ClassVar[int]
    atomic: bool
    flow: _flow_pb2.EnqueueFlowRequest
    flows: ProduceFlows
    jobs: _containers.RepeatedCompositeFieldContainer[_job_pb2.EnqueueJob]
    sequence: int
    def __init__(self, sequence: _Optional[int] = ..., jobs: _Optional[_Iterable[_Union[_job_pb2.EnqueueJob, _Mapping]]] = ..., atomic: bool = ..., flow: _Optional[_Union[_flow_pb2.EnqueueFlowRequest, _Mapping]] = ..., flows: _Optional[_Union[ProduceFlows, _Mapping]] = ...) -> None: ...

class ProduceResponse(_message.Message):
    __slots__ = ["atomic", "code", "flow", "flows", "message", "results", "retry", "sequence"]
    ATOMIC_FIELD_NUMBER: _ClassVar[int]
    CODE_FIELD_NUMBER: _ClassVar[int]
    FLOWS_FIELD_NUMBER: _ClassVar[int]
    FLOW_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    RESULTS_FIELD_NUMBER: _ClassVar[int]
    RETRY_FIELD_NUMBER: _ClassVar[int]
    SEQUENCE_FIELD_NUMBER: _ClassVar[int]
    atomic: EnqueueAtomicResponse
    code: int
    flow: _flow_pb2.EnqueueFlowResponse
    flows: ProduceFlowAnswers
    message: str
    results: _containers.RepeatedCompositeFieldContainer[_job_pb2.EnqueueResult]
    retry: str
    sequence: int
    def __init__(self, sequence: _Optional[int] = ..., code: _Optional[int] = ..., message: _Optional[str] = ..., results: _Optional[_Iterable[_Union[_job_pb2.EnqueueResult, _Mapping]]] = ..., atomic: _Optional[_Union[EnqueueAtomicResponse, _Mapping]] = ..., flow: _Optional[_Union[_flow_pb2.EnqueueFlowResponse, _Mapping]] = ..., flows: _Optional[_Union[ProduceFlowAnswers, _Mapping]] = ..., retry: _Optional[str] = ...) -> None: ...
