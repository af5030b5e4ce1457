/**
 * The JSON-carrying peers (BullMQ, pg-boss, graphile-worker) take a job's data as JSON, so
 * the 256-byte payload travels as a 256-character latin1 string. The harness passes the
 * same Buffer for every job of a phase, so the string is made once per Buffer.
 */
export class PayloadText {
  private cache: { buffer: Buffer; text: string } | undefined;

  of(payload: Buffer): string {
    if (this.cache?.buffer !== payload) this.cache = { buffer: payload, text: payload.toString('latin1') };
    return this.cache.text;
  }
}
