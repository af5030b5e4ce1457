/**
 * One subscriber of the event log. It holds no events of its own: it keeps a
 * cursor into the log's backlog and hands events to its sink in batches,
 * never more than `maxUnwrittenBytes` ahead of what the sink has written.
 *
 * States: catching up (reading the backlog from the cursor; also after a
 * pause) → caught up (fed each new commit's events as they are published) →
 * closed. A subscriber whose sink is slow stops at the byte bound and goes
 * back to catching up when the sink reports a write done; if the backlog
 * drops events it has not read meanwhile, it has fallen behind and is ended.
 */
import { SeppError } from '../errors.ts';
import type { EventFilter, LifecycleEvent } from './lifecycle-event.ts';

/** Where a subscription's events go (a gRPC stream, a test). */
export interface EventSink {
  /**
   * Takes the next events, in sequence order. Call `written` once they have
   * left the process (or are no longer held): until then they count against
   * the subscriber's in-flight bound.
   */
  send(events: LifecycleEvent[], written: () => void): void;
  /**
   * Every event up to `sequence` that matched has been handed over: from here
   * on the subscription is live. Called once, right after subscribing when
   * starting from now.
   */
  caughtUp(sequence: number): void;
  /** The engine ended the subscription: it fell behind the backlog, or the server is shutting down. */
  end(error: SeppError): void;
}

/** What a subscription reads from: the backlog as the log keeps it. */
export interface Backlog {
  /** Sequence of the oldest event kept (the newest + 1 when none is kept). */
  readonly firstSequence: number;
  /** Sequence of the newest event published to subscribers. */
  readonly publishedSequence: number;
  /** The kept event with this sequence (firstSequence ≤ sequence ≤ publishedSequence). */
  at(sequence: number): LifecycleEvent;
  bytesOf(sequence: number): number;
  describe(): string;
}

/** Events per sink.send at most, so one batch stays one modest gRPC message. */
const maxBatchBytes = 64 * 1024;
/** Bytes handed to a sink and not yet written, per subscriber: the memory a slow one can hold. */
export const maxUnwrittenBytes = 256 * 1024;

export class Subscription {
  /** The newest sequence this subscription has handed over or passed over. */
  cursor: number;
  caughtUpNow = false;
  closed = false;
  private announced = false;
  private unwrittenBytes = 0;
  private pumping = false;
  private pumpAgain = false;
  private readonly queues: ReadonlySet<string> | null;
  private readonly kinds: ReadonlySet<string> | null;
  readonly jobIds: ReadonlySet<string> | null;
  private readonly queueAllowed: ((queue: string) => boolean) | null;

  constructor(
    filter: EventFilter,
    startAfter: number,
    private readonly backlog: Backlog,
    private readonly sink: EventSink,
    /** Tells the log whether this subscription reads the backlog (lagging) or is fed live. */
    private readonly onLagging: (subscription: Subscription, lagging: boolean) => void,
  ) {
    this.cursor = startAfter;
    this.queues = filter.queues.length === 0 ? null : new Set(filter.queues);
    this.kinds = filter.kinds.length === 0 ? null : new Set(filter.kinds);
    this.jobIds = filter.jobIds.length === 0 ? null : new Set(filter.jobIds);
    this.queueAllowed = filter.queueAllowed ?? null;
  }

  matches(event: LifecycleEvent): boolean {
    return (
      (this.jobIds !== null || event.fromStore !== true) &&
      (this.jobIds === null || this.jobIds.has(event.jobId)) &&
      (this.kinds === null || this.kinds.has(event.kind)) &&
      this.admits(event.queue)
    );
  }

  /** Whether events of `queue` may reach this subscription: its queues, and its key's scope. */
  admits(queue: string): boolean {
    return (
      (this.queues === null || this.queues.has(queue)) &&
      (this.queueAllowed === null || this.queueAllowed(queue))
    );
  }

  /** Whether the backlog no longer holds the events after the cursor. */
  get fellBehind(): boolean {
    return this.cursor < this.backlog.firstSequence - 1;
  }

  /**
   * Reads the backlog from the cursor, handing matching events to the sink,
   * until it reaches the newest published event or the in-flight bound.
   */
  pump(): void {
    // A sink may report a write done from inside send(): read on in this loop, not in a nested one.
    if (this.pumping) {
      this.pumpAgain = true;
      return;
    }
    this.pumping = true;
    try {
      do {
        this.pumpAgain = false;
        this.readBacklog();
      } while (this.pumpAgain && !this.closed);
    } finally {
      this.pumping = false;
    }
  }

  private readBacklog(): void {
    if (this.closed) return;
    if (this.fellBehind) {
      this.fallBehind();
      return;
    }
    const last = this.backlog.publishedSequence;
    let batch: LifecycleEvent[] = [];
    let batchBytes = 0;
    while (this.cursor < last) {
      if (this.unwrittenBytes + batchBytes >= maxUnwrittenBytes) break;
      const sequence = this.cursor + 1;
      const event = this.backlog.at(sequence);
      if (this.matches(event)) {
        batch.push(event);
        batchBytes += this.backlog.bytesOf(sequence);
        if (batchBytes >= maxBatchBytes) {
          this.send(batch, batchBytes);
          batch = [];
          batchBytes = 0;
        }
      }
      this.cursor = sequence;
    }
    if (batch.length > 0) this.send(batch, batchBytes);
    this.setCaughtUp(this.cursor === last);
  }

  /**
   * Feeds a caught-up subscription the events of one publication that match
   * it (found by the log's job-id index), then moves its cursor to `last`.
   */
  feed(matched: readonly LifecycleEvent[], last: number): void {
    if (this.closed) return;
    let batch: LifecycleEvent[] = [];
    let batchBytes = 0;
    for (const event of matched) {
      if (this.unwrittenBytes + batchBytes >= maxUnwrittenBytes) {
        // The rest is read from the backlog once the sink has written some.
        if (batch.length > 0) this.send(batch, batchBytes);
        this.cursor = event.sequence - 1;
        this.setCaughtUp(false);
        return;
      }
      batch.push(event);
      batchBytes += this.backlog.bytesOf(event.sequence);
      if (batchBytes >= maxBatchBytes) {
        this.send(batch, batchBytes);
        batch = [];
        batchBytes = 0;
      }
    }
    if (batch.length > 0) this.send(batch, batchBytes);
    this.cursor = last;
  }

  close(): void {
    this.closed = true;
  }

  /** Ends the subscription from the engine's side. */
  end(error: SeppError): void {
    if (this.closed) return;
    this.closed = true;
    this.onLagging(this, false);
    this.sink.end(error);
  }

  private fallBehind(): void {
    this.end(
      new SeppError(
        'resource_exhausted',
        `this subscriber fell behind: it had read up to event ${this.cursor}, and the backlog now starts at ` +
          `event ${this.backlog.firstSequence} (${this.backlog.describe()}); events in between are lost to it. ` +
          'Read the state you need with GetJob or ListQueues and subscribe again, and read faster or filter by queue, job or kind',
      ),
    );
  }

  private send(batch: LifecycleEvent[], bytes: number): void {
    this.unwrittenBytes += bytes;
    this.sink.send(batch, () => {
      this.unwrittenBytes -= bytes;
      if (!this.caughtUpNow) this.pump();
    });
  }

  private setCaughtUp(caughtUp: boolean): void {
    if (caughtUp !== this.caughtUpNow) {
      this.caughtUpNow = caughtUp;
      this.onLagging(this, !caughtUp);
    }
    if (caughtUp && !this.announced && !this.closed) {
      this.announced = true;
      this.sink.caughtUp(this.cursor);
    }
  }
}
