from sepp.v1 import admin_pb2 as _admin_pb2
from sepp.v1 import bulk_operation_pb2 as _bulk_operation_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from typing import ClassVar as _ClassVar, Iterable as _Iterable, Mapping as _Mapping, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class CancelBulkOperationRequest(_message.Message):
    __slots__ = ["id"]
    ID_FIELD_NUMBER: _ClassVar[int]
    id: str
    def __init__(self, id: _Optional[str] = ...) -> None: ...

class CancelBulkOperationResponse(_message.Message):
    __slots__ = ["operation"]
    OPERATION_FIELD_NUMBER: _ClassVar[int]
    operation: _bulk_operation_pb2.BulkOperation
    def __init__(self, operation: _Optional[_Union[_bulk_operation_pb2.BulkOperation, _Mapping]] = ...) -> None: ...

class DeleteJobsRequest(_message.Message):
    __slots__ = ["background", "dry_run", "filter", "request_key"]
    BACKGROUND_FIELD_NUMBER: _ClassVar[int]
    DRY_RUN_FIELD_NUMBER: _ClassVar[int]
    FILTER_FIELD_NUMBER: _ClassVar[int]
    REQUEST_KEY_FIELD_NUMBER: _ClassVar[int]
    background: bool
    dry_run: bool
    filter: _admin_pb2.JobFilter
    request_key: str
    def __init__(self, filter: _Optional[_Union[_admin_pb2.JobFilter, _Mapping]] = ..., dry_run: bool = ..., background: bool = ..., request_key: _Optional[str] = ...) -> None: ...

class DeleteJobsResponse(_message.Message):
    __slots__ = ["deleted_count", "matched_at_least", "matched_count", "operation"]
    DELETED_COUNT_FIELD_NUMBER: _ClassVar[int]
    MATCHED_AT_LEAST_FIELD_NUMBER: _ClassVar[int]
    MATCHED_COUNT_FIELD_NUMBER: _ClassVar[int]
    OPERATION_FIELD_NUMBER: _ClassVar[int]
    deleted_count: int
    matched_at_least: bool
    matched_count: int
    operation: _bulk_operation_pb2.BulkOperation
    def __init__(self, deleted_count: _Optional[int] = ..., matched_count: _Optional[int] = ..., matched_at_least: bool = ..., operation: _Optional[_Union[_bulk_operation_pb2.BulkOperation, _Mapping]] = ...) -> None: ...

class GetBulkOperationRequest(_message.Message):
    __slots__ = ["id"]
    ID_FIELD_NUMBER: _ClassVar[int]
    id: str
    def __init__(self, id: _Optional[str] = ...) -> None: ...

class GetBulkOperationResponse(_message.Message):
    __slots__ = ["operation"]
    OPERATION_FIELD_NUMBER: _ClassVar[int]
    operation: _bulk_operation_pb2.BulkOperation
    def __init__(self, operation: _Optional[_Union[_bulk_operation_pb2.BulkOperation, _Mapping]] = ...) -> None: ...

class ListBulkOperationsRequest(_message.Message):
    __slots__ = []
    def __init__(self) -> None: ...

class ListBulkOperationsResponse(_message.Message):
    __slots__ = ["operations"]
    OPERATIONS_FIELD_NUMBER: _ClassVar[int]
    operations: _containers.RepeatedCompositeFieldContainer[_bulk_operation_pb2.BulkOperation]
    def __init__(self, operations: _Optional[_Iterable[_Union[_bulk_operation_pb2.BulkOperation, _Mapping]]] = ...) -> None: ...

class RequeueJobsRequest(_message.Message):
    __slots__ = ["background", "dry_run", "filter", "request_key"]
    BACKGROUND_FIELD_NUMBER: _ClassVar[int]
    DRY_RUN_FIELD_NUMBER: _ClassVar[int]
    FILTER_FIELD_NUMBER: _ClassVar[int]
    REQUEST_KEY_FIELD_NUMBER: _ClassVar[int]
    background: bool
    dry_run: bool
    filter: _admin_pb2.JobFilter
    request_key: str
    def __init__(self, filter: _Optional[_Union[_admin_pb2.JobFilter, _Mapping]] = ..., dry_run: bool = ..., background: bool = ..., request_key: _Optional[str] = ...) -> None: ...

class RequeueJobsResponse(_message.Message):
    __slots__ = ["matched_at_least", "matched_count", "operation", "requeued_count"]
    MATCHED_AT_LEAST_FIELD_NUMBER: _ClassVar[int]
    MATCHED_COUNT_FIELD_NUMBER: _ClassVar[int]
    OPERATION_FIELD_NUMBER: _ClassVar[int]
    REQUEUED_COUNT_FIELD_NUMBER: _ClassVar[int]
    matched_at_least: bool
    matched_count: int
    operation: _bulk_operation_pb2.BulkOperation
    requeued_count: int
    def __init__(self, requeued_count: _Optional[int] = ..., matched_count: _Optional[int] = ..., matched_at_least: bool = ..., operation: _Optional[_Union[_bulk_operation_pb2.BulkOperation, _Mapping]] = ...) -> None: ...
