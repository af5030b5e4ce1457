/**
 * Read units on connections of their own, beside the writer: each runs in a
 * read-only REPEATABLE READ transaction, so a read of several statements is one
 * consistent view of what is committed. At most `size` connections, opened when
 * needed and kept; a read that finds them all busy waits for one (FIFO), unless
 * `maxWaiting` reads wait already: then it is refused at once (ReadsRefused), so a
 * flood of reads (admin listings, GetJob) holds a bounded queue, not an unbounded
 * one, and its callers hear "retry shortly" instead of waiting behind each other.
 * A connection that breaks, in a read or while idle, is dropped and the next read opens
 * another.
 */
import type pg from 'pg';
import type { Op } from '../op.ts';
import { resume } from '../op.ts';
import { ReadsRefused, StorageFailure } from '../store.ts';
import { command, connectionOf, storageFailure } from './connect.ts';
import type { Connection } from './sql.ts';

export interface ReadPoolOptions {
  /** Read connections at most. */
  readonly size: number;
  /** Reads that may wait for a connection at once; one more is refused (store.max_waiting_reads). */
  readonly maxWaiting: number;
  /** Told of each refusal, with how many reads had been refused so far (the log's count). */
  readonly onRefused?: (refusedTotal: number) => void;
}

interface Reader<V> {
  readonly client: pg.Client;
  readonly view: V;
  broken: boolean;
}

/** `V`: what a read unit is given over a connection (the store's reads, and whatever else the store adds). */
export class ReadPool<V> {
  private readonly idle: Reader<V>[] = [];
  private readonly waiting: ((reader: Reader<V> | Error) => void)[] = [];
  private open = 0;
  private closed = false;
  /** Reads refused since the pool was made. */
  refusedTotal = 0;

  constructor(
    private readonly options: ReadPoolOptions,
    private readonly connect: (onError: (error: Error) => void) => Promise<pg.Client>,
    private readonly capabilities: (c: Connection) => V,
  ) {}

  /**
   * Runs `unit` in a read-only transaction; a storage failure rejects as a StorageFailure.
   * `writes`: in a transaction that may write (READ COMMITTED), for a small write of the
   * store's own outside the writer's batches (a server's limits, server-limits.ts).
   */
  async read<T>(unit: (view: V) => Op<T>, writes = false): Promise<T> {
    const reader = await this.acquire();
    try {
      await command(reader.client, writes ? 'BEGIN' : 'BEGIN ISOLATION LEVEL REPEATABLE READ, READ ONLY');
      const value = await resume(unit(reader.view));
      await command(reader.client, 'COMMIT');
      return value;
    } catch (error) {
      if (error instanceof StorageFailure) reader.broken = true;
      else {
        await command(reader.client, 'ROLLBACK').catch(() => {
          reader.broken = true;
        });
      }
      throw error;
    } finally {
      this.release(reader);
    }
  }

  async close(): Promise<void> {
    this.closed = true;
    for (const wake of this.waiting.splice(0)) wake(new Error('the store is closed'));
    const readers = this.idle.splice(0);
    this.open -= readers.length;
    await Promise.all(readers.map((reader) => reader.client.end().catch(() => {})));
  }

  private async acquire(): Promise<Reader<V>> {
    if (this.closed) throw new Error('the store is closed');
    for (let idle = this.idle.pop(); idle !== undefined; idle = this.idle.pop()) {
      if (!idle.broken) return idle;
      // Its connection broke while idle (PostgreSQL stopped or restarted, the network dropped
      // it): the driver refuses every query on it ("not queryable"), which says nothing of why.
      // A new connection is opened instead: it is answered once PostgreSQL is back, and in an
      // outage its failure names the outage (connection refused, the database shutting down).
      this.drop(idle);
    }
    if (this.open < this.options.size) {
      this.open++;
      try {
        const reader = { broken: false } as Reader<V>;
        const client = await this.connect(() => {
          reader.broken = true;
        });
        return Object.assign(reader, { client, view: this.capabilities(connectionOf(client, undefined)) });
      } catch (error) {
        this.open--;
        throw storageFailure(error);
      }
    }
    if (this.waiting.length >= this.options.maxWaiting) throw this.refuse();
    const next = await new Promise<Reader<V> | Error>((resolve) => this.waiting.push(resolve));
    if (next instanceof Error) throw next;
    return next;
  }

  /** Reads waiting for a connection now. */
  get waitingReads(): number {
    return this.waiting.length;
  }

  private refuse(): ReadsRefused {
    this.refusedTotal++;
    this.options.onRefused?.(this.refusedTotal);
    return new ReadsRefused(
      `every read connection of this server is busy and ${this.waiting.length} reads wait for one already ` +
        `(store.max_waiting_reads, store.pool_size); nothing was read, retry shortly`,
    );
  }

  private drop(reader: Reader<V>): void {
    this.open--;
    reader.client.end().catch(() => {});
  }

  private release(reader: Reader<V>): void {
    if (reader.broken || this.closed) {
      this.drop(reader);
      // A waiting read opens a connection of its own.
      const wake = this.waiting.shift();
      if (wake !== undefined && !this.closed) {
        this.acquire().then(wake, (error: unknown) =>
          wake(error instanceof Error ? error : new Error(String(error))),
        );
      }
      return;
    }
    const wake = this.waiting.shift();
    if (wake !== undefined) wake(reader);
    else this.idle.push(reader);
  }
}
