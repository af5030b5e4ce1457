import type { Job, Logger, Runner, RunnerOptions } from 'graphile-worker';
import pg from 'pg';
import { Handoff } from './handoff.ts';
import type { Lease, LeaseBatch } from './types.ts';

/**
 * graphile-worker's own runner (`run()`, its worker pool with a local queue) adapted to the
 * harness's pull interface, the way a graphile-worker user drains a queue: one runner per
 * queue, whose task handler hands each job to a waiting `reserve()` and resolves when the
 * bench acks.
 *
 * What that costs graphile-worker, and why: once a task handler resolves, graphile-worker
 * *schedules* the job's completion (a DELETE, batched with others when
 * `completeJobBatchDelay` ≥ 0) and moves on without waiting for it: a job whose
 * completion is lost runs again once its lock expires (4 hours). No public event says
 * when that DELETE has committed (`job:complete` fires before it is sent), so this pool
 * watches the DELETE statements on the pg pool it gives the runner and resolves an ack
 * when the DELETE naming its job has returned, i.e. committed with fsync. That keeps every
 * system's ack durable, and makes graphile-worker's ack latency the handler's return plus
 * the batch delay plus the DELETE's commit. The slot frees when the handler returns, so
 * the next job starts while the DELETE is in flight, as in graphile-worker itself.
 *
 * The runner starts on the first reserve, when every bench worker has joined, with
 * `concurrency` = bench workers × the jobs each reserves at once (1, or W3's batch), so a
 * W3 reserve of 100 can hold 100 jobs. One runner serves every bench worker of its queue,
 * so a job it fetched ahead can go to any of them; at the end its local queue gives the
 * jobs nobody took back to the table.
 */

interface Delivery {
  readonly job: Job;
  readonly finish: (error?: Error) => void;
}

interface PendingAck {
  resolve(): void;
  reject(error: Error): void;
}

/** The job ids of a graphile-worker completion (`delete from …_private_jobs …`), else undefined. */
function completedJobIds(config: unknown): string[] | undefined {
  if (typeof config !== 'object' || config === null || !('text' in config) || !('values' in config))
    return undefined;
  const { text, values } = config;
  if (typeof text !== 'string' || !Array.isArray(values)) return undefined;
  if (!/^\s*(with j as \(\s*)?delete from \S+\._private_jobs/i.test(text)) return undefined;
  const first: unknown = values[0];
  if (typeof first === 'string') return [first];
  if (Array.isArray(first)) return first.map(String);
  return undefined;
}

export type RunFunction = (options: RunnerOptions) => Promise<Runner>;

export interface GraphilePoolOptions {
  readonly run: RunFunction;
  /** The runner's own pg pool (its connections are watched for completions). */
  readonly pgPool: pg.PoolConfig;
  readonly logger: Logger;
  readonly preset: NonNullable<RunnerOptions['preset']>;
  readonly report: (message: string) => void;
  /** Called once with the runner's first job fetch (`get_job…`), e.g. to EXPLAIN it. */
  readonly onFirstFetch?: (text: string, values: readonly unknown[]) => void;
}

export class GraphileWorkerPool {
  private readonly deliveries = new Handoff<Delivery>();
  private readonly acks = new Map<string, PendingAck>();
  private runner: Promise<Runner> | undefined;
  private members = 0;
  private closing = false;
  private readonly pgPool: pg.Pool;

  constructor(
    private readonly queue: string,
    private readonly options: GraphilePoolOptions,
  ) {
    this.pgPool = new pg.Pool(options.pgPool);
    this.pgPool.on('connect', (client) => this.watch(client));
    this.pgPool.on('error', (error) => options.report(`graphile-worker pool: ${error.message}`));
  }

  /** Every connection the runner gets resolves acks as the DELETEs naming their jobs return. */
  private watch(client: pg.PoolClient): void {
    const original = client.query;
    const acks = this.acks;
    const pool = this;
    const watched = function (this: pg.PoolClient, ...args: unknown[]): unknown {
      const result: unknown = Reflect.apply(original, this, args);
      pool.noticeFetch(args[0]);
      const ids = completedJobIds(args[0]);
      if (ids !== undefined && result instanceof Promise) {
        result.then(
          () => {
            for (const id of ids) acks.get(id)?.resolve();
          },
          (error: unknown) => {
            const failure = error instanceof Error ? error : new Error(String(error));
            for (const id of ids) acks.get(id)?.reject(failure);
          },
        );
      }
      return result;
    };
    Object.defineProperty(client, 'query', { value: watched, configurable: true, writable: true });
  }

  private fetchSeen = false;

  private noticeFetch(config: unknown): void {
    const onFirstFetch = this.options.onFirstFetch;
    if (this.fetchSeen || onFirstFetch === undefined) return;
    if (typeof config !== 'object' || config === null || !('name' in config)) return;
    const { name, text, values } = config as { name?: unknown; text?: unknown; values?: unknown };
    if (typeof name !== 'string' || !name.startsWith('get_job') || typeof text !== 'string') return;
    this.fetchSeen = true;
    onFirstFetch(text, Array.isArray(values) ? values : []);
  }

  join(): void {
    if (this.runner !== undefined)
      throw new Error('graphile-worker pool: a bench worker joined after draining began');
    this.members++;
  }

  /** Returns true when the last bench worker left and the pool should be closed. */
  leave(): boolean {
    this.members--;
    return this.members === 0;
  }

  private start(jobsPerReserve: number): Promise<Runner> {
    const concurrency = this.members * jobsPerReserve;
    return this.options.run({
      pgPool: this.pgPool,
      concurrency,
      noHandleSignals: true,
      logger: this.options.logger,
      preset: this.options.preset,
      taskList: {
        [this.queue]: (_payload, helpers) =>
          new Promise<void>((resolve, reject) => {
            const delivery: Delivery = {
              job: helpers.job,
              finish: (error) => (error === undefined ? resolve() : reject(error)),
            };
            if (this.closing) delivery.finish(new Error('benchmark phase ended'));
            else this.deliveries.offer(delivery);
          }),
      },
    });
  }

  private ack(deliveries: readonly Delivery[]): Promise<void> {
    const done = deliveries.map(
      (d) =>
        new Promise<void>((resolve, reject) => {
          this.acks.set(d.job.id, {
            resolve: () => {
              this.acks.delete(d.job.id);
              resolve();
            },
            reject: (error) => {
              this.acks.delete(d.job.id);
              reject(error);
            },
          });
        }),
    );
    for (const d of deliveries) d.finish();
    return Promise.all(done).then(() => {});
  }

  async reserve(waitMs: number): Promise<Lease | null> {
    this.runner ??= this.start(1);
    await this.runner;
    const delivery = await this.deliveries.take(waitMs);
    if (delivery === null) return null;
    return { ack: () => this.ack([delivery]) };
  }

  async reserveBatch(max: number, waitMs: number): Promise<LeaseBatch | null> {
    this.runner ??= this.start(max);
    await this.runner;
    const first = await this.deliveries.take(waitMs);
    if (first === null) return null;
    // Jobs the runner hands over in the same turn belong to the same fetch.
    await new Promise((resolve) => setImmediate(resolve));
    const batch = [first, ...this.deliveries.takeReady(max - 1)];
    return { count: batch.length, ack: () => this.ack(batch) };
  }

  async close(): Promise<void> {
    const runner = this.runner;
    this.runner = undefined;
    if (runner === undefined) {
      await this.pgPool.end();
      return;
    }
    this.closing = true;
    // Jobs handed over for reserves that never came (a phase that hit its time limit) fail
    // their attempt at once instead of holding the runner's graceful stop.
    for (const d of this.deliveries.drain()) d.finish(new Error('benchmark phase ended'));
    try {
      await (await runner).stop();
    } catch (error) {
      this.options.report(`graphile-worker stop: ${error instanceof Error ? error.message : String(error)}`);
    }
    for (const pending of this.acks.values()) {
      pending.reject(new Error('graphile-worker stopped before the completion was confirmed'));
    }
    this.acks.clear();
    await this.pgPool.end();
  }
}
