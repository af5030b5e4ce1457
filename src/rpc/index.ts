/** The rpc layer's public face for the composition root. */
export type { ApiKey, ApiRole } from './auth.ts';
export { removeStaleBackups } from './backup-stream.ts';
export type { BytesInFlightStats } from './bytes-in-flight.ts';
export type { CallRefusal, ConnectionRejection, ConnectionStats } from './connections.ts';
export type {
  RpcCallObservation,
  RpcCallStart,
  RpcJobFacts,
  RpcLeasedJob,
  RpcObserver,
  TraceContext,
} from './observer.ts';
export type { ReloadReport } from './rpc-context.ts';
export { createRpcServer, type RpcServer, type RpcServerOptions } from './server.ts';
