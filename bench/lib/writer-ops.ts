/**
 * The write operations of bench/writer-thread.ts, shared by its two writers (the
 * group committer on the main thread, and the same committer on a worker thread).
 *
 * An operation is plain data, so that it can cross to a worker thread by structured
 * clone. `runOp` runs it as a unit of the SQLite store's own operations
 * (src/store/sqlite/, `sqliteCapabilities`): the SQL is the server's, not a copy.
 * What it does not run is the engine's JavaScript around them (validation, events,
 * waiters, flow control): per operation it makes the store calls the engine makes
 * for a plain queue — enqueue: `jobs.insert` + `counts.adjust`; lease: `leases.leaseReady`
 * + `counts.adjust`; ack: `leases.ack` + `counts.adjust`.
 */
import { readFileSync } from 'node:fs';
import type { Op as StoreOp } from '../../src/store/op.ts';
import type { Queues } from '../../src/store/queues.ts';
import type { LeasedRow, NewJobRow } from '../../src/store/rows.ts';
import type { StoreTx } from '../../src/store/store.ts';

export type Op =
  | { kind: 'enqueue'; job: NewJobRow }
  | {
      kind: 'lease';
      queue: string;
      limit: number;
      nowMs: number;
      leaseDeadlineMs: number;
      maxLeaseDeadlineMs: number;
      workerId: string | null;
      timeoutMs: null;
    }
  | { kind: 'ack'; id: string; attempt: number };

export type OpResult =
  | { kind: 'enqueued' }
  | { kind: 'leased'; rows: LeasedRow[] }
  | { kind: 'acked'; ok: boolean };

/** The writer's own figures, cumulative since it started. */
export interface WriterStats {
  commits: number;
  operations: number;
  /** Sum of the batches' wall time: BEGIN, the operations' SQL, COMMIT (WAL write + fsync). */
  batchMs: number;
  /** CPU of the thread that runs the SQL, from /proc/thread-self/stat (clock ticks → µs). */
  writerUserUs: number;
  writerSystemUs: number;
}

/** Messages from the main thread to the writer thread. */
export type ToWriter =
  | { type: 'batch'; id: number; ops: Op[] }
  /** The batch in writer-codec.ts's binary form, its buffer transferred. */
  | { type: 'packed'; id: number; buffer: ArrayBuffer }
  | { type: 'stats' }
  | { type: 'close' };

/** Messages from the writer thread to the main thread. */
export type FromWriter =
  | { type: 'ready' }
  | { type: 'done'; id: number; results: SettledResult[] }
  | { type: 'packed-done'; id: number; buffer: ArrayBuffer }
  | { type: 'failed'; id: number; message: string }
  | { type: 'stats'; stats: WriterStats }
  | { type: 'closed' };

/** One operation's outcome: its result, or the message of the error it threw (its savepoint rolled back). */
export type SettledResult = { ok: true; value: OpResult } | { ok: false; message: string };

export const benchQueue = 'bench';

/** Creates the benchmark's queue (and, through the schema's trigger, its queue_counts rows). */
export function createQueue(queues: Queues, nowMs: number): StoreOp<void> {
  return queues.create({ name: benchQueue, createdAtMs: nowMs, settingsJson: '{}' });
}

/** Runs one operation as a unit of the committer (its own savepoint). */
export function* runOp(tx: StoreTx, op: Op): StoreOp<OpResult> {
  switch (op.kind) {
    case 'enqueue': {
      const { job } = op;
      // A payload that crossed threads arrives as a Uint8Array: bind it as a Buffer without a copy.
      const payload = Buffer.isBuffer(job.payload)
        ? job.payload
        : Buffer.from(job.payload.buffer, job.payload.byteOffset, job.payload.byteLength);
      yield* tx.jobs.insert([{ ...job, payload }]);
      yield* tx.counts.adjust({ queue: job.queue, from: null, to: job.state, jobs: 1 });
      return { kind: 'enqueued' };
    }
    case 'lease': {
      const rows = yield* tx.leases.leaseReady(op);
      yield* tx.counts.adjust({ queue: op.queue, from: 'ready', to: 'leased', jobs: rows.length });
      return { kind: 'leased', rows };
    }
    case 'ack': {
      const deleted = yield* tx.leases.ack({ jobId: op.id, attempt: op.attempt });
      if (deleted !== undefined)
        yield* tx.counts.adjust({ queue: deleted.queue, from: 'leased', to: null, jobs: 1 });
      return { kind: 'acked', ok: deleted !== undefined };
    }
  }
}

const clockTickUs = 10_000; // USER_HZ = 100 on Linux

/** This thread's CPU (user, system) in µs, from /proc/thread-self/stat; NaN off Linux. */
export function threadCpuUs(): { userUs: number; systemUs: number } {
  try {
    const stat = readFileSync('/proc/thread-self/stat', 'utf8');
    // Fields after the command name (which may hold spaces), from field 3 on: utime is 14, stime 15.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return { userUs: Number(fields[11]) * clockTickUs, systemUs: Number(fields[12]) * clockTickUs };
  } catch {
    return { userUs: Number.NaN, systemUs: Number.NaN };
  }
}
