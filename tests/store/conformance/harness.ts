/**
 * What a conformance case works with: a store on the case's own data, the
 * engine opened on it where a case needs the engine's semantics (lease order
 * across groups, limits, schedules, events), and restarts. After every case
 * the runner checks that the counts agree with the rows.
 */
import assert from 'node:assert/strict';
import { FakeClock } from '../../../src/engine/clock.ts';
import { Engine, type EngineDeps } from '../../../src/engine/engine.ts';
import { defaultEngineOptions, type EngineOptions } from '../../../src/engine/settings.ts';
import type { Op } from '../../../src/store/op.ts';
import type { NewJobRow } from '../../../src/store/rows.ts';
import type { Store, StoreTx } from '../../../src/store/store.ts';
import type { BackendData, StoreBackend } from './backend.ts';

export interface StoreCase {
  readonly name: string;
  run(h: Harness): Promise<void>;
  readonly timeoutMs?: number;
}

export interface EngineOpening {
  options?: Partial<EngineOptions>;
  deps?: Partial<EngineDeps>;
  clock?: FakeClock;
}

export class Harness {
  private readonly data: BackendData;
  private current: Store | undefined;
  private opened: Engine | undefined;

  constructor(backend: StoreBackend) {
    this.data = backend.create();
  }

  /** The store on this case's data (opened on first use; after a close, opened again). */
  get store(): Store {
    this.current ??= this.data.open();
    return this.current;
  }

  /** Closes what is open (the engine, which closes its store) and opens the data again: a restart. */
  async restart(): Promise<Store> {
    await this.closeAll();
    return this.store;
  }

  /** The engine over a store of this case's data, with a fake clock (closing an engine open before). */
  async engine(opening: EngineOpening = {}): Promise<{ engine: Engine; clock: FakeClock }> {
    await this.closeAll();
    const clock = opening.clock ?? new FakeClock();
    this.opened = await Engine.open(
      this.store,
      { ...defaultEngineOptions(), ...opening.options },
      { clock, random: () => 0.5, ...opening.deps },
    );
    return { engine: this.opened, clock };
  }

  /** Runs a write unit on the store. */
  write<T>(unit: (tx: StoreTx) => Op<T>): Promise<T> {
    return this.store.write(unit);
  }

  /** After the case: the counts agree with the rows, and deleted jobs left no workflow rows, on the data as stored. */
  async checkCounts(): Promise<void> {
    const store = await this.restart();
    assert.deepEqual(await store.read((view) => view.counts.mismatches()), [], 'counts = rows');
    const leftovers = await store.read(function* (view) {
      return view.dependencies === undefined ? [] : yield* view.dependencies.leftovers();
    });
    assert.deepEqual(leftovers, [], 'no workflow rows of deleted jobs');
  }

  async dispose(): Promise<void> {
    await this.closeAll();
    await this.data.dispose();
  }

  private async closeAll(): Promise<void> {
    if (this.opened !== undefined) await this.opened.close();
    else if (this.current !== undefined) await this.current.close();
    this.opened = undefined;
    this.current = undefined;
  }
}

let jobNumber = 0;

/** A job row to store directly (store-level cases), ready now in `queue` unless told otherwise. */
export function newJob(queue: string, fields: Partial<NewJobRow> = {}): NewJobRow {
  jobNumber++;
  return {
    id: `job-${String(jobNumber).padStart(8, '0')}`,
    queue,
    type: 't',
    state: 'ready',
    priority: 0,
    payload: new TextEncoder().encode(`p${jobNumber}`),
    content_type: 'application/octet-stream',
    metadata_json: null,
    traceparent: null,
    tracestate: null,
    idempotency_key: null,
    max_attempts: 3,
    lease_ms: null,
    enqueued_at_ms: 1000,
    run_at_ms: 1000,
    expires_at_ms: null,
    group_key: null,
    timeout_ms: null,
    ...fields,
  };
}

/**
 * Stores jobs the way the engine does in one unit: their queue (created if new), the rows,
 * and the counts of each queue and state, so that counts = rows holds.
 */
export function* storeJobs(tx: StoreTx, jobs: readonly NewJobRow[], nowMs = 1000): Op<void> {
  for (const queue of new Set(jobs.map((j) => j.queue))) {
    yield* tx.queues.create({ name: queue, createdAtMs: nowMs, settingsJson: '{}' });
  }
  yield* tx.jobs.insert(jobs);
  const perState = new Map<string, { queue: string; state: string; jobs: number }>();
  for (const job of jobs) {
    const key = `${job.queue}\0${job.state}`;
    const entry = perState.get(key) ?? { queue: job.queue, state: job.state, jobs: 0 };
    entry.jobs++;
    perState.set(key, entry);
  }
  for (const { queue, state, jobs: n } of perState.values()) {
    yield* tx.counts.adjust({ queue, from: null, to: state, jobs: n });
  }
}

/** The lease parameters of a store-level lease at `nowMs` (30 s leases, 10 min at most). */
export function leaseAt(nowMs: number, workerId: string | null = 'w', timeoutMs: number | null = null) {
  return { nowMs, leaseDeadlineMs: nowMs + 30_000, maxLeaseDeadlineMs: nowMs + 600_000, workerId, timeoutMs };
}
