/**
 * The workers connected now, for operators (the admin Workers page and the
 * ListWorkers RPC): who they are, where from, over which transport, which
 * queues they take from, and when they were last heard from. The rpc layer
 * reports them — a Work stream from its subscribe to its end, a unary Reserve
 * caller on each call — and the engine adds which leases each holds.
 *
 * Memory is bounded: at most `maxWorkers` entries; a unary caller that has
 * not called for `forgetAfterMs` is dropped (it has no connection to end).
 */
import type { WorkerInfo, WorkerTransport } from '../admin-types.ts';
import type { Clock } from '../clock.ts';

export interface WorkerHandle {
  /** The worker did something (a reserve, a settlement): it is alive. */
  seen(): void;
  close(): void;
}

interface Entry {
  workerId: string;
  address: string;
  transport: WorkerTransport;
  queues: string[];
  connectedAtMs: number;
  lastSeenAtMs: number;
}

export const noWorkerId = '(none)';

/** A worker as the registry knows it (the engine adds its recent counts, worker-activity.ts). */
export type RegisteredWorker = Omit<WorkerInfo, 'completedRecent' | 'failedRecent' | 'recentWindowMs'>;

export class WorkerRegistry {
  private readonly streams = new Set<Entry>();
  /**
   * Unary callers by address and worker id, least recently seen first: a touch moves
   * its entry to the end, so forgetting stops at the first entry still fresh and a
   * touch costs O(1) however many workers are known.
   */
  private readonly unary = new Map<string, Entry>();

  constructor(
    private readonly clock: Pick<Clock, 'nowMs'>,
    private readonly options: { maxWorkers: number; forgetAfterMs: number } = {
      maxWorkers: 10_000,
      forgetAfterMs: 5 * 60_000,
    },
  ) {}

  /** A Work stream subscribed; close the handle when it ends. */
  open(worker: { workerId: string; address: string; queues: readonly string[] }): WorkerHandle {
    const nowMs = this.clock.nowMs();
    const entry: Entry = {
      workerId: worker.workerId === '' ? noWorkerId : worker.workerId,
      address: worker.address,
      transport: 'work_stream',
      queues: [...worker.queues],
      connectedAtMs: nowMs,
      lastSeenAtMs: nowMs,
    };
    // Past the bound a stream works as ever; it is just not listed.
    if (this.streams.size < this.options.maxWorkers) this.streams.add(entry);
    return {
      seen: () => {
        entry.lastSeenAtMs = this.clock.nowMs();
      },
      close: () => {
        this.streams.delete(entry);
      },
    };
  }

  /** A unary Reserve (or settlement) call. */
  touch(worker: { workerId: string; address: string; queues: readonly string[] }): void {
    const nowMs = this.clock.nowMs();
    const workerId = worker.workerId === '' ? noWorkerId : worker.workerId;
    const key = `${worker.address}\n${workerId}`;
    const entry = this.unary.get(key);
    if (entry !== undefined) {
      entry.lastSeenAtMs = nowMs;
      if (worker.queues.length > 0) entry.queues = [...worker.queues];
      this.unary.delete(key);
      this.unary.set(key, entry);
      return;
    }
    this.forget(nowMs);
    if (this.unary.size + this.streams.size >= this.options.maxWorkers) return;
    this.unary.set(key, {
      workerId,
      address: worker.address,
      transport: 'reserve',
      queues: [...worker.queues],
      connectedAtMs: nowMs,
      lastSeenAtMs: nowMs,
    });
  }

  /**
   * Every worker known now, with the leases each worker id holds (`held`, from
   * the database). Connections of one worker — same transport, address and
   * worker id (an SDK Worker opens two streams) — are one entry.
   */
  list(held: ReadonlyMap<string, { jobs: number; sinceMs: number }>): RegisteredWorker[] {
    this.forget(this.clock.nowMs());
    const merged = new Map<string, RegisteredWorker>();
    for (const entry of [...this.streams, ...this.unary.values()]) {
      const key = `${entry.transport}\n${entry.address}\n${entry.workerId}`;
      const seen = merged.get(key);
      if (seen === undefined) {
        merged.set(key, {
          ...entry,
          queues: [...entry.queues],
          connections: 1,
          jobsHeld: 0,
          oldestLeaseAtMs: null,
        });
        continue;
      }
      seen.connections++;
      seen.connectedAtMs = Math.min(seen.connectedAtMs, entry.connectedAtMs);
      seen.lastSeenAtMs = Math.max(seen.lastSeenAtMs, entry.lastSeenAtMs);
      for (const queue of entry.queues) if (!seen.queues.includes(queue)) seen.queues.push(queue);
    }
    const counted = new Set<string>();
    return [...merged.values()]
      .sort((a, b) => a.workerId.localeCompare(b.workerId) || a.connectedAtMs - b.connectedAtMs)
      .map((worker) => {
        // Leases are recorded by worker id: the first entry of an id shows them.
        const leases = counted.has(worker.workerId) ? undefined : held.get(worker.workerId);
        counted.add(worker.workerId);
        return { ...worker, jobsHeld: leases?.jobs ?? 0, oldestLeaseAtMs: leases?.sinceMs ?? null };
      });
  }

  /** Drops the unary callers silent for longer than forgetAfterMs: the oldest first, up to the first fresh one. */
  private forget(nowMs: number): void {
    for (const [key, entry] of this.unary) {
      if (nowMs - entry.lastSeenAtMs <= this.options.forgetAfterMs) return;
      this.unary.delete(key);
    }
  }
}
