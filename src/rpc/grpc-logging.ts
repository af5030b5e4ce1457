/**
 * grpc-js's own log lines go through sepp's logger instead of straight to
 * stderr, so they share its format and its secret scrubbing.
 *
 * One kind of line needs more than the logger's scrubbing: grpc-js reports a
 * metadata entry it refuses (a tab or a non-ASCII character in a header) with
 * the value verbatim, twice — for a malformed `authorization` header, that is
 * the API key, whose odd characters also defeat the `Bearer <token>` pattern.
 * Such lines keep the key's name and drop the value, whatever the key.
 */
import { format } from 'node:util';
import { setLogger } from '@grpc/grpc-js';
import type { RpcLog } from './rpc-context.ts';

const refusedEntry = /^Failed to add metadata entry ([^:]*):/;
/** `"authorization":[…]` as the call tracer prints headers. */
const authorizationJson = /("authorization"\s*:\s*)\[[^\]]*\]/gi;

/** What of a grpc-js log line may be logged. */
export function grpcLogText(args: readonly unknown[]): string {
  const text = format(...args);
  const refused = refusedEntry.exec(text);
  if (refused !== null) {
    return `refused the metadata entry ${JSON.stringify(refused[1])}: its value has characters gRPC metadata may not carry (value not logged)`;
  }
  return text.replace(authorizationJson, '$1["<redacted>"]');
}

/** Routes every grpc-js log line in this process to `log` (grpc-js has one logger per process). */
export function routeGrpcLogs(log: RpcLog): void {
  setLogger({
    error: (...args: unknown[]) =>
      log.warn('grpc.library', { grpc_level: 'error', message: grpcLogText(args) }),
    info: (...args: unknown[]) =>
      log.info('grpc.library', { grpc_level: 'info', message: grpcLogText(args) }),
    debug: (...args: unknown[]) =>
      log.debug('grpc.library', { grpc_level: 'debug', message: grpcLogText(args) }),
  });
}
