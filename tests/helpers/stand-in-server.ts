/** Stand-in gRPC servers: a test's own handlers for the calls it needs, on a loopback port. */
import * as grpc from '@grpc/grpc-js';

/** Binds `server` to a free loopback port, without TLS; resolves with its `host:port`. */
export async function listenOnLoopback(server: grpc.Server): Promise<string> {
  const port = await new Promise<number>((resolve, reject) =>
    server.bindAsync('127.0.0.1:0', grpc.ServerCredentials.createInsecure(), (error, bound) =>
      error ? reject(error) : resolve(bound),
    ),
  );
  return `127.0.0.1:${port}`;
}
