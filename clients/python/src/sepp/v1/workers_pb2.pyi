from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from typing import ClassVar as _ClassVar, Iterable as _Iterable, Mapping as _Mapping, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor
WORKER_TRANSPORT_RESERVE: WorkerTransport
WORKER_TRANSPORT_UNSPECIFIED: WorkerTransport
WORKER_TRANSPORT_WORK_STREAM: WorkerTransport

class ListWorkersRequest(_message.Message):
    __slots__ = ["page_size", "page_token"]
    PAGE_SIZE_FIELD_NUMBER: _ClassVar[int]
    PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    page_size: int
    page_token: str
    def __init__(self, page_size: _Optional[int] = ..., page_token: _Optional[str] = ...) -> None: ...

class ListWorkersResponse(_message.Message):
    __slots__ = ["next_page_token", "waiting_reserves", "workers"]
    NEXT_PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    WAITING_RESERVES_FIELD_NUMBER: _ClassVar[int]
    WORKERS_FIELD_NUMBER: _ClassVar[int]
    next_page_token: str
    waiting_reserves: int
    workers: _containers.RepeatedCompositeFieldContainer[WorkerInfo]
    def __init__(self, workers: _Optional[_Iterable[_Union[WorkerInfo, _Mapping]]] = ..., waiting_reserves: _Optional[int] = ..., next_page_token: _Optional[str] = ...) -> None: ...

class WorkerInfo(_message.Message):
    __slots__ = ["address", "completed_recent", "connected_at_ms", "connections", "failed_recent", "jobs_held", "last_seen_at_ms", "oldest_lease_at_ms", "queues", "recent_window_ms", "transport", "worker_id"]
    ADDRESS_FIELD_NUMBER: _ClassVar[int]
    COMPLETED_RECENT_FIELD_NUMBER: _ClassVar[int]
    CONNECTED_AT_MS_FIELD_NUMBER: _ClassVar[int]
    CONNECTIONS_FIELD_NUMBER: _ClassVar[int]
    FAILED_RECENT_FIELD_NUMBER: _ClassVar[int]
    JOBS_HELD_FIELD_NUMBER: _ClassVar[int]
    LAST_SEEN_AT_MS_FIELD_NUMBER: _ClassVar[int]
    OLDEST_LEASE_AT_MS_FIELD_NUMBER: _ClassVar[int]
    QUEUES_FIELD_NUMBER: _ClassVar[int]
    RECENT_WINDOW_MS_FIELD_NUMBER: _ClassVar[int]
    TRANSPORT_FIELD_NUMBER: _ClassVar[int]
    WORKER_ID_FIELD_NUMBER: _ClassVar[int]
    address: str
    completed_recent: int
    connected_at_ms: int
    connections: int
    failed_recent: int
    jobs_held: int
    last_seen_at_ms: int
    oldest_lease_at_ms: int
    queues: _containers.RepeatedScalarFieldContainer[str]
    recent_window_ms: int
    transport: WorkerTransport
    worker_id: str
    def __init__(self, worker_id: _Optional[str] = ..., address: _Optional[str] = ..., transport: _Optional[_Union[WorkerTransport, str]] = ..., queues: _Optional[_Iterable[str]] = ..., connected_at_ms: _Optional[int] = ..., last_seen_at_ms: _Optional[int] = ..., jobs_held: _Optional[int] = ..., oldest_lease_at_ms: _Optional[int] = ..., connections: _Optional[int] = ..., completed_recent: _Optional[int] = ..., failed_recent: _Optional[int] = ..., recent_window_ms: _Optional[int] = ...) -> None: ...

class WorkerTransport(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = []
