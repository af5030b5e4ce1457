/**
 * The two writers bench/writer-thread.ts compares, behind one interface: `submit`
 * resolves once the operation's batch is durable (its COMMIT, with synchronous=FULL,
 * returned), in both.
 *
 * - `same`: the server's design today. The group committer (src/store/sqlite/group-commit.ts)
 *   runs on the main thread: batches form on setImmediate, and the SQL, the WAL write
 *   and the fsync block the main thread.
 * - `thread`: the main thread forms batches the same way (on setImmediate) and posts
 *   them to the writer thread (lib/writer-thread-worker.ts), which runs the same
 *   committer; at most `maxInFlight` batches are posted and not yet answered (the next
 *   one fills meanwhile), and the writer runs them one after the other.
 */
import { Worker } from 'node:worker_threads';
import { runAtOnce } from '../../src/store/op.ts';
import { GroupCommitter, plainWriteHooks } from '../../src/store/sqlite/group-commit.ts';
import { openDataDir } from '../../src/store/sqlite/open.ts';
import { sqliteCapabilities } from '../../src/store/sqlite/sqlite-store.ts';
import type { StoreTx } from '../../src/store/store.ts';
import { packOps, unpackResults } from './writer-codec.ts';
import {
  createQueue,
  type FromWriter,
  type Op,
  type OpResult,
  runOp,
  type ToWriter,
  type WriterStats,
} from './writer-ops.ts';

/** `packed`: as `thread`, batches and answers in writer-codec.ts's binary form, transferred. */
export type WriterMode = 'same' | 'thread' | 'packed';

export interface Writer {
  submit(op: Op): Promise<OpResult>;
  stats(): Promise<WriterStats>;
  close(): Promise<void>;
}

export interface WriterOptions {
  /** Most operations in one batch (both modes); the rest wait for the next. */
  maxBatchOps: number;
  /** `thread`: most batches posted to the writer and not yet answered. */
  maxInFlight: number;
}

export async function openWriter(mode: WriterMode, dataDir: string, options: WriterOptions): Promise<Writer> {
  return mode === 'same'
    ? new SameThreadWriter(dataDir, options)
    : ThreadWriter.start(dataDir, options, mode === 'packed');
}

class SameThreadWriter implements Writer {
  private readonly db;
  private readonly committer;
  private commits = 0;
  private operations = 0;
  private batchMs = 0;

  constructor(dataDir: string, options: WriterOptions) {
    this.db = openDataDir(dataDir, { durability: 'full' });
    const caps = sqliteCapabilities(this.db);
    runAtOnce(createQueue(caps.queues, Date.now()));
    this.committer = new GroupCommitter<StoreTx>(this.db, caps, { maxBatchOperations: options.maxBatchOps });
    this.committer.hooks = {
      ...plainWriteHooks,
      closed: () => new Error('the writer is closed'),
      afterCommit: (stats) => {
        this.commits++;
        this.operations += stats.operations;
        this.batchMs += stats.durationMs;
      },
    };
  }

  submit(op: Op): Promise<OpResult> {
    return this.committer.submit((tx) => runOp(tx, op));
  }

  async stats(): Promise<WriterStats> {
    // No thread of its own: the SQL's CPU is the main thread's (measured by the caller).
    return {
      commits: this.commits,
      operations: this.operations,
      batchMs: this.batchMs,
      writerUserUs: 0,
      writerSystemUs: 0,
    };
  }

  async close(): Promise<void> {
    this.committer.close();
    this.db.close();
  }
}

interface Pending {
  op: Op;
  resolve: (result: OpResult) => void;
  reject: (error: Error) => void;
}

class ThreadWriter implements Writer {
  private queue: Pending[] = [];
  private readonly inFlight = new Map<number, Pending[]>();
  private nextId = 1;
  private scheduled = false;
  private statsWaiter: ((stats: WriterStats) => void) | undefined;
  private closeWaiter: (() => void) | undefined;

  private constructor(
    private readonly worker: Worker,
    private readonly options: WriterOptions,
    private readonly packed: boolean,
  ) {
    worker.on('message', (message: FromWriter) => this.onMessage(message));
  }

  static async start(dataDir: string, options: WriterOptions, packed: boolean): Promise<ThreadWriter> {
    // Node 20 does not apply tsx's loader (the parent's --import) to a worker thread:
    // the worker registers it itself, then loads the TypeScript entry point.
    const entry = new URL('./writer-thread-worker.ts', import.meta.url).href;
    const boot = `import('tsx/esm/api').then((tsx) => { tsx.register(); return import(${JSON.stringify(entry)}); })`;
    const worker = new Worker(boot, { eval: true, workerData: { dataDir } });
    await new Promise<void>((resolve, reject) => {
      worker.once('error', reject);
      worker.once('message', (message: FromWriter) => {
        worker.off('error', reject);
        if (message.type === 'ready') resolve();
        else reject(new Error(`the writer thread said ${message.type} before ready`));
      });
    });
    worker.on('error', (error) => {
      console.error('writer thread failed:', error);
      process.exitCode = 1;
    });
    return new ThreadWriter(worker, options, packed);
  }

  submit(op: Op): Promise<OpResult> {
    return new Promise<OpResult>((resolve, reject) => {
      this.queue.push({ op, resolve, reject });
      this.schedule();
    });
  }

  stats(): Promise<WriterStats> {
    return new Promise((resolve) => {
      this.statsWaiter = resolve;
      this.post({ type: 'stats' });
    });
  }

  async close(): Promise<void> {
    await new Promise<void>((resolve) => {
      this.closeWaiter = resolve;
      this.post({ type: 'close' });
    });
    await this.worker.terminate();
  }

  private post(message: ToWriter): void {
    this.worker.postMessage(message);
  }

  /** Like the group committer: what arrived by the next turn of the event loop is one batch. */
  private schedule(): void {
    if (this.scheduled || this.inFlight.size >= this.options.maxInFlight || this.queue.length === 0) return;
    this.scheduled = true;
    setImmediate(() => {
      this.scheduled = false;
      this.send();
    });
  }

  private send(): void {
    if (this.inFlight.size >= this.options.maxInFlight || this.queue.length === 0) return;
    const batch = this.queue.splice(0, this.options.maxBatchOps);
    const id = this.nextId++;
    this.inFlight.set(id, batch);
    const ops = batch.map((p) => p.op);
    if (this.packed) {
      const buffer = packOps(ops);
      this.worker.postMessage({ type: 'packed', id, buffer } satisfies ToWriter, [buffer]);
    } else {
      this.post({ type: 'batch', id, ops });
    }
    this.schedule();
  }

  private onMessage(message: FromWriter): void {
    switch (message.type) {
      case 'done':
      case 'packed-done': {
        const batch = this.take(message.id);
        const results = message.type === 'done' ? message.results : unpackResults(message.buffer);
        results.forEach((result, i) => {
          const pending = batch[i]!;
          if (result.ok) pending.resolve(result.value);
          else pending.reject(new Error(result.message));
        });
        this.schedule();
        return;
      }
      case 'failed': {
        for (const pending of this.take(message.id)) pending.reject(new Error(message.message));
        this.schedule();
        return;
      }
      case 'stats':
        this.statsWaiter?.(message.stats);
        this.statsWaiter = undefined;
        return;
      case 'closed':
        this.closeWaiter?.();
        return;
      case 'ready':
        return;
    }
  }

  private take(id: number): Pending[] {
    const batch = this.inFlight.get(id);
    if (batch === undefined)
      throw new Error(`the writer thread answered batch ${id}, which is not in flight`);
    this.inFlight.delete(id);
    return batch;
  }
}
