/**
 * Lease tokens (task token19): what a running batch member proves itself with when it adds
 * jobs to its own sealed batch (AddToBatch `from_member`). The attempt fences acks and
 * extends, but it is no secret — GetJob shows it to every key that reads jobs — so it cannot
 * say who may fill a sealed batch. The lease of a member carries instead a token,
 * HMAC-SHA256(secret, job id ‖ attempt) cut to 16 bytes (22 characters of base64url), that
 * only the worker the lease was handed to holds: a new attempt has a new token, and a token
 * names one job. Jobs outside batches get none and cost nothing.
 *
 * The secret is the store's (`Dependencies.secret`, schema/0031_lease_token_secret.sql):
 * 32 bytes of crypto.randomBytes written by the first server to start on the schema and read
 * by every start after, so it outlives restarts and every server on one PostgreSQL makes and
 * checks the same tokens (a member leased through one server adds through another). Neither
 * the secret nor a token is ever logged or shown; a token is compared in constant time.
 */
import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import type { Op } from '../../store/op.ts';
import type { StoreTx } from '../../store/store.ts';

/** The secret's row in server_secrets. */
const secretName = 'lease_token';
const secretBytes = 32;
/** 128 bits: far beyond guessing within any lease, and short on the wire (22 characters). */
const tokenBytes = 16;

export class LeaseTokens {
  private key: Buffer | undefined;

  /** Reads the store's secret, writing one first if it has none (as the engine opens); a store without batches has none. */
  *load(tx: StoreTx): Op<void> {
    const store = tx.dependencies;
    if (store === undefined) return;
    const kept = yield* store.secret({ name: secretName, candidate: randomBytes(secretBytes) });
    if (kept.byteLength < secretBytes) {
      throw new Error(
        `server_secrets holds a ${secretName} secret of ${kept.byteLength} bytes, not ${secretBytes}`,
      );
    }
    this.key = Buffer.from(kept);
  }

  /** The token of attempt `attempt` of job `jobId` (its lease's). */
  of(jobId: string, attempt: number): string {
    if (this.key === undefined) throw new Error('lease token asked for before the secret was loaded');
    return createHmac('sha256', this.key)
      .update(`${jobId}\n${attempt}`)
      .digest()
      .subarray(0, tokenBytes)
      .toString('base64url');
  }

  /** Whether `token` is the one of attempt `attempt` of job `jobId`, compared in constant time. */
  matches(jobId: string, attempt: number, token: string): boolean {
    const expected = Buffer.from(this.of(jobId, attempt));
    const given = Buffer.from(token);
    // The length is no secret (every token has 22 characters); the characters are compared in constant time.
    return given.length === expected.length && timingSafeEqual(given, expected);
  }
}
