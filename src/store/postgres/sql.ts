/**
 * How the PostgreSQL store's operations talk to the database: every statement
 * is a named prepared statement with a fixed text (tables are found through the
 * connection's search_path, set to the store's schema when it connects), sent
 * with its parameters on the unit's connection. An operation yields the promise
 * of the statement's result and is resumed with the result (src/store/op.ts):
 * the engine's code waits for the network without knowing it.
 *
 * Many rows go in one statement as arrays (`unnest($1::text[], …)`), never one
 * statement per row (design note 0100, section 1).
 */
import type { QueryResult, QueryResultRow } from 'pg';
import type { Op } from '../op.ts';

/** A prepared statement: PostgreSQL parses and plans it once per connection. */
export interface Statement {
  /** Its prepared statement's name; empty: sent unnamed, planned each time (`plannedEachTime`). */
  readonly name: string;
  readonly text: string;
  /**
   * 'array': the driver answers each row as an array of its columns in order, not an object
   * it builds key by key; for the statements of the hot path, whose rows the store maps
   * itself (`arrayStatement`).
   */
  readonly rowMode?: 'array';
}

let statements = 0;

/** Declares a statement (at module level: its name is fixed for the process). */
export function statement(text: string): Statement {
  statements++;
  return { name: `sepp_${statements}`, text };
}

/**
 * Declares a statement planned at each execution (sent unnamed, never prepared), for the set
 * statements of an ack batch (leases.ts, dependencies.ts). A prepared statement's plan is kept
 * once its first executions cost about the same as a generic plan: when those ran on a table
 * that was still small (a flow enqueued while the queue drains, before autovacuum's first
 * ANALYZE), that plan read whole tables for good (measured: 5–90 ms a statement, W5 on
 * PostgreSQL). Planning costs ~0.3–0.8 ms each, once per ack batch.
 */
export function plannedEachTime(text: string, rowMode?: 'array'): Statement {
  return rowMode === undefined ? { name: '', text } : { name: '', text, rowMode };
}

/** Declares a statement whose rows come as arrays (read them with `arrayRows`). */
export function arrayStatement(text: string): Statement {
  return { ...statement(text), rowMode: 'array' };
}

/**
 * The rows of an `arrayStatement`, each mapped by `row` from its array of columns, which is
 * then emptied. In most drains the driver's row arrays end up in V8's old generation, dead but
 * kept until the next full collection (most likely V8's pretenuring: it allocates them there
 * once it has seen them outlive a young collection). Until then each string such an array holds
 * (an id, a type, a payload's text…) survives every young collection and is promoted in turn.
 * Emptied, the array holds nothing, and its strings die young with the objects `row` made.
 * In a 20,000-job W1 drain (bench/pg-chain.ts --trace-gc) ~2 MB were promoted per young
 * collection before, ~0.25 MB after (bench/results/pg-drain-alloc-2026-12-07-s19.md).
 */
export function* arrayRows<R>(
  c: Connection,
  s: Statement,
  values: readonly unknown[],
  row: (columns: unknown[]) => R,
): Op<R[]> {
  const { rows } = (yield c.send(s, values)) as QueryResult<unknown[]>;
  const mapped = new Array<R>(rows.length);
  for (let i = 0; i < rows.length; i++) {
    const columns = rows[i] as unknown[];
    mapped[i] = row(columns);
    columns.length = 0;
  }
  return mapped;
}

/** Count changes a unit made, added to its connection's counter shard before anything reads a count. */
export interface CountDeltas {
  add(queue: string, state: string, jobs: number): void;
  /**
   * Writes what was added so far in the transaction (one statement, sent ahead of its answer:
   * counts.ts), if anything: before a count is read. The writer writes the rest at its COMMIT.
   */
  flush(): Op<void>;
  /** Queues whose limits this transaction holds the lock of (limits.ts). */
  readonly lockedQueues: Set<string>;
}

/**
 * What the writer's transaction has sent so far, for locks that must not be waited for
 * once the transaction holds others (keys.ts): statements since BEGIN, and the count when
 * the running unit started.
 */
export interface WriteTransaction {
  statements: number;
  unitStart: number;
  /**
   * Set by the writer while a benchmark traces it (writer.ts `writerTrace`): the statements whose
   * answer a unit awaited and the wall time from each one's send to its answer. Undefined
   * otherwise, so the server reads no clock for it.
   */
  waits?: { count: number; ms: number } | undefined;
}

/**
 * A unit asked for advisory locks another transaction holds, while its own transaction held
 * others: waiting could deadlock, so the writer runs the unit again first in its next
 * batch (writer.ts). Thrown before the unit sent any statement, so nothing of it ran.
 */
export class LocksBusy extends Error {
  constructor() {
    super('advisory locks held by another transaction');
  }
}

/** A connection as the operations see it. */
export interface Connection {
  send(statement: Statement, values: readonly unknown[]): Promise<QueryResult>;
  /** The writer's count deltas; a read connection has none (it never adjusts counts). */
  readonly deltas: CountDeltas | undefined;
  /** The writer's transaction; a read connection has none. */
  readonly transaction?: WriteTransaction;
  /**
   * The writer's pipelined connection only: sends a statement whose answer nobody waits for.
   * It runs before whatever is sent after it; a failure aborts the transaction, and the
   * writer then fails the batch (writer.ts checks these answers before it trusts the COMMIT).
   */
  readonly sendAhead?: (statement: Statement, values: readonly unknown[]) => void;
}

/**
 * Whether `c` is a write unit's connection. Inside a write, a read of rows the unit may
 * change locks them (`FOR UPDATE`; maintenance scans `FOR UPDATE SKIP LOCKED`): another
 * server's unit then waits, and reads what this one committed, instead of deciding from a
 * row that is about to change (a nack racing another server's lease expiry).
 */
export function writing(c: Connection): boolean {
  return c.deltas !== undefined;
}

export function* rows<R extends QueryResultRow>(
  c: Connection,
  s: Statement,
  values: readonly unknown[],
): Op<R[]> {
  const result = (yield c.send(s, values)) as QueryResult<R>;
  return result.rows;
}

export function* firstRow<R extends QueryResultRow>(
  c: Connection,
  s: Statement,
  values: readonly unknown[],
): Op<R | undefined> {
  return (yield* rows<R>(c, s, values))[0];
}

/** The first column of the first row (a statement that selects one value), or undefined. */
export function* value<T>(c: Connection, s: Statement, values: readonly unknown[]): Op<T | undefined> {
  const row = yield* firstRow<{ v: T }>(c, s, values);
  return row?.v;
}

/**
 * A statement whose answer the operation does not need (it changes rows and says nothing
 * back): sent ahead on the writer's connection (`sendAhead`), awaited elsewhere.
 */
export function* sendAhead(c: Connection, s: Statement, values: readonly unknown[]): Op<void> {
  if (c.sendAhead !== undefined) c.sendAhead(s, values);
  else yield c.send(s, values);
}

/** How many rows the statement changed. */
export function* changes(c: Connection, s: Statement, values: readonly unknown[]): Op<number> {
  const result = (yield c.send(s, values)) as QueryResult;
  return result.rowCount ?? 0;
}
