/**
 * Attribute names, in one place so metrics, spans and the docs agree.
 *
 * RPC attributes follow the OpenTelemetry gRPC conventions that
 * @opentelemetry/instrumentation-grpc and most gRPC servers emit today
 * (`rpc.system`, `rpc.service`, short `rpc.method`, numeric
 * `rpc.grpc.status_code`), so sepp's spans and `rpc.server.duration` line up
 * with its clients' in dashboards. sepp's own attributes live under `sepp.`.
 */
export const attr = {
  rpcSystem: 'rpc.system',
  rpcService: 'rpc.service',
  rpcMethod: 'rpc.method',
  rpcGrpcStatusCode: 'rpc.grpc.status_code',
  /** Which request of a Produce or Work stream (`batch`; `ack`, `nack`, `extend`). */
  streamMessage: 'sepp.stream.message',
  queue: 'sepp.queue',
  jobType: 'sepp.job.type',
  jobId: 'sepp.job.id',
  attempt: 'sepp.job.attempt',
  jobCount: 'sepp.job.count',
  jobState: 'sepp.job.state',
  rejectionReason: 'sepp.rejection.reason',
  deadReason: 'sepp.dead.reason',
  commitOutcome: 'sepp.commit.outcome',
  dbFile: 'sepp.db.file',
  schedule: 'sepp.schedule',
  skipReason: 'sepp.schedule.skip_reason',
  /** How a push delivery ended: ok, http_status, rate_limited, timeout, connection_error, refused_target, aborted. */
  pushOutcome: 'sepp.push.outcome',
  /** Why a connection was closed or a call refused by a limit of the gRPC port or an HTTP door. */
  refusalReason: 'sepp.refusal.reason',
  /** Which HTTP door: `admin` (the admin port) or `http` (the HTTP API). */
  httpDoor: 'sepp.http.door',
  /** Which API an answer went out by: `grpc` or `http` (the HTTP API). */
  door: 'sepp.door',
} as const;

export const grpcServiceName = 'sepp.v1.QueueService';

/** gRPC status code names by number (for log lines; metrics and spans carry the number). */
export const grpcStatusNames = [
  'OK',
  'CANCELLED',
  'UNKNOWN',
  'INVALID_ARGUMENT',
  'DEADLINE_EXCEEDED',
  'NOT_FOUND',
  'ALREADY_EXISTS',
  'PERMISSION_DENIED',
  'RESOURCE_EXHAUSTED',
  'FAILED_PRECONDITION',
  'ABORTED',
  'OUT_OF_RANGE',
  'UNIMPLEMENTED',
  'INTERNAL',
  'UNAVAILABLE',
  'DATA_LOSS',
  'UNAUTHENTICATED',
] as const;

/** Server-side gRPC codes that mark a span as an error (the caller's mistakes do not). */
export const grpcServerErrorCodes: ReadonlySet<number> = new Set([2, 4, 12, 13, 14, 15]);
