/**
 * The write operations of bench/writer-thread.ts, shared by its two writers (the
 * group committer on the main thread, and the same committer on a worker thread).
 *
 * An operation is plain data, so that it can cross to a worker thread by structured
 * clone. `runOp` runs it with the server's own prepared statements
 * (src/store/sqlite/statements.ts, `prepareStatements`): the SQL is the server's, not a copy.
 * What it does not run is the engine's JavaScript around them (validation, events,
 * waiters, flow control): per operation it issues the statements the engine issues
 * for a plain queue — enqueue: `insertJob` + `adjustCount`; lease: `leaseReady` +
 * two `adjustCount`; ack: `deleteLeased` + `adjustCount`.
 */
import { readFileSync } from 'node:fs';
import type { InsertJobParams, LeasedRow, Statements } from '../../src/store/sqlite/statements.ts';

export type Op =
  | { kind: 'enqueue'; job: InsertJobParams }
  | {
      kind: 'lease';
      queue: string;
      limit: number;
      nowMs: number;
      leaseDeadlineMs: number;
      maxLeaseDeadlineMs: number;
      workerId: string | null;
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
export function createQueue(sql: Statements, nowMs: number): void {
  sql.insertQueue.run({ name: benchQueue, created_at_ms: nowMs, settings_json: '{}' });
}

/** Runs one operation inside the committer's savepoint for it. */
export function runOp(sql: Statements, op: Op): OpResult {
  switch (op.kind) {
    case 'enqueue': {
      const { job } = op;
      // A payload that crossed threads arrives as a Uint8Array: bind it as a Buffer without a copy.
      const payload = Buffer.isBuffer(job.payload)
        ? job.payload
        : Buffer.from(job.payload.buffer, job.payload.byteOffset, job.payload.byteLength);
      sql.insertJob.run({ ...job, payload });
      sql.adjustCount.run({ queue: job.queue, state: job.state, delta: 1 });
      return { kind: 'enqueued' };
    }
    case 'lease': {
      const rows = sql.leaseReady.all({
        queue: op.queue,
        limit: op.limit,
        now_ms: op.nowMs,
        lease_deadline_ms: op.leaseDeadlineMs,
        max_lease_deadline_ms: op.maxLeaseDeadlineMs,
        worker_id: op.workerId,
      });
      if (rows.length > 0) {
        sql.adjustCount.run({ queue: op.queue, state: 'ready', delta: -rows.length });
        sql.adjustCount.run({ queue: op.queue, state: 'leased', delta: rows.length });
      }
      return { kind: 'leased', rows };
    }
    case 'ack': {
      const deleted = sql.deleteLeased.get(op.id, op.attempt);
      if (deleted !== undefined) sql.adjustCount.run({ queue: deleted.queue, state: 'leased', delta: -1 });
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
