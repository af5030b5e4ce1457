/**
 * The event log: job lifecycle events in commit order, a bounded backlog of
 * the newest ones in memory, and the subscriptions reading it.
 *
 * Recording is on only while someone subscribes, and for
 * limits.eventResumeWindowMs after the last subscriber left (so it can
 * resume); otherwise the engine's operations build no events at all
 * (`recording` is false), and events cost nothing. When recording stops the
 * backlog is emptied and one sequence number is skipped, so a later resume
 * from before the gap is refused instead of silently missing events.
 *
 * Events are appended by after-commit hooks (in commit order, only for
 * committed operations) and published to subscribers once per batch, in a
 * microtask after the commit's hooks have run and before the callers'
 * answers are processed.
 *
 * Bounds: the backlog holds at most eventBacklogEvents events and
 * eventBacklogBytes (estimated) bytes, evicting the oldest; each subscriber
 * has at most maxUnwrittenBytes handed to its sink and not yet written. A
 * subscriber whose unread events are evicted is ended (resource_exhausted).
 * The backlog is memory only: a restart starts a new stream (a new id).
 */

import { checkQueueList } from '../checks.ts';
import type { Clock, TimerHandle } from '../clock.ts';
import { SeppError } from '../errors.ts';
import type { EngineLimits } from '../settings.ts';
import {
  type EventFilter,
  type EventStart,
  eventBytes,
  type LifecycleEvent,
  lifecycleEventKinds,
} from './lifecycle-event.ts';
import { type Backlog, type EventSink, Subscription } from './subscription.ts';

/** What a subscriber holds: the stream id to resume with, and a way to leave. */
export interface EventSubscription {
  /** Identifies this server run's sequence; a resume must name it. */
  readonly streamId: string;
  /** Stops delivery and frees the slot. Idempotent. */
  close(): void;
}

/**
 * Who holds a subscription, when the server has API keys: the key's name and how many
 * subscriptions one key may hold (grpc.max_event_subscribers_per_key), counted over every
 * way in — gRPC's Events streams, the HTTP API's event streams and outcome waits — so one
 * key cannot take every slot of limits.max_event_subscribers.
 */
export interface EventOwner {
  key: string;
  maxSubscriptions: number;
}

/** Told of the subscriptions that name jobs (remote-ends.ts, on a store other servers share). */
export interface NamedJobsWatcher {
  /** A subscription naming jobs was opened. */
  named(): void;
  /** A job some subscription names ended in a commit of this server's (`event`, appended now). */
  ended(event: LifecycleEvent): void;
}

const finalKinds: ReadonlySet<string> = new Set(['completed', 'dead_lettered', 'cancelled']);

/**
 * The refusal of every subscription while `limits.max_event_subscribers` is 0: an operator's
 * decision, not a load that passes, so it is `unavailable` and `lasting` (gRPC UNAVAILABLE with
 * `sepp-retry: operator`, HTTP 503 without Retry-After): no repeat helps until someone changes
 * the setting, and the SDKs' subscriptions stop on it instead of reconnecting.
 */
export function eventsTurnedOff(): SeppError {
  return new SeppError(
    'unavailable',
    'events are turned off on this server (limits.max_event_subscribers = 0): no subscription is ' +
      'served until its operator sets limits.max_event_subscribers above 0',
    { lasting: true },
  );
}

export class EventLog implements Backlog {
  /** True while events are built and kept: someone subscribes, or did within the resume window. */
  recording = false;
  private events: LifecycleEvent[] = [];
  private sizes: number[] = [];
  /** Index in `events` of the oldest kept event (the array is compacted now and then). */
  private head = 0;
  private bytes = 0;
  private first = 1;
  private next = 1;
  private published = 0;
  private publishScheduled = false;
  private readonly all = new Set<Subscription>();
  /** Subscriptions open per owner key, and each subscription's owner. */
  private readonly byOwner = new Map<string, number>();
  private readonly ownerOf = new Map<Subscription, string>();
  private readonly byJob = new Map<string, Set<Subscription>>();
  private readonly lagging = new Set<Subscription>();
  private stopTimer: TimerHandle | undefined;
  private watcher: NamedJobsWatcher | undefined;

  constructor(
    private readonly limits: EngineLimits,
    private readonly clock: Clock,
    readonly streamId: string,
  ) {}

  get firstSequence(): number {
    return this.first;
  }

  get publishedSequence(): number {
    return this.published;
  }

  /** Subscriptions open now. */
  get subscribers(): number {
    return this.all.size;
  }

  /** The backlog now: subscribers, events kept and their estimated bytes (diagnostics, tests). */
  get backlog(): { subscribers: number; events: number; bytes: number; recording: boolean } {
    return { subscribers: this.subscribers, ...this.backlogSize, recording: this.recording };
  }

  /** Events kept in the backlog, and their estimated bytes. */
  get backlogSize(): { events: number; bytes: number } {
    return { events: this.next - this.first, bytes: this.bytes };
  }

  at(sequence: number): LifecycleEvent {
    return this.events[this.head + sequence - this.first]!;
  }

  bytesOf(sequence: number): number {
    return this.sizes[this.head + sequence - this.first]!;
  }

  describe(): string {
    return (
      `the backlog keeps the newest ${this.limits.eventBacklogEvents} events and ` +
      `${Math.round(this.limits.eventBacklogBytes / (1024 * 1024))} MiB (limits.event_backlog_events, limits.event_backlog_bytes)`
    );
  }

  /** Tells `watcher` of the subscriptions that name jobs, and of their jobs' ends here. */
  watchNamedJobs(watcher: NamedJobsWatcher): void {
    this.watcher = watcher;
  }

  /** The job ids the open subscriptions name. */
  namedJobs(): IterableIterator<string> {
    return this.byJob.keys();
  }

  /** Whether an open subscription names `jobId`. */
  names(jobId: string): boolean {
    return this.byJob.has(jobId);
  }

  /**
   * Ends the subscriptions that name `jobId` and no other job (outcome waits) with `error`:
   * the job, of `queue`, is gone from a shared store and its end will never be an event here.
   * A subscription whose events `queue`'s never reach (its queues, its key's scope) is told
   * nothing: it learns no more of another queue's job than its events would tell it.
   */
  endWaitsFor(jobId: string, queue: string, error: SeppError): void {
    for (const s of [...(this.byJob.get(jobId) ?? [])]) {
      if (s.jobIds?.size !== 1 || !s.admits(queue)) continue;
      s.end(error);
      this.remove(s);
    }
  }

  /** Appends one committed event (an after-commit hook), or one read from a shared store (`fromStore`). */
  append(event: LifecycleEvent): void {
    if (!this.recording) return;
    if (
      this.watcher !== undefined &&
      event.fromStore !== true &&
      this.byJob.size > 0 &&
      finalKinds.has(event.kind) &&
      this.byJob.has(event.jobId)
    ) {
      this.watcher.ended(event);
    }
    event.sequence = this.next++;
    const size = eventBytes(event);
    this.events.push(event);
    this.sizes.push(size);
    this.bytes += size;
    const { eventBacklogEvents, eventBacklogBytes } = this.limits;
    while (
      this.next - this.first > eventBacklogEvents ||
      (this.bytes > eventBacklogBytes && this.next - this.first > 1)
    ) {
      this.bytes -= this.sizes[this.head]!;
      this.head++;
      this.first++;
    }
    if (this.head > 4096 && this.head * 2 > this.events.length) {
      this.events = this.events.slice(this.head);
      this.sizes = this.sizes.slice(this.head);
      this.head = 0;
    }
    if (!this.publishScheduled) {
      this.publishScheduled = true;
      queueMicrotask(() => this.publish());
    }
  }

  subscribe(filter: EventFilter, start: EventStart, sink: EventSink, owner?: EventOwner): EventSubscription {
    this.checkFilter(filter);
    const max = this.limits.maxEventSubscribers;
    if (max === 0) throw eventsTurnedOff();
    if (this.all.size >= max) {
      throw new SeppError(
        'resource_exhausted',
        `${this.all.size} event subscribers are open, the limit is ${max} (limits.max_event_subscribers); retry later`,
      );
    }
    const held = owner === undefined ? 0 : (this.byOwner.get(owner.key) ?? 0);
    if (owner !== undefined && held >= owner.maxSubscriptions) {
      throw new SeppError(
        'resource_exhausted',
        `key ${owner.key} holds ${held} event subscriptions (Events streams, event streams and outcome waits), ` +
          `the limit per key is ${owner.maxSubscriptions} (grpc.max_event_subscribers_per_key); ` +
          'close one, or give this client a key of its own',
      );
    }
    const startAfter = this.startingPoint(start);
    this.stopTimer?.cancel();
    this.stopTimer = undefined;
    this.recording = true;
    const subscription = new Subscription(filter, startAfter, this, sink, (s, lagging) => {
      if (lagging) this.lagging.add(s);
      else this.lagging.delete(s);
    });
    this.all.add(subscription);
    if (owner !== undefined) {
      this.byOwner.set(owner.key, held + 1);
      this.ownerOf.set(subscription, owner.key);
    }
    if (subscription.jobIds !== null) {
      for (const id of subscription.jobIds) {
        let set = this.byJob.get(id);
        if (set === undefined) {
          set = new Set();
          this.byJob.set(id, set);
        }
        set.add(subscription);
      }
      this.watcher?.named();
    }
    subscription.pump();
    return { streamId: this.streamId, close: () => this.remove(subscription) };
  }

  /** Ends every subscription (shutdown). */
  endAll(error: SeppError): void {
    for (const s of [...this.all]) {
      s.end(error);
      this.remove(s);
    }
  }

  private remove(subscription: Subscription): void {
    if (!this.all.delete(subscription)) return;
    subscription.close();
    const owner = this.ownerOf.get(subscription);
    if (owner !== undefined) {
      this.ownerOf.delete(subscription);
      const left = (this.byOwner.get(owner) ?? 1) - 1;
      if (left > 0) this.byOwner.set(owner, left);
      else this.byOwner.delete(owner);
    }
    this.lagging.delete(subscription);
    for (const id of subscription.jobIds ?? []) {
      const set = this.byJob.get(id);
      set?.delete(subscription);
      if (set?.size === 0) this.byJob.delete(id);
    }
    if (this.all.size === 0) {
      const windowMs = this.limits.eventResumeWindowMs;
      if (windowMs === 0) this.stopRecording();
      else this.stopTimer = this.clock.setTimer(windowMs, () => this.stopRecording());
    }
  }

  private stopRecording(): void {
    this.stopTimer = undefined;
    if (this.all.size > 0 || !this.recording) return;
    this.recording = false;
    // Events published from here on (none are built) would be missing from any
    // resume: skip a number so a resume from before now is refused, not silently short.
    this.next++;
    this.first = this.next;
    this.published = this.next - 1;
    this.events = [];
    this.sizes = [];
    this.head = 0;
    this.bytes = 0;
  }

  private publish(): void {
    this.publishScheduled = false;
    const from = this.published + 1;
    const last = this.next - 1;
    this.published = last;
    let matchedByJob: Map<Subscription, LifecycleEvent[]> | undefined;
    if (this.byJob.size > 0) {
      matchedByJob = new Map();
      for (let sequence = Math.max(from, this.first); sequence <= last; sequence++) {
        const event = this.at(sequence);
        const subscribers = this.byJob.get(event.jobId);
        if (subscribers === undefined) continue;
        for (const s of subscribers) {
          if (!s.caughtUpNow || !s.matches(event)) continue;
          let list = matchedByJob.get(s);
          if (list === undefined) {
            list = [];
            matchedByJob.set(s, list);
          }
          list.push(event);
        }
      }
    }
    for (const s of [...this.all]) {
      if (s.fellBehind) {
        // Only possible for one whose unread events were evicted (a slow one, or one
        // publication larger than the whole backlog).
        s.pump();
        this.remove(s);
      } else if (!s.caughtUpNow) {
        // Reads the backlog as its sink writes.
      } else if (s.jobIds !== null) {
        s.feed(matchedByJob?.get(s) ?? [], last);
      } else {
        s.pump();
      }
    }
  }

  private startingPoint(start: EventStart): number {
    // Events appended but not yet published reach a new subscriber with their publication.
    const newest = this.published;
    switch (start.kind) {
      case 'now':
        return newest;
      case 'oldest':
        return this.first - 1;
      case 'after': {
        const { sequence, streamId } = start;
        if (streamId !== this.streamId) {
          throw new SeppError(
            'out_of_range',
            `stream_id ${JSON.stringify(streamId)} is not this server's event stream (${this.streamId}): ` +
              'this server restarted since (events are not kept across restarts), or the id is another ' +
              "server's (servers sharing a PostgreSQL database each have their own events). Read the state " +
              'you need with GetJob or ListQueues and subscribe again without after_sequence',
          );
        }
        if (!Number.isSafeInteger(sequence) || sequence < 0 || sequence > newest) {
          throw new SeppError(
            'out_of_range',
            `after_sequence is ${sequence}, but the newest event is ${newest}; resume from a sequence this stream sent`,
          );
        }
        if (sequence < this.first - 1) {
          throw new SeppError(
            'out_of_range',
            `the events after ${sequence} are no longer kept: the oldest kept is ${this.first} (${this.describe()}; ` +
              'nothing is kept while nobody subscribes beyond limits.event_resume_window_ms). Read the state you ' +
              'need with GetJob or ListQueues and subscribe again without after_sequence',
          );
        }
        return sequence;
      }
    }
  }

  private checkFilter(filter: EventFilter): void {
    const { limits } = this;
    checkQueueList(filter.queues, limits);
    if (filter.jobIds.length > limits.maxBatchJobs) {
      throw new SeppError(
        'invalid_argument',
        `job_ids: ${filter.jobIds.length} ids, the limit is ${limits.maxBatchJobs} (limits.max_batch_jobs)`,
      );
    }
    for (const [i, id] of filter.jobIds.entries()) {
      if (typeof id !== 'string' || id.length === 0 || id.length > 64) {
        throw new SeppError('invalid_argument', `job_ids[${i}]: not a job id`);
      }
    }
    for (const kind of filter.kinds) {
      if (!lifecycleEventKinds.includes(kind)) {
        throw new SeppError('invalid_argument', `kinds: ${String(kind)} is not an event kind`);
      }
    }
  }
}
