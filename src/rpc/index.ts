/** The rpc layer's public face for the composition root. */
export type { ApiKey, ApiRole } from './auth.ts';
export { removeStaleBackups } from './backup-stream.ts';
export { createRpcServer, type RpcServer, type RpcServerOptions } from './server.ts';
