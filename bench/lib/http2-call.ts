/**
 * gRPC calls over a raw HTTP/2 session, for what grpc-js would not send: a
 * malformed authorization header, a body that never ends, many large bodies
 * at once (bench/lib/flood.ts and the tests).
 */
import type { ClientHttp2Session } from 'node:http2';

/** One gRPC message frame: the 5-byte prefix (uncompressed, length) and the bytes. */
export function grpcFrame(message: Uint8Array): Buffer {
  const prefix = Buffer.alloc(5);
  prefix.writeUInt32BE(message.length, 1);
  return Buffer.concat([prefix, message]);
}

/**
 * A call over a raw HTTP/2 session, for headers and bodies grpc-js would not
 * send (a malformed authorization header, a body that never ends). Resolves
 * with the call's grpc-status (`none` when the stream closed without one).
 */
export function http2Call(
  session: ClientHttp2Session,
  path: string,
  options: { headers?: Record<string, string>; body?: Buffer; endBody?: boolean } = {},
): Promise<string> {
  return new Promise((resolve) => {
    const request = session.request({
      ':method': 'POST',
      ':path': path,
      'content-type': 'application/grpc',
      te: 'trailers',
      ...options.headers,
    });
    // The status ends the call for the client, as for any gRPC client: a body it is still
    // sending (or never ends) is then abandoned.
    const take = (headers: Record<string, unknown>) => {
      if (headers['grpc-status'] === undefined) return;
      resolve(String(headers['grpc-status']));
      request.close();
    };
    request.on('response', take);
    request.on('trailers', take);
    request.on('data', () => {});
    request.on('error', () => {});
    request.on('close', () => resolve('none'));
    const body = options.body ?? grpcFrame(new Uint8Array());
    if (options.endBody === false) request.write(body);
    else request.end(body);
  });
}
