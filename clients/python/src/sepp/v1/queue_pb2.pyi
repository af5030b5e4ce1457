from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from typing import ClassVar as _ClassVar, Iterable as _Iterable, Mapping as _Mapping, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor
EXPIRED_ACTION_DEAD_LETTER: ExpiredAction
EXPIRED_ACTION_DELETE: ExpiredAction
EXPIRED_ACTION_UNSPECIFIED: ExpiredAction
SETTING_SOURCE_DEFAULT: SettingSource
SETTING_SOURCE_OVERRIDE: SettingSource
SETTING_SOURCE_QUEUE: SettingSource
SETTING_SOURCE_QUEUE_DEFAULTS: SettingSource
SETTING_SOURCE_UNSPECIFIED: SettingSource

class BackoffSettings(_message.Message):
    __slots__ = ["base_ms", "cap_ms", "factor", "jitter"]
    BASE_MS_FIELD_NUMBER: _ClassVar[int]
    CAP_MS_FIELD_NUMBER: _ClassVar[int]
    FACTOR_FIELD_NUMBER: _ClassVar[int]
    JITTER_FIELD_NUMBER: _ClassVar[int]
    base_ms: int
    cap_ms: int
    factor: float
    jitter: float
    def __init__(self, base_ms: _Optional[int] = ..., factor: _Optional[float] = ..., cap_ms: _Optional[int] = ..., jitter: _Optional[float] = ...) -> None: ...

class QueueInfo(_message.Message):
    __slots__ = ["counts", "name", "oldest_ready_age_ms", "paused", "ready_groups", "ready_groups_capped", "setting_values", "settings", "throttled_workers", "waiting_workers"]
    COUNTS_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    OLDEST_READY_AGE_MS_FIELD_NUMBER: _ClassVar[int]
    PAUSED_FIELD_NUMBER: _ClassVar[int]
    READY_GROUPS_CAPPED_FIELD_NUMBER: _ClassVar[int]
    READY_GROUPS_FIELD_NUMBER: _ClassVar[int]
    SETTINGS_FIELD_NUMBER: _ClassVar[int]
    SETTING_VALUES_FIELD_NUMBER: _ClassVar[int]
    THROTTLED_WORKERS_FIELD_NUMBER: _ClassVar[int]
    WAITING_WORKERS_FIELD_NUMBER: _ClassVar[int]
    counts: StateCounts
    name: str
    oldest_ready_age_ms: int
    paused: bool
    ready_groups: int
    ready_groups_capped: bool
    setting_values: _containers.RepeatedCompositeFieldContainer[QueueSettingValue]
    settings: QueueSettings
    throttled_workers: int
    waiting_workers: int
    def __init__(self, name: _Optional[str] = ..., paused: bool = ..., counts: _Optional[_Union[StateCounts, _Mapping]] = ..., oldest_ready_age_ms: _Optional[int] = ..., waiting_workers: _Optional[int] = ..., settings: _Optional[_Union[QueueSettings, _Mapping]] = ..., setting_values: _Optional[_Iterable[_Union[QueueSettingValue, _Mapping]]] = ..., throttled_workers: _Optional[int] = ..., ready_groups: _Optional[int] = ..., ready_groups_capped: bool = ...) -> None: ...

class QueueSettingValue(_message.Message):
    __slots__ = ["file_value_json", "key", "source", "value_json"]
    FILE_VALUE_JSON_FIELD_NUMBER: _ClassVar[int]
    KEY_FIELD_NUMBER: _ClassVar[int]
    SOURCE_FIELD_NUMBER: _ClassVar[int]
    VALUE_JSON_FIELD_NUMBER: _ClassVar[int]
    file_value_json: str
    key: str
    source: SettingSource
    value_json: str
    def __init__(self, key: _Optional[str] = ..., value_json: _Optional[str] = ..., source: _Optional[_Union[SettingSource, str]] = ..., file_value_json: _Optional[str] = ...) -> None: ...

class QueueSettings(_message.Message):
    __slots__ = ["allowed_types", "backoff", "cancelled_retention_ms", "completed_retention_ms", "dead_retention_ms", "dedup_window_ms", "default_lease_ms", "default_timeout_ms", "durability", "expired_action", "group_max_leased", "group_rate_limit", "max_attempts", "max_depth", "max_lease_ms", "max_leased", "max_payload_bytes", "priority_aging_ms", "rate_limit"]
    ALLOWED_TYPES_FIELD_NUMBER: _ClassVar[int]
    BACKOFF_FIELD_NUMBER: _ClassVar[int]
    CANCELLED_RETENTION_MS_FIELD_NUMBER: _ClassVar[int]
    COMPLETED_RETENTION_MS_FIELD_NUMBER: _ClassVar[int]
    DEAD_RETENTION_MS_FIELD_NUMBER: _ClassVar[int]
    DEDUP_WINDOW_MS_FIELD_NUMBER: _ClassVar[int]
    DEFAULT_LEASE_MS_FIELD_NUMBER: _ClassVar[int]
    DEFAULT_TIMEOUT_MS_FIELD_NUMBER: _ClassVar[int]
    DURABILITY_FIELD_NUMBER: _ClassVar[int]
    EXPIRED_ACTION_FIELD_NUMBER: _ClassVar[int]
    GROUP_MAX_LEASED_FIELD_NUMBER: _ClassVar[int]
    GROUP_RATE_LIMIT_FIELD_NUMBER: _ClassVar[int]
    MAX_ATTEMPTS_FIELD_NUMBER: _ClassVar[int]
    MAX_DEPTH_FIELD_NUMBER: _ClassVar[int]
    MAX_LEASED_FIELD_NUMBER: _ClassVar[int]
    MAX_LEASE_MS_FIELD_NUMBER: _ClassVar[int]
    MAX_PAYLOAD_BYTES_FIELD_NUMBER: _ClassVar[int]
    PRIORITY_AGING_MS_FIELD_NUMBER: _ClassVar[int]
    RATE_LIMIT_FIELD_NUMBER: _ClassVar[int]
    allowed_types: _containers.RepeatedScalarFieldContainer[str]
    backoff: BackoffSettings
    cancelled_retention_ms: int
    completed_retention_ms: int
    dead_retention_ms: int
    dedup_window_ms: int
    default_lease_ms: int
    default_timeout_ms: int
    durability: str
    expired_action: ExpiredAction
    group_max_leased: int
    group_rate_limit: RateLimit
    max_attempts: int
    max_depth: int
    max_lease_ms: int
    max_leased: int
    max_payload_bytes: int
    priority_aging_ms: int
    rate_limit: RateLimit
    def __init__(self, max_attempts: _Optional[int] = ..., backoff: _Optional[_Union[BackoffSettings, _Mapping]] = ..., default_lease_ms: _Optional[int] = ..., max_lease_ms: _Optional[int] = ..., max_payload_bytes: _Optional[int] = ..., max_depth: _Optional[int] = ..., dedup_window_ms: _Optional[int] = ..., dead_retention_ms: _Optional[int] = ..., completed_retention_ms: _Optional[int] = ..., allowed_types: _Optional[_Iterable[str]] = ..., cancelled_retention_ms: _Optional[int] = ..., expired_action: _Optional[_Union[ExpiredAction, str]] = ..., max_leased: _Optional[int] = ..., rate_limit: _Optional[_Union[RateLimit, _Mapping]] = ..., group_max_leased: _Optional[int] = ..., group_rate_limit: _Optional[_Union[RateLimit, _Mapping]] = ..., durability: _Optional[str] = ..., default_timeout_ms: _Optional[int] = ..., priority_aging_ms: _Optional[int] = ...) -> None: ...

class RateLimit(_message.Message):
    __slots__ = ["burst", "leases", "period_ms"]
    BURST_FIELD_NUMBER: _ClassVar[int]
    LEASES_FIELD_NUMBER: _ClassVar[int]
    PERIOD_MS_FIELD_NUMBER: _ClassVar[int]
    burst: int
    leases: int
    period_ms: int
    def __init__(self, leases: _Optional[int] = ..., period_ms: _Optional[int] = ..., burst: _Optional[int] = ...) -> None: ...

class StateCounts(_message.Message):
    __slots__ = ["cancelled", "completed", "dead", "leased", "ready", "scheduled", "waiting"]
    CANCELLED_FIELD_NUMBER: _ClassVar[int]
    COMPLETED_FIELD_NUMBER: _ClassVar[int]
    DEAD_FIELD_NUMBER: _ClassVar[int]
    LEASED_FIELD_NUMBER: _ClassVar[int]
    READY_FIELD_NUMBER: _ClassVar[int]
    SCHEDULED_FIELD_NUMBER: _ClassVar[int]
    WAITING_FIELD_NUMBER: _ClassVar[int]
    cancelled: int
    completed: int
    dead: int
    leased: int
    ready: int
    scheduled: int
    waiting: int
    def __init__(self, scheduled: _Optional[int] = ..., ready: _Optional[int] = ..., leased: _Optional[int] = ..., completed: _Optional[int] = ..., dead: _Optional[int] = ..., cancelled: _Optional[int] = ..., waiting: _Optional[int] = ...) -> None: ...

class ExpiredAction(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = []

class SettingSource(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = []
