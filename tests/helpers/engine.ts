/** Opens a real engine on a real temporary SQLite store, with a fake clock. */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { FakeClock } from '../../src/engine/clock.ts';
import { Engine, type EngineDeps } from '../../src/engine/engine.ts';
import { SeppError, type SeppErrorCode } from '../../src/engine/errors.ts';
import { defaultEngineOptions, type EngineOptions, type QueueSettings } from '../../src/engine/settings.ts';
import type { EnqueueRequest } from '../../src/engine/types.ts';
import type { GroupCommitOptions } from '../../src/store/sqlite/group-commit.ts';
import type { Db, Durability } from '../../src/store/sqlite/open.ts';
import { openSqliteStore, type SqliteStore } from '../../src/store/sqlite/sqlite-store.ts';

export interface TestEngine {
  engine: Engine;
  clock: FakeClock;
  dataDir: string;
  /** The engine's store (the SQLite store of `dataDir`). */
  store: SqliteStore;
  /** The store's connection, for checks the public API does not offer (raw rows, pragmas). */
  db: Db;
  /** Closes the engine and opens the same data directory again (a restart). */
  reopen(): Promise<TestEngine>;
  /** Closes the engine (if open) and removes the data directory. */
  dispose(): void;
}

export interface TestEngineOptions {
  options?: Partial<EngineOptions>;
  deps?: Partial<EngineDeps>;
  durability?: Durability;
  /** Options of the store's group committer (maxBatchOperations: 1 for one transaction per write). */
  store?: GroupCommitOptions;
  dataDir?: string;
  clock?: FakeClock;
}

/** The helper's jitter source: a fixed linear congruential sequence in [0, 1), restarted per engine. */
export function helperRandom(): () => number {
  let state = 0;
  return () => {
    state = (state * 9301 + 49297) % 233280;
    return state / 233280;
  };
}

export async function openTestEngine(opts: TestEngineOptions = {}): Promise<TestEngine> {
  const dataDir = opts.dataDir ?? mkdtempSync(join(tmpdir(), 'sepp-test-'));
  const clock = opts.clock ?? new FakeClock();
  const store = openSqliteStore(dataDir, { durability: opts.durability ?? 'full', ...opts.store });
  const options = { ...defaultEngineOptions(), ...opts.options };
  const engine = await Engine.open(store, options, {
    clock,
    // Deterministic jitter: a fixed sequence in [0, 1).
    random: helperRandom(),
    ...opts.deps,
  });
  let closed = false;
  const close = () => {
    if (!closed) engine.close();
    closed = true;
  };
  return {
    engine,
    clock,
    dataDir,
    store,
    db: store.db,
    async reopen() {
      close();
      return openTestEngine({ ...opts, dataDir, clock });
    },
    dispose() {
      close();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

/**
 * Runs `body` against a fresh engine, then checks that the per-queue counters
 * still match the rows, and removes the data directory whatever happened.
 * `body` may replace the engine (a restart) by returning the new one.
 */
export async function withEngine(
  opts: TestEngineOptions,
  body: (t: TestEngine) => Promise<TestEngine | undefined> | Promise<void>,
): Promise<void> {
  let t = await openTestEngine(opts);
  try {
    const replaced = await body(t);
    if (replaced) t = replaced;
    if (!t.db.open) t = await t.reopen();
    assert.deepEqual(await t.engine.counterMismatches(), [], 'per-queue counters must match the rows');
  } finally {
    t.dispose();
  }
}

/** Engine options with per-queue overrides on top of the defaults. */
export function withQueues(
  queues: Record<string, Partial<QueueSettings>>,
  extra: Partial<EngineOptions> = {},
): Partial<EngineOptions> {
  return { queues, ...extra };
}

/**
 * Resolves once every write submitted before it has committed: the group
 * committer runs operations in submission order, so an empty ack batch is a
 * barrier. Used instead of sleeps to know that a reserve is now waiting.
 */
export async function barrier(engine: Engine): Promise<void> {
  await engine.ackBatch([]);
}

/**
 * Asserts that `promise` rejects with a SeppError of `code`; returns it. It takes
 * the promise itself, so an engine call that throws synchronously instead of
 * rejecting fails the test.
 */
export async function expectCode(promise: Promise<unknown>, code: SeppErrorCode): Promise<SeppError> {
  let thrown: unknown;
  try {
    await promise;
  } catch (error) {
    thrown = error;
  }
  return checkSeppError(thrown, code);
}

/** Asserts that `run` throws a SeppError of `code` (synchronous calls such as subscribeEvents). */
export function expectThrowsCode(run: () => unknown, code: SeppErrorCode): SeppError {
  let thrown: unknown;
  try {
    run();
  } catch (error) {
    thrown = error;
  }
  return checkSeppError(thrown, code);
}

function checkSeppError(thrown: unknown, code: SeppErrorCode): SeppError {
  assert.ok(thrown instanceof SeppError, `expected a SeppError ${code}, got ${String(thrown)}`);
  assert.equal(thrown.code, code, `expected code ${code}: ${thrown.message}`);
  return thrown;
}

export const bytes = (text: string): Uint8Array => new TextEncoder().encode(text);

/** A minimal valid job for `queue`. */
export function job(queue: string, extra: Partial<EnqueueRequest> = {}): EnqueueRequest {
  return { queue, type: 'test', payload: bytes('x'), ...extra };
}

/** Rows of a table, for checks that nothing was stored. */
export function rowCount(db: Db, table: 'jobs' | 'idempotency_keys' | 'queues'): number {
  return db.prepare<[], number>(`SELECT count(*) FROM ${table}`).pluck().get() ?? 0;
}

/**
 * Waits, one write barrier at a time, until `condition` holds (at most `maxBarriers`
 * barriers): for effects that follow a commit by a few promise hops, such as
 * a woken reserve registering again. Fails instead of hanging.
 */
export async function until(
  engine: Engine,
  condition: () => boolean | Promise<boolean>,
  maxBarriers = 20,
): Promise<void> {
  for (let i = 0; i < maxBarriers; i++) {
    if (await condition()) return;
    await barrier(engine);
  }
  assert.ok(await condition(), `condition not reached after ${maxBarriers} write barriers`);
}
