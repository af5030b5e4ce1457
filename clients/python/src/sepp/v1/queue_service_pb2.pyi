from sepp.v1 import admin_pb2 as _admin_pb2
from sepp.v1 import batch_pb2 as _batch_pb2
from sepp.v1 import bulk_pb2 as _bulk_pb2
from sepp.v1 import events_pb2 as _events_pb2
from sepp.v1 import flow_pb2 as _flow_pb2
from sepp.v1 import produce_pb2 as _produce_pb2
from sepp.v1 import schedule_pb2 as _schedule_pb2
from sepp.v1 import work_pb2 as _work_pb2
from sepp.v1 import workers_pb2 as _workers_pb2
from google.protobuf import descriptor as _descriptor
from typing import ClassVar as _ClassVar

DESCRIPTOR: _descriptor.FileDescriptor
