/**
 * `@sepp-queue/client/pg`: enqueue a job inside your own PostgreSQL transaction,
 * when sepp keeps its jobs in the same database (docs/postgres.md, "Enqueue in
 * your own transaction"). The job exists if and only if your transaction
 * commits; the sepp servers are woken by the commit.
 *
 * It calls the SQL function `sepp.enqueue` over the client you pass: a `pg`
 * Client or PoolClient (or anything with the same `query`), typed by its shape,
 * so this package does not depend on `pg`. A refusal is PostgreSQL's error as
 * the driver throws it: its `code` is the SQLSTATE (22023 invalid input, 54000
 * too large, 42704 no such queue, 53400 queue full, 0A000 not supported) and its
 * `detail` is sepp's rejection reason (`invalid_job`, `payload_too_large`, …).
 */

/** What `enqueueInTransaction` needs of a driver's client: `pg`'s `query(text, values)`. */
export interface PgQueryable {
  query(text: string, values?: unknown[]): Promise<{ rows: unknown[] }>;
}

/** A job to enqueue in a transaction: the options of `enqueue`, without dependencies. */
export interface TransactionalJob {
  /** Queue to put the job on; it must exist (declared in the config, or used before). */
  queue: string;
  /** Job type: which handler runs it. */
  type: string;
  /** The job's input as bytes or text (text is sent as UTF-8). Give this or `json`. */
  payload?: Uint8Array | string;
  /** The job's input as a value to send as JSON (content type `application/json`). */
  json?: unknown;
  /** Default: `application/json` with `json`, `text/plain; charset=utf-8` for text, else none. */
  contentType?: string;
  /** 0 to 9; higher runs first. Default 0. */
  priority?: number;
  /** When the job may run (past times mean now). Give this or `delayMs`, not both. */
  runAt?: Date | number;
  /** Run the job this many ms after the call. Give this or `runAt`, not both. */
  delayMs?: number;
  /** Deliveries before the job goes dead; default the queue's. */
  maxAttempts?: number;
  /** The job's lease, in ms (1 s to 7 days); default the reserve's. */
  leaseMs?: number;
  /** Hard execution timeout of each attempt, in ms (1 ms to 30 days); default the queue's `defaultTimeoutMs`. */
  executionTimeoutMs?: number;
  /** Deduplication key, as over gRPC: a duplicate returns the original job's id. */
  idempotencyKey?: string;
  /** With `idempotencyKey`: a duplicate exactly while a job holding the key is unfinished. */
  uniqueWhileActive?: boolean;
  /** Do not start the job after this long from the call, in ms. Give this or `expiresAt`. */
  ttlMs?: number;
  /** Do not start the job at or after this time. Give this or `ttlMs`. */
  expiresAt?: Date | number;
  /** String pairs stored with the job and handed to the worker. */
  metadata?: Readonly<Record<string, string>>;
  /** W3C trace context to store with the job. */
  traceparent?: string;
  tracestate?: string;
  /** The job's group (leases take turns across groups). */
  group?: string;
}

/** An enqueued job (it exists once the transaction commits). */
export interface TransactionalEnqueued {
  /** The job's id (the original job's when deduplicated). */
  id: string;
  /** True when the idempotency key was taken and nothing new was stored. */
  deduplicated: boolean;
}

export interface InTransactionOptions {
  /** sepp's PostgreSQL schema (`store.schema`); default `sepp`. */
  schema?: string;
}

const schemaRe = /^[a-z_][a-z0-9_]{0,62}$/;
const textType = 'text/plain; charset=utf-8';

const millis = (t: Date | number) => (t instanceof Date ? t.getTime() : t);

/** The options object `sepp.enqueue` takes (docs/postgres.md). */
function sqlOptions(job: TransactionalJob, contentType: string | undefined): Record<string, unknown> {
  const options: Record<string, unknown> = {
    content_type: contentType,
    priority: job.priority,
    run_at_ms: job.runAt === undefined ? undefined : millis(job.runAt),
    delay_ms: job.delayMs,
    max_attempts: job.maxAttempts,
    lease_ms: job.leaseMs,
    timeout_ms: job.executionTimeoutMs,
    idempotency_key: job.idempotencyKey,
    unique_while_active: job.uniqueWhileActive,
    ttl_ms: job.ttlMs,
    expires_at_ms: job.expiresAt === undefined ? undefined : millis(job.expiresAt),
    metadata: job.metadata,
    traceparent: job.traceparent,
    tracestate: job.tracestate,
    group: job.group,
  };
  for (const key of Object.keys(options)) if (options[key] === undefined) delete options[key];
  return options;
}

/**
 * Enqueues `job` in the transaction open on `client` (after your `BEGIN`, before
 * your `COMMIT`). Outside a transaction the job is committed at once, as any
 * single statement is.
 */
export async function enqueueInTransaction(
  client: PgQueryable,
  job: TransactionalJob,
  options: InTransactionOptions = {},
): Promise<TransactionalEnqueued> {
  const schema = options.schema ?? 'sepp';
  if (!schemaRe.test(schema)) throw new TypeError(`schema "${schema}" is not a plain identifier`);
  if (job.payload !== undefined && job.json !== undefined) {
    throw new TypeError('give payload or json, not both');
  }
  let payload: Uint8Array;
  let contentType = job.contentType;
  if (job.json !== undefined) {
    payload = Buffer.from(JSON.stringify(job.json), 'utf8');
    contentType ??= 'application/json';
  } else if (typeof job.payload === 'string') {
    payload = Buffer.from(job.payload, 'utf8');
    contentType ??= textType;
  } else {
    payload = job.payload ?? new Uint8Array(0);
  }
  const result = await client.query(
    `SELECT job_id, deduplicated FROM ${schema}.enqueue($1, $2, $3::bytea, $4::jsonb)`,
    [
      job.queue,
      job.type,
      Buffer.from(payload.buffer, payload.byteOffset, payload.byteLength),
      JSON.stringify(sqlOptions(job, contentType)),
    ],
  );
  const row = result.rows[0] as { job_id: string; deduplicated: boolean } | undefined;
  if (row === undefined) throw new Error(`${schema}.enqueue returned no row`);
  return { id: row.job_id, deduplicated: row.deduplicated };
}
