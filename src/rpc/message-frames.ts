/**
 * Follows the gRPC message frames of one request body as its HTTP/2 DATA
 * chunks arrive (a 1-byte compressed flag and a 4-byte big-endian length,
 * then that many bytes), without keeping any of it: it only says where each
 * message starts, how long it says it is, and whether it ended in the same
 * chunk. grpc-js does the reading itself; this lets the admission reserve a
 * message's bytes before the rest of it is read (platform/byte-budget.ts).
 */

/** A message whose prefix ended in a chunk. */
export interface MessageStart {
  /** The length its prefix declares, in bytes (the prefix's own 5 not counted). */
  readonly bytes: number;
  /** True when its last byte came in the same chunk: nothing of it is left to hold back. */
  readonly complete: boolean;
}

export class MessageFrames {
  /** Bytes of the current prefix still to come (5 between messages). */
  private prefixLeft = 5;
  private length = 0;
  /** Bytes of the current message still to come (0 while in a prefix). */
  private bodyLeft = 0;

  /** Follows `chunk`; returns the messages whose prefix ended in it, in order. */
  push(chunk: Uint8Array): MessageStart[] {
    const starts: MessageStart[] = [];
    let at = 0;
    while (at < chunk.length) {
      if (this.bodyLeft > 0) {
        const taken = Math.min(this.bodyLeft, chunk.length - at);
        this.bodyLeft -= taken;
        at += taken;
        continue;
      }
      // In a prefix: byte 0 is the compressed flag, bytes 1-4 the length.
      const index = 5 - this.prefixLeft;
      if (index === 0) this.length = 0;
      else this.length = this.length * 256 + (chunk[at] ?? 0);
      at++;
      this.prefixLeft--;
      if (this.prefixLeft > 0) continue;
      this.prefixLeft = 5;
      const taken = Math.min(this.length, chunk.length - at);
      this.bodyLeft = this.length - taken;
      at += taken;
      starts.push({ bytes: this.length, complete: this.bodyLeft === 0 });
    }
    return starts;
  }
}
