/**
 * Signals between the sepp servers sharing one PostgreSQL schema (design note
 * 0100, section 6): NOTIFY on a channel of the schema's, sent after the commit
 * it tells of, never inside a job transaction (a notifying transaction holds a
 * cluster-wide lock through its commit's WAL flush, so notifying job
 * transactions would commit one at a time). Each server keeps one connection of
 * its own outside the pool: it LISTENs, and it sends, with synchronous_commit off
 * (a lost signal is covered by the engine's poll). At most one send is in flight;
 * what the server has to say meanwhile is merged per queue and goes in the next,
 * so a burst of commits costs one NOTIFY statement. A server ignores its own
 * signals. The connection reconnects, with a backoff, when it breaks; each time
 * its LISTEN takes effect the engine is told (`listening`), since what the
 * others sent before was not heard: their commits are in the store by then.
 *
 * Cancels of leased jobs, and attempts ended by their hard timeout, go the same
 * way, so that a worker connected to another server is told: each notification
 * carries as many as fit in PostgreSQL's payload limit (8000 bytes;
 * `payloadBytes` here). At most `maxPendingNotices` of each wait to be sent;
 * beyond that (a bulk cancel of more running jobs while the listener is down)
 * the rest are not signalled, and those workers learn at their next extend or
 * settlement.
 *
 * Any role that can connect may send on the channel too: what is received is checked for
 * shape here, and the engine bounds what it costs (engine/leases/heard-ready.ts: "jobs
 * ready"; checked-notices.ts: cancels and timeouts, confirmed against the store).
 */
import { randomBytes } from 'node:crypto';
import type pg from 'pg';
import type { CancelSignal, StoreSignal, StoreSignals, TimeoutSignal } from '../signals.ts';

/** Longest wait between two attempts to connect the listener again. */
const maxBackoffMs = 30_000;
/** Cancels (and, apart, timeouts) waiting to be sent, at most. */
export const maxPendingNotices = 10_000;
/** Most bytes of one notification's payload (PostgreSQL refuses 8000 or more). */
const payloadBytes = 7000;

/** A cancel as sent: [jobId, queue, attempt, workerId, cancelledBy, cancelledAtMs]. */
type CancelTuple = [string, string, number, string | null, string | null, number];
/** A timeout as sent: [jobId, queue, attempt, workerId, timeoutAtMs]. */
type TimeoutTuple = [string, string, number, string | null, number];

const cancelTuple = (n: CancelSignal): CancelTuple => [
  n.jobId,
  n.queue,
  n.attempt,
  n.workerId,
  n.cancelledBy,
  n.cancelledAtMs,
];

const nullableText = (v: unknown): v is string | null => v === null || typeof v === 'string';

const timeoutTuple = (n: TimeoutSignal): TimeoutTuple => [
  n.jobId,
  n.queue,
  n.attempt,
  n.workerId,
  n.timeoutAtMs,
];

/** A received cancel tuple, checked (another server's, but the channel is anyone's who can connect). */
function cancelFromTuple(t: unknown): CancelSignal | undefined {
  if (!Array.isArray(t) || t.length !== 6) return undefined;
  const [jobId, queue, attempt, workerId, cancelledBy, cancelledAtMs] = t as unknown[];
  if (typeof jobId !== 'string' || typeof queue !== 'string') return undefined;
  if (!Number.isSafeInteger(attempt) || !Number.isSafeInteger(cancelledAtMs)) return undefined;
  if (!nullableText(workerId) || !nullableText(cancelledBy)) return undefined;
  return {
    jobId,
    queue,
    attempt: attempt as number,
    workerId,
    cancelledBy,
    cancelledAtMs: cancelledAtMs as number,
  };
}

/** A received timeout tuple, checked like a cancel's. */
function timeoutFromTuple(t: unknown): TimeoutSignal | undefined {
  if (!Array.isArray(t) || t.length !== 5) return undefined;
  const [jobId, queue, attempt, workerId, timeoutAtMs] = t as unknown[];
  if (typeof jobId !== 'string' || typeof queue !== 'string') return undefined;
  if (!Number.isSafeInteger(attempt) || !Number.isSafeInteger(timeoutAtMs)) return undefined;
  if (!nullableText(workerId)) return undefined;
  return { jobId, queue, attempt: attempt as number, workerId, timeoutAtMs: timeoutAtMs as number };
}

/** Tuples under `key` ("c": cancels, "t": timeouts) in payloads of at most `payloadBytes` each. */
function noticePayloads(serverId: string, key: 'c' | 't', tuples: readonly unknown[]): string[] {
  const payloads: string[] = [];
  let batch: string[] = [];
  let bytes = 0;
  const head = `{"s":"${serverId}","${key}":[`;
  const flush = () => {
    if (batch.length > 0) payloads.push(`${head}${batch.join(',')}]}`);
    batch = [];
    bytes = 0;
  };
  for (const tuple of tuples) {
    const text = JSON.stringify(tuple);
    const size = Buffer.byteLength(text);
    // A tuple that alone exceeds the limit (ids and names are bounded far below it) is not sent.
    if (head.length + size + 2 > payloadBytes) continue;
    if (head.length + bytes + size + batch.length + 2 > payloadBytes) flush();
    batch.push(text);
    bytes += size;
  }
  flush();
  return payloads;
}

export class PostgresSignals implements StoreSignals {
  private listener: (signal: StoreSignal) => void = () => {};
  private client: pg.Client | undefined;
  /** Ready jobs to signal per queue, and whether the queue has groups. */
  private pending = new Map<string, { jobs: number; grouped: boolean }>();
  private cancels: CancelTuple[] = [];
  private timeouts: TimeoutTuple[] = [];
  /** Cancels and timeouts not signalled because `maxPendingNotices` were waiting (tests, diagnostics). */
  droppedNotices = 0;
  private sending = false;
  private connecting = false;
  private closed = false;
  private backoffMs = 250;
  private retry: NodeJS.Timeout | undefined;
  /** Tells this server's signals from the others'. */
  private readonly serverId = randomBytes(8).toString('hex');
  private readonly channel: string;

  constructor(
    private readonly connect: (onError: (error: Error) => void) => Promise<pg.Client>,
    schema: string,
    readonly pollIntervalMs: number,
  ) {
    this.channel = `sepp_${schema}`;
  }

  /** Connects the listener; a failure is retried in the background (the poll covers meanwhile). */
  async start(): Promise<void> {
    if (this.closed || this.client !== undefined || this.connecting) return;
    this.connecting = true;
    let client: pg.Client | undefined;
    try {
      client = await this.connect(() => this.lost(client));
      client.on('notification', (message) => this.received(message.channel, message.payload));
      await client.query('SET synchronous_commit = off');
      await client.query(`LISTEN ${this.channel}`);
      if (this.closed) {
        await client.end().catch(() => {});
        return;
      }
      this.client = client;
      this.backoffMs = 250;
      // What the others sent before the LISTEN took effect was not heard: the engine looks at the store.
      this.listener({ kind: 'listening' });
      void this.send();
    } catch {
      this.lost(client);
    } finally {
      this.connecting = false;
    }
  }

  /** Whether the listener is connected now. */
  get listening(): boolean {
    return this.client !== undefined;
  }

  listen(listener: (signal: StoreSignal) => void): void {
    this.listener = listener;
    // Connected before this listener came: it missed the same, so it is told too.
    if (this.client !== undefined) listener({ kind: 'listening' });
  }

  readyJobs(queue: string, jobs: number, grouped = false): void {
    if (this.closed) return;
    const before = this.pending.get(queue);
    this.pending.set(queue, {
      jobs: (before?.jobs ?? 0) + jobs,
      grouped: grouped || before?.grouped === true,
    });
    void this.send();
  }

  cancelRequested(notices: readonly CancelSignal[]): void {
    if (this.closed) return;
    for (const notice of notices) {
      if (this.cancels.length >= maxPendingNotices) this.droppedNotices++;
      else this.cancels.push(cancelTuple(notice));
    }
    void this.send();
  }

  attemptsTimedOut(notices: readonly TimeoutSignal[]): void {
    if (this.closed) return;
    for (const notice of notices) {
      if (this.timeouts.length >= maxPendingNotices) this.droppedNotices++;
      else this.timeouts.push(timeoutTuple(notice));
    }
    void this.send();
  }

  private get idle(): boolean {
    return this.pending.size === 0 && this.cancels.length === 0 && this.timeouts.length === 0;
  }

  async close(): Promise<void> {
    this.closed = true;
    clearTimeout(this.retry);
    const client = this.client;
    this.client = undefined;
    await client?.end().catch(() => {});
  }

  private async send(): Promise<void> {
    const client = this.client;
    if (this.sending || client === undefined || this.idle) return;
    this.sending = true;
    const batch = this.pending;
    this.pending = new Map();
    const payloads = [...batch].map(([queue, { jobs, grouped }]) =>
      JSON.stringify({ s: this.serverId, q: queue, n: jobs, ...(grouped ? { g: 1 } : {}) }),
    );
    payloads.push(
      ...noticePayloads(this.serverId, 'c', this.cancels),
      ...noticePayloads(this.serverId, 't', this.timeouts),
    );
    this.cancels = [];
    this.timeouts = [];
    try {
      await client.query('SELECT pg_notify($1, p) FROM unnest($2::text[]) AS p', [this.channel, payloads]);
    } catch {
      // Lost: the other servers' poll finds the jobs.
      this.lost(client);
    } finally {
      this.sending = false;
    }
    if (!this.idle) void this.send();
  }

  private received(channel: string, payload: string | undefined): void {
    if (channel !== this.channel || payload === undefined) return;
    let signal: unknown;
    try {
      signal = JSON.parse(payload);
    } catch {
      return;
    }
    if (typeof signal !== 'object' || signal === null) return;
    const { s, q, n, c, t, g } = signal as {
      s?: unknown;
      q?: unknown;
      n?: unknown;
      c?: unknown;
      t?: unknown;
      g?: unknown;
    };
    if (s === this.serverId) return;
    if (Array.isArray(c)) {
      const notices = c.map(cancelFromTuple).filter((notice) => notice !== undefined);
      if (notices.length > 0) this.listener({ kind: 'cancel', notices });
      return;
    }
    if (Array.isArray(t)) {
      const notices = t.map(timeoutFromTuple).filter((notice) => notice !== undefined);
      if (notices.length > 0) this.listener({ kind: 'timeout', notices });
      return;
    }
    if (typeof q !== 'string' || typeof n !== 'number' || !(n > 0)) return;
    this.listener({ kind: 'ready', queue: q, jobs: n, grouped: g === 1 });
  }

  private lost(client: pg.Client | undefined): void {
    if (client !== undefined && this.client === client) this.client = undefined;
    client?.end().catch(() => {});
    if (this.closed || this.retry !== undefined) return;
    const delayMs = this.backoffMs;
    this.backoffMs = Math.min(maxBackoffMs, this.backoffMs * 2);
    this.retry = setTimeout(() => {
      this.retry = undefined;
      void this.start();
    }, delayMs);
    this.retry.unref();
  }
}
