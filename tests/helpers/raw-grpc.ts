/** gRPC calls with hand-made request bytes, for requests the generated client cannot encode. */
import { type Client, type ClientDuplexStream, Metadata, type ServiceError, status } from '@grpc/grpc-js';

/** A unary call with `bytes` as its request; resolves with the status (OK included) and the response bytes. */
export function rawUnary(
  client: Client,
  path: string,
  bytes: Buffer,
  metadata = new Metadata(),
): Promise<{ code: status; details: string; response: Buffer | undefined }> {
  return new Promise((resolve) => {
    client.makeUnaryRequest(
      path,
      (b: Buffer) => b,
      (b: Buffer) => b,
      bytes,
      metadata,
      { deadline: Date.now() + 10_000 },
      (error: ServiceError | null, response?: Buffer) =>
        resolve(
          error
            ? { code: error.code, details: error.details, response: undefined }
            : { code: status.OK, details: '', response },
        ),
    );
  });
}

/** A bidirectional stream that sends hand-made bytes and decodes what the server sends with `decode`. */
export function rawBidi<Res>(
  client: Client,
  path: string,
  decode: (bytes: Buffer) => Res,
  metadata = new Metadata(),
): ClientDuplexStream<Buffer, Res> {
  return client.makeBidiStreamRequest(path, (b: Buffer) => b, decode, metadata);
}

export { grpcFrame, http2Call } from '../../bench/lib/http2-call.ts';
