/**
 * The re-cut of a Worker's settlements after the server's bounds went down (used by
 * work-stream-transport.ts). A Work stream ended as over a bound of the call (`overCallBound`: a
 * batch of more settlements than a reload left in `limits.max_batch_jobs`, a message over a
 * restart's `grpc.max_message_bytes`) keeps its settlements not answered; the server's bounds are
 * asked again, and if they are lower than the ones the stream's batches were cut by (an enqueue's
 * refusal may have lowered them already: that the ask lowered them is not enough to know), a new
 * stream sends them again at once, cut by the new bounds — each once. A settlement refused a
 * second time, or bounds that did not go down, take the transport's broken path (unary calls).
 *
 * Each settlement is fenced by its attempt, so a repeat of one the server applied before the
 * refusal changes nothing: one written before the refusal is "repeated", and its answer is read
 * as repeated-settlement.ts says.
 */
import type { Connection } from './connection.ts';

/** What the re-cut needs of a settlement waiting for its answer. */
interface Waiting {
  readonly settlement: { readonly requestId: number };
}

export class SettlementRecut {
  /** The largest bounds the current stream's batches were cut by. */
  private cutBy = { jobs: 0, bytes: 0 };
  /** Request ids of settlements sent again after a refusal (never twice). */
  private readonly sentAgain = new Set<number>();
  /** Those of them written before the refusal: the server may have applied them. */
  private readonly written = new Set<number>();

  constructor(private readonly conn: Connection) {}

  /** A new stream: none of its batches was cut yet. */
  opened(): void {
    this.cutBy = { jobs: 0, bytes: 0 };
  }

  /** Settlements were cut into batches of at most `jobs` and messages of at most `bytes`. */
  cut(jobs: number, bytes: number): void {
    this.cutBy.jobs = Math.max(this.cutBy.jobs, jobs);
    this.cutBy.bytes = Math.max(this.cutBy.bytes, bytes);
  }

  /** Whether this settlement is a repeat of one written before a refusal (it may have been applied). */
  repeated(requestId: number): boolean {
    return this.written.size > 0 && this.written.has(requestId);
  }

  /** The settlement was answered or given up: forgotten. */
  done(requestId: number): void {
    if (this.sentAgain.size === 0) return;
    this.sentAgain.delete(requestId);
    this.written.delete(requestId);
  }

  /**
   * The stream was refused over a bound: of the settlements `waiting` for answers (in order),
   * those not sent again before go `again` (marked repeated when not in `unsent`, i.e. written),
   * the others are `lost`; `lowered` resolves to whether the bounds, asked again, went down below
   * the ones the refused stream cut its batches by.
   */
  refused<T extends Waiting>(
    waiting: Iterable<T>,
    unsent: ReadonlySet<unknown>,
  ): { again: T[]; lost: T[]; lowered: Promise<boolean> } {
    const again: T[] = [];
    const lost: T[] = [];
    for (const pending of waiting) {
      const { requestId } = pending.settlement;
      if (this.sentAgain.has(requestId)) {
        lost.push(pending);
        continue;
      }
      again.push(pending);
      this.sentAgain.add(requestId);
      if (!unsent.has(pending.settlement)) this.written.add(requestId);
    }
    const { jobs, bytes } = this.cutBy;
    const lowered = this.conn.relearnServerBounds().then(() => {
      const { maxBatchJobs, maxMessageBytes } = this.conn.options;
      return maxBatchJobs < jobs || maxMessageBytes < bytes;
    });
    return { again, lost, lowered };
  }
}
