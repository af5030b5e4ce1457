/** Stand-in gRPC servers: a test's own handlers for the calls it needs, on a loopback port. */
import * as grpc from '@grpc/grpc-js';
import { JobState } from '../../clients/typescript/src/gen/sepp/v1/job.js';
import type { WorkRequest_Settlement, WorkResponse } from '../../clients/typescript/src/gen/sepp/v1/work.js';

/** Binds `server` to a free loopback port, without TLS; resolves with its `host:port`. */
export async function listenOnLoopback(server: grpc.Server): Promise<string> {
  const port = await new Promise<number>((resolve, reject) =>
    server.bindAsync('127.0.0.1:0', grpc.ServerCredentials.createInsecure(), (error, bound) =>
      error ? reject(error) : resolve(bound),
    ),
  );
  return `127.0.0.1:${port}`;
}

/** A Work stream's answer that `settlement` went through: a nack puts its job back to ready, the rest ack. */
export function settledOk({ requestId, kind }: WorkRequest_Settlement): WorkResponse {
  const result =
    kind?.$case === 'nack'
      ? { $case: 'nack' as const, value: { state: JobState.READY, runAtMs: 0 } }
      : { $case: 'ack' as const, value: {} };
  return {
    kind: {
      $case: 'settled',
      value: { requestId, code: grpc.status.OK, message: '', result, errorCode: '', retry: '' },
    },
  };
}
