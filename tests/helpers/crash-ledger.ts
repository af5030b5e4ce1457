/**
 * What crash tests know for certain about a server they kill: every operation
 * it acknowledged, and every delivery it made. Entries are made only when the
 * server answered (after its commit was durable), except the `…Sending`
 * entries, made just before a settlement is sent, because a settlement in
 * flight at a kill may or may not have committed.
 *
 * From that the ledger checks, as records arrive, that no acknowledged ack is
 * followed by another delivery and that attempts only grow; and, against the
 * rows of a stopped server's database, that every acknowledged enqueue is
 * still there (unless an ack for it was sent) and no acked job came back.
 */

/** What a crash check needs of one row of `jobs`. */
export interface JobRowSummary {
  state: string;
  payload: Buffer;
  /** The ack's result, kept while the queue retains completed jobs. */
  result: Buffer | null;
}

export class CrashLedger {
  /** jobId → payload id, for every acknowledged enqueue. */
  readonly enqueued = new Map<string, string>();
  /** Jobs whose ack was sent (it may or may not have committed before a kill). */
  readonly ackSent = new Set<string>();
  /** Jobs whose ack was acknowledged. */
  readonly acked = new Set<string>();
  /** Jobs for which a dead-letter nack was sent. */
  readonly deadLetterSent = new Set<string>();
  /** The highest attempt each job was leased with. */
  readonly lastAttempt = new Map<string, number>();
  /**
   * Jobs whose last delivery was not settled for good (no ack, no dead-letter
   * nack sent): each of them must be delivered again.
   */
  readonly owed = new Set<string>();
  /** Jobs that were owed a delivery when the server was killed, and are not yet delivered again. */
  private readonly owedAtCrash = new Set<string>();
  /** Deliveries of jobs that were owed one at a kill. */
  redeliveredAfterCrash = 0;
  /** Jobs owed a delivery at a kill (once per kill that found one newly owed). */
  owedAtCrashes = 0;
  /** Deliveries of jobs whose ack was acknowledged: must stay 0. */
  deliveredAfterAck = 0;
  leases = 0;
  readonly problems: string[] = [];

  enqueueAcknowledged(payloadId: string, jobId: string): void {
    this.enqueued.set(jobId, payloadId);
  }

  /** A delivery; `payloadId` (when known) is checked against the enqueue's. */
  leased(jobId: string, attempt: number, payloadId?: string): void {
    this.leases++;
    if (this.acked.has(jobId)) {
      this.deliveredAfterAck++;
      this.problems.push(`job ${jobId} was delivered again (attempt ${attempt}) after its ack`);
    }
    const last = this.lastAttempt.get(jobId) ?? 0;
    if (attempt <= last)
      this.problems.push(`job ${jobId} leased with attempt ${attempt} after attempt ${last}`);
    this.lastAttempt.set(jobId, attempt);
    const enqueuedAs = this.enqueued.get(jobId);
    if (payloadId !== undefined && enqueuedAs !== undefined && payloadId !== enqueuedAs)
      this.problems.push(`job ${jobId} delivered with payload ${payloadId}, enqueued as ${enqueuedAs}`);
    if (this.owedAtCrash.delete(jobId)) this.redeliveredAfterCrash++;
    this.owed.add(jobId);
  }

  ackSending(jobId: string): void {
    this.ackSent.add(jobId);
    this.owed.delete(jobId);
  }

  ackAcknowledged(jobId: string): void {
    this.acked.add(jobId);
  }

  deadLetterSending(jobId: string): void {
    this.deadLetterSent.add(jobId);
    this.owed.delete(jobId);
  }

  /** The server was killed: the jobs owed a delivery now must get it after the restart. */
  crashed(): number {
    for (const jobId of this.owed) {
      if (this.owedAtCrash.has(jobId)) continue;
      this.owedAtCrash.add(jobId);
      this.owedAtCrashes++;
    }
    return this.owed.size;
  }

  /**
   * One line of a child process's ledger file (tests/engine/crash-child.ts):
   * `E payloadId jobId`, `R jobId attempt`, `a jobId attempt` (ack sent),
   * `A jobId attempt` (ack acknowledged).
   */
  record(line: string): void {
    const [kind, a, b] = line.split(' ');
    if (a === undefined) throw new Error(`bad ledger line ${line}`);
    switch (kind) {
      case 'E':
        if (b === undefined) throw new Error(`bad line ${line}`);
        this.enqueueAcknowledged(a, b);
        break;
      case 'R':
        this.leased(a, Number(b));
        break;
      case 'a':
        this.ackSending(a);
        break;
      case 'A':
        this.ackAcknowledged(a);
        break;
      default:
        throw new Error(`unknown ledger line: ${line}`);
    }
  }

  /** Acknowledged enqueues missing from `rows` (without an ack sent), and acked jobs still in them. */
  rowProblems(rows: ReadonlyMap<string, JobRowSummary>): string[] {
    const problems = [...this.problems];
    for (const [jobId, payloadId] of this.enqueued) {
      const row = rows.get(jobId);
      if (row === undefined) {
        if (!this.ackSent.has(jobId)) problems.push(`acknowledged enqueue ${payloadId} (${jobId}) is lost`);
      } else if (row.payload.toString() !== payloadId) {
        problems.push(`job ${jobId} holds ${row.payload.toString()}, enqueued as ${payloadId}`);
      }
    }
    for (const jobId of this.acked) {
      const state = rows.get(jobId)?.state;
      if (state !== undefined && state !== 'completed') problems.push(`acked job ${jobId} is ${state} again`);
    }
    return problems;
  }

  /** Acknowledged enqueues neither acked (an ack sent) nor dead in `rows`: after a full drain, the lost ones. */
  unfinished(rows: ReadonlyMap<string, JobRowSummary>): string[] {
    return [...this.enqueued.keys()].filter((id) => !this.ackSent.has(id) && rows.get(id)?.state !== 'dead');
  }
}
