from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

BULK_OPERATION_STATE_CANCELLED: BulkOperationState
BULK_OPERATION_STATE_DONE: BulkOperationState
BULK_OPERATION_STATE_FAILED: BulkOperationState
BULK_OPERATION_STATE_RUNNING: BulkOperationState
BULK_OPERATION_STATE_UNSPECIFIED: BulkOperationState
DESCRIPTOR: _descriptor.FileDescriptor

class BulkOperation(_message.Message):
    __slots__ = ["action", "actor", "cancel_requested_count", "changed_count", "details_json", "error", "examined_count", "finished_at_ms", "id", "matched_at_least", "matched_count", "slices", "started_at_ms", "state"]
    ACTION_FIELD_NUMBER: _ClassVar[int]
    ACTOR_FIELD_NUMBER: _ClassVar[int]
    CANCEL_REQUESTED_COUNT_FIELD_NUMBER: _ClassVar[int]
    CHANGED_COUNT_FIELD_NUMBER: _ClassVar[int]
    DETAILS_JSON_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    EXAMINED_COUNT_FIELD_NUMBER: _ClassVar[int]
    FINISHED_AT_MS_FIELD_NUMBER: _ClassVar[int]
    ID_FIELD_NUMBER: _ClassVar[int]
    MATCHED_AT_LEAST_FIELD_NUMBER: _ClassVar[int]
    MATCHED_COUNT_FIELD_NUMBER: _ClassVar[int]
    SLICES_FIELD_NUMBER: _ClassVar[int]
    STARTED_AT_MS_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    action: str
    actor: str
    cancel_requested_count: int
    changed_count: int
    details_json: str
    error: str
    examined_count: int
    finished_at_ms: int
    id: str
    matched_at_least: bool
    matched_count: int
    slices: int
    started_at_ms: int
    state: BulkOperationState
    def __init__(self, id: _Optional[str] = ..., action: _Optional[str] = ..., state: _Optional[_Union[BulkOperationState, str]] = ..., details_json: _Optional[str] = ..., matched_count: _Optional[int] = ..., matched_at_least: bool = ..., changed_count: _Optional[int] = ..., cancel_requested_count: _Optional[int] = ..., examined_count: _Optional[int] = ..., slices: _Optional[int] = ..., started_at_ms: _Optional[int] = ..., finished_at_ms: _Optional[int] = ..., error: _Optional[str] = ..., actor: _Optional[str] = ...) -> None: ...

class BulkOperationState(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = []
