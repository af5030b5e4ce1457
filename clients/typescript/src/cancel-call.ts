/**
 * Cancels a call. grpc-js (1.14.7) opens a call's HTTP/2 stream a few
 * microtasks after the call starts (ResolvingCall, after its metadata
 * filters), and a cancel that comes before that ends the call locally but
 * does not stop the stream from being opened afterwards. Such a stream is
 * never closed: a stream the client has not half-closed (Produce, Work,
 * Events) stays open at both ends until the connection closes, and
 * grpc.max_streams_per_connection of them stop the connection (issue 29).
 * Cancelling again one macrotask later, when the stream exists, resets it;
 * a second cancel of a call already gone does nothing.
 */
export function cancelCall(call: { cancel(): void }): void {
  call.cancel();
  setImmediate(() => call.cancel());
}
